"""`make run`: everything a newcomer needs, on local defaults, in one command.

Sets DEBUG=1 (unless DEBUG is set: production is the default everywhere else), checks
that a broker answers, migrates, makes sure the local admin exists with a generated
password, and generates Flower's credentials (both kept in var/local-credentials.json,
printed every time), then starts web, worker, beat and Flower from the Procfile with
honcho. Ctrl-C stops them all.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CREDENTIALS = ROOT / "var" / "local-credentials.json"


def broker_answers(url: str) -> str | None:
    """None if the broker answers, else why not."""
    from kombu import Connection

    try:
        with Connection(url, connect_timeout=2, transport_options={"socket_timeout": 2}) as conn:
            conn.ensure_connection(max_retries=1, interval_start=0, timeout=3)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def flower_basic_auth(creds: dict) -> str:
    return f"{creds['flower_user']}:{creds['flower_password']}"


def credentials() -> dict:
    """The kept credentials; new ones (24 random characters each) where none are kept,
    or where the kept Flower password is one Flower would now refuse to start with."""
    from config.checks import flower_basic_auth_problems

    kept = json.loads(CREDENTIALS.read_text()) if CREDENTIALS.exists() else {}
    creds = {
        "admin_user": "admin",
        "admin_password": secrets.token_urlsafe(18),
        "flower_user": "flower",
        "flower_password": secrets.token_urlsafe(18),
    }
    if kept and flower_basic_auth_problems(flower_basic_auth(kept)):
        kept = {k: v for k, v in kept.items() if not k.startswith("flower_")}
    if kept.keys() >= creds.keys():
        return kept
    creds |= kept
    CREDENTIALS.parent.mkdir(mode=0o700, exist_ok=True)  # var/: the database is in it too
    CREDENTIALS.touch(mode=0o600)
    CREDENTIALS.write_text(json.dumps(creds, indent=2))
    return creds


def ensure_admin(username: str, password: str) -> None:
    from django.contrib.auth import get_user_model

    user, _ = get_user_model().objects.get_or_create(
        username=username, defaults={"is_staff": True, "is_superuser": True}
    )
    if not user.check_password(password) or not user.is_superuser:
        user.is_staff = user.is_superuser = True
        user.set_password(password)
        user.save()


def main() -> int:
    os.chdir(ROOT)
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    # Local work: tracebacks in the browser, http cookies, mail to the console. Every
    # other way of starting blogpublish runs with DEBUG off unless told otherwise.
    os.environ.setdefault("DEBUG", "1")
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    problem = broker_answers(settings.CELERY_BROKER_URL)
    if problem:
        print(
            f"No broker answers at {settings.CELERY_BROKER_URL} ({problem}).\n"
            "blogpublish needs Redis (or RabbitMQ) for its workers. Start one, then run "
            "`make run` again:\n"
            "  redis-server --daemonize yes            (Debian/Ubuntu: apt-get install "
            "redis-server)\n"
            "  docker run -d -p 6379:6379 redis:7\n"
            "or point CELERY_BROKER_URL at one you have.",
            file=sys.stderr,
        )
        return 1

    call_command("migrate", interactive=False, verbosity=0)
    creds = credentials()
    ensure_admin(creds["admin_user"], creds["admin_password"])
    if isinstance(settings.SITE_ROOT, Path):  # a folder (the default), not s3://…
        settings.SITE_ROOT.mkdir(parents=True, exist_ok=True)
    settings.STATIC_ROOT.mkdir(parents=True, exist_ok=True)
    (ROOT / "var" / "flower").mkdir(mode=0o700, exist_ok=True)  # Flower's --persistent db

    print(
        "\nblogpublish is starting (Ctrl-C stops everything):\n"
        "  Blog:   http://127.0.0.1:8000/\n"
        "  Admin:  http://127.0.0.1:8000/admin/\n"
        "  Flower: http://127.0.0.1:5555/\n"
        f"Admin user: {creds['admin_user']}\n"
        f"Admin password: {creds['admin_password']}\n"
        f"Flower user: {creds['flower_user']}\n"
        f"Flower password: {creds['flower_password']}\n"
        f"(kept in {CREDENTIALS.relative_to(ROOT)})\n",
        flush=True,
    )
    bin_dir = str(Path(sys.executable).parent)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "FLOWER_BASIC_AUTH": flower_basic_auth(creds),
        "PYTHONUNBUFFERED": "1",
    }
    honcho = shutil.which("honcho", path=env["PATH"]) or "honcho"
    os.execvpe(honcho, [honcho, "-f", "Procfile", "start"], env)
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
