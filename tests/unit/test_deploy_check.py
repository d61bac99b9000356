"""`manage.py check --deploy` is clean with the production settings docs/operations.md
documents, read from the document itself, so the two cannot drift apart."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys

from tests.support.processes import ROOT


def documented_production_env() -> dict[str, str]:
    text = (ROOT / "docs" / "operations.md").read_text()
    block = text.split("## Production settings", 1)[1].split("```sh\n", 1)[1].split("\n```")[0]
    env = dict(line.split("=", 1) for line in block.splitlines() if line.strip())
    env["SECRET_KEY"] = secrets.token_urlsafe(50)  # the block shows how to make one
    return env


def test_the_documented_block_sets_what_check_deploy_asks_for():
    env = documented_production_env()

    assert env["DEBUG"] == "0"
    for name in ("SECURE_SSL_REDIRECT", "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE"):
        assert env[name] == "1"
    assert int(env["SECURE_HSTS_SECONDS"]) >= 31536000
    assert env["SECURE_PROXY_SSL_HEADER"] == "X-Forwarded-Proto"
    assert env["SITE_URL"].startswith("https://")


def test_check_deploy_is_clean_with_the_documented_production_settings():
    inherited = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SECURE_", "SESSION_", "CSRF_")) and k not in {"DEBUG", "SECRET_KEY"}
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env={**inherited, "DJANGO_SETTINGS_MODULE": "config.settings"}
        | documented_production_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_check_deploy_warns_without_them():
    """The test above would prove nothing if check --deploy never warned here."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SECURE_", "DEBUG"))}
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env={**env, "DJANGO_SETTINGS_MODULE": "config.settings"},
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode != 0
    assert "security.W004" in result.stderr and "security.W008" in result.stderr


def test_check_deploy_warns_without_site_url():
    """Without it every feed, sitemap and webhook names make run's local address."""
    env = documented_production_env()
    del env["SITE_URL"]
    inherited = {k: v for k, v in os.environ.items() if k != "SITE_URL"}
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env={**inherited, "DJANGO_SETTINGS_MODULE": "config.settings"} | env,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode != 0
    assert "blogpublish.W002" in result.stderr and "SITE_URL is not set" in result.stderr
