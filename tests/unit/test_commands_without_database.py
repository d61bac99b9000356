"""A database that cannot be reached ends each command with one line naming it
(work/commands.py), not psycopg's traceback (a review's finding). Port 1 of loopback is
closed: a real unreachable server, nothing mocked."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.processes import ROOT

UNREACHABLE = "postgres://nobody@127.0.0.1:1/blog"


@pytest.mark.parametrize(
    "command",
    [
        ["publish_pending"],
        ["publishing_status"],
        ["export_articles", "{tmp}/export"],
        ["import_articles", "{tmp}/import"],
        ["rerender_site", "--processes", "1"],
        ["restore_check", "--repair"],
        ["api_token", "ops"],
        ["send_digest"],
    ],
)
def test_a_command_without_its_database_says_so_in_one_line(command, tmp_path):
    (tmp_path / "import").mkdir()
    (tmp_path / "import" / "a.md").write_text("---\ntitle: A\n---\nbody\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PUBLISH_", "DB_"))}
    result = subprocess.run(
        [sys.executable, "manage.py", *(part.format(tmp=tmp_path) for part in command)],
        cwd=ROOT,
        env={
            **env,
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DEBUG": "1",
            "SITE_ROOT": str(tmp_path / "site"),
            "DATABASE_URL": UNREACHABLE,
            "DIGEST_RECIPIENTS": "ops@example.com",  # send_digest's, checked before
        },
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode == 1
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert (
        "CommandError: cannot use the PostgreSQL database 'blog' on 127.0.0.1:1: "
        in result.stderr.splitlines()[-1]
    ), result.stderr[-3000:]
