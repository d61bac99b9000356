"""`make run` (scripts/run.py): the processes it starts get its environment."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.processes import free_port
from work.db import without_password

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


def run_main(**env_vars: str) -> subprocess.CompletedProcess:
    """scripts/run.py in a process of its own, on free ports unless told otherwise."""
    env = {
        **os.environ,
        "WEB_PORT": str(free_port()),
        "FLOWER_PORT": str(free_port()),
        **env_vars,
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)
    return subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "run.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    "command", [["scripts/run.py"], ["manage.py", "migrate", "--noinput"]], ids=["run", "migrate"]
)
def test_a_database_that_does_not_answer_is_one_line_naming_database_url(command):
    """A PostgreSQL not running (or a database not created) was a 72-line traceback from
    the migrations' loader (a review's finding); the password stays out of it."""
    port = free_port()  # nothing listens there
    url = f"postgres://blog:s3cret@127.0.0.1:{port}/blogpublish"
    env = {**os.environ, "DEBUG": "1", "DATABASE_URL": url, "WEB_PORT": str(free_port())}
    env["FLOWER_PORT"] = str(free_port())
    env.pop("DJANGO_SETTINGS_MODULE", None)

    done = subprocess.run(
        [sys.executable, *command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )

    assert done.returncode == 1
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert f"DATABASE_URL=postgres://blog:***@127.0.0.1:{port}/blogpublish: " in done.stderr
    assert "Connection refused" in done.stderr
    assert "s3cret" not in done.stderr


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgres://blog:s3cret@db:5432/blog", "postgres://blog:***@db:5432/blog"),
        (
            "postgres://blog@db:5432/blog?password=s3cret&sslmode=require",
            "postgres://blog@db:5432/blog?password=***&sslmode=require",
        ),
        ("postgres://db/blog?PASSWORD=s3cret", "postgres://db/blog?PASSWORD=***"),
        ("postgres://blog@db/blog", "postgres://blog@db/blog"),
    ],
)
def test_a_database_url_is_shown_without_its_password(url, shown):
    """The password in the query (libpq's ?password=, which the settings take too) was
    printed whole (a review of the mend)."""
    assert without_password(url) == shown


def test_a_port_taken_is_named_before_anything_starts():
    """A second `make run` printed its banner, then its web and Flower failed among the
    first one's output (a review's finding). Its database does not answer here either:
    without the check the run would stop at that instead, never start anything."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run_main(
            FLOWER_PORT=str(port), DATABASE_URL=f"postgres://x@127.0.0.1:{free_port()}/x"
        )

    assert done.returncode == 1
    assert f"FLOWER_PORT={port} is taken" in done.stderr
    assert "WEB_PORT" not in done.stderr.split(".")[0]  # the free one is not named
    assert "CELERY_BROKER_URL=redis://127.0.0.1:6379/1" in done.stderr
    assert "blogpublish is starting" not in done.stdout


def test_the_same_port_twice_is_refused():
    assert "the same port" in run_script().ports_taken({"WEB_PORT": 8123, "FLOWER_PORT": 8123})


@pytest.fixture
def script(tmp_path, monkeypatch):
    module = run_script()
    monkeypatch.setattr(module, "CREDENTIALS", tmp_path / "var" / "local-credentials.json")
    return module


@pytest.mark.parametrize("kept", ["", '{"admin_user": "adm', "[]", "\xff"])
def test_an_unreadable_credentials_file_is_written_again(script, kept, capsys):
    """An empty file (a write cut short) was a JSONDecodeError's traceback on every
    later `make run` (a review's finding)."""
    script.CREDENTIALS.parent.mkdir()
    script.CREDENTIALS.write_text(kept, encoding="latin-1")

    creds = script.credentials()

    assert json.loads(script.CREDENTIALS.read_text()) == creds
    assert set(creds) == {"admin_user", "admin_password", "flower_user", "flower_password"}
    assert "is unreadable" in capsys.readouterr().err


def test_the_credentials_are_written_whole_or_not_at_all(tmp_path):
    """touch, then write_text: a write that failed (a full disk) left an empty or half
    file, and every later `make run` a JSONDecodeError (a review's finding). The disk is
    full here by RLIMIT_FSIZE, in a process of its own."""
    creds = tmp_path / "var" / "local-credentials.json"
    code = f"""
import importlib.util, json, resource, signal, sys
from pathlib import Path
spec = importlib.util.spec_from_file_location("make_run", {str(ROOT / "scripts" / "run.py")!r})
script = importlib.util.module_from_spec(spec)
spec.loader.exec_module(script)
script.CREDENTIALS = Path({str(creds)!r})
kept = script.credentials()
kept["flower_password"] = "short"  # one Flower refuses: written again
script.CREDENTIALS.write_text(json.dumps(kept))
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (40, 40))
try:
    script.credentials()
except OSError as exc:
    print("failed:", exc)
"""
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )

    assert "failed: [Errno 27] File too large" in done.stdout, done.stdout + done.stderr
    assert json.loads(creds.read_text())["flower_password"] == "short"  # as it was
    assert [p.name for p in creds.parent.iterdir()] == ["local-credentials.json"]
    assert stat.S_IMODE(creds.stat().st_mode) == 0o600
