"""`make run` (scripts/run.py): the processes it starts get its environment."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_script():
    spec = importlib.util.spec_from_file_location("make_run", ROOT / "scripts" / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_dot_env_file_of_docker_compose_is_not_read_by_the_processes(tmp_path):
    """`cp .env.example .env` (docker compose's file, production's defaults) overrode
    what `make run` sets, DEBUG among them, and stopped it (a review's)."""
    (tmp_path / ".env").write_text('DEBUG=0\nDIGEST_SCHEDULE="0 7 * * *"\n')
    (tmp_path / "Procfile").write_text("shown: env\n")
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "DEBUG": "1", "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}

    command = run_script().honcho_command(env["PATH"])
    out = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    ).stdout

    assert "| DEBUG=1" in out, out
    assert "DIGEST_SCHEDULE" not in out


def test_a_bad_setting_stops_it_with_its_message_not_a_traceback():
    env = {**os.environ, "CELERY_BROKER_URL": "redis//no-scheme"}
    env.pop("DJANGO_SETTINGS_MODULE", None)

    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "run.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode == 1
    assert "blogpublish cannot start: CELERY_BROKER_URL='redis//no-scheme'" in done.stderr
    assert "Traceback" not in done.stderr


def test_an_empty_variable_is_its_default_as_an_unset_one_is():
    """`CELERY_BROKER_URL=` (.env.example: empty means the default) stopped every process."""
    env = {**os.environ, "CELERY_BROKER_URL": "", "SITE_TITLE": " ", "DEBUG": "1"}
    env["DJANGO_SETTINGS_MODULE"] = "config.settings"
    code = (
        "import django; django.setup(); from django.conf import settings; "
        "print(settings.CELERY_BROKER_URL, settings.SITE_TITLE)"
    )

    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )

    assert done.stdout.split() == ["redis://127.0.0.1:6379/0", "blogpublish"], done.stderr


@pytest.mark.django_db
def test_the_admin_is_made_once_and_a_password_changed_since_is_kept():
    """`make run` made the local admin with the kept password, and set that password
    back at every start: a password changed in the admin was lost on the next run."""
    from django.contrib.auth import get_user_model

    ensure_admin = run_script().ensure_admin
    assert ensure_admin("admin", "kept-password-1") is True
    admin = get_user_model().objects.get(username="admin")
    assert admin.is_superuser and admin.check_password("kept-password-1")

    admin.set_password("mine-since-then")
    admin.save()
    assert ensure_admin("admin", "kept-password-1") is False
    admin.refresh_from_db()
    assert admin.check_password("mine-since-then")
    assert ensure_admin("admin", "mine-since-then") is True

    admin.is_active = admin.is_staff = False  # its rights taken: the kept password is ours
    admin.save()
    assert ensure_admin("admin", "mine-since-then") is True
    admin.refresh_from_db()
    assert admin.is_active and admin.is_staff and admin.is_superuser


@pytest.mark.parametrize("raw", ["²", "٨٠٠٠", "0", "65536", "80a"])
def test_a_port_that_is_not_one_is_refused_with_its_name(raw, monkeypatch, capsys):
    # "²".isdigit() is True, and int("²") a ValueError's traceback (a review's finding)
    monkeypatch.setenv("WEB_PORT", raw)

    assert run_script().port_from_env("WEB_PORT", 8000) is None
    assert f"WEB_PORT={raw!r} is not a port (1 to 65535)." in capsys.readouterr().err


def test_a_port_is_read():
    assert run_script().port_from_env("BLOGPUBLISH_UNSET_PORT", 8000) == 8000
