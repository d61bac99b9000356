"""`make run`: everything a newcomer needs, on local defaults, in one command.

Sets DEBUG=1 (unless DEBUG is set: production is the default everywhere else), checks
that its ports are free and that a broker and the database answer (one line each if
not, not a traceback), migrates, makes the local admin with a generated password when
there is none (a password changed since is left alone), and generates Flower's
credentials (both kept in var/local-credentials.json, printed every time), then
starts web, worker (and the webhook's own), beat and Flower from the Procfile with
honcho. Ctrl-C stops them all.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
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

    kept = kept_credentials()
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
    write_atomically(CREDENTIALS, json.dumps(creds, indent=2))
    return creds


def kept_credentials() -> dict:
    """What var/local-credentials.json keeps; nothing (so new ones are made) when it is
    missing, or not the JSON object this script writes (an empty file: a write cut
    short by an earlier version), which is said on stderr."""
    try:
        kept = json.loads(CREDENTIALS.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:  # JSONDecodeError, UnicodeDecodeError
        kept = exc
    if isinstance(kept, dict) and all(isinstance(v, str) for v in kept.values()):
        return kept
    why = f"{type(kept).__name__}: {kept}" if isinstance(kept, Exception) else "not an object"
    shown = CREDENTIALS.relative_to(ROOT) if CREDENTIALS.is_relative_to(ROOT) else CREDENTIALS
    print(
        f"{shown} is unreadable ({why}): new credentials are "
        "written in its place. A local admin made before keeps its password: "
        "`DEBUG=1 .venv/bin/python manage.py changepassword admin` sets another.",
        file=sys.stderr,
    )
    return {}


def write_atomically(path: Path, text: str) -> None:
    """`text` as `path`, readable by its owner alone, whole or not at all: a temporary
    file beside it, flushed, then renamed over it (touch-then-write left an empty file
    when the write failed, and the next `make run` a JSONDecodeError)."""
    path.parent.mkdir(mode=0o700, exist_ok=True)  # var/: the database is in it too
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()


def ensure_admin(username: str, password: str) -> bool:
    """The local admin made with the kept password when there is none, and given back
    the rights to sign in to the admin (active, staff, superuser) while it has that
    password: it is `make run`'s own. One whose password is another is left as it is:
    a password changed in the admin since stays changed; `make run` restarted every time
    must not set it back. Whether the kept password is the admin's."""
    from django.contrib.auth import get_user_model

    user, made = get_user_model().objects.get_or_create(
        username=username, defaults={"is_staff": True, "is_superuser": True}
    )
    if made:
        user.set_password(password)
        user.save(update_fields=["password"])
        return True
    if not user.check_password(password):
        return False
    if not (user.is_active and user.is_staff and user.is_superuser):
        user.is_active = user.is_staff = user.is_superuser = True
        user.save(update_fields=["is_active", "is_staff", "is_superuser"])
    return True


def main() -> int:
    os.chdir(ROOT)
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    # Local work: tracebacks in the browser, http cookies, mail to the console. Every
    # other way of starting blogpublish runs with DEBUG off unless told otherwise.
    os.environ.setdefault("DEBUG", "1")
    # The ports (WEB_PORT, FLOWER_PORT: the Procfile reads them), and the blog's address
    # on the web one unless SITE_URL says otherwise (the feeds' and pages' links).
    web_port = port_from_env("WEB_PORT", 8000)
    flower_port = port_from_env("FLOWER_PORT", 5555)
    if web_port is None or flower_port is None:
        return 1
    taken = ports_taken({"WEB_PORT": web_port, "FLOWER_PORT": flower_port})
    if taken:
        print(
            f"{taken}. Give this `make run` free ports: `WEB_PORT=8080 FLOWER_PORT=5566 "
            "make run`; a second `make run` on this machine also needs a broker db of its "
            "own: CELERY_BROKER_URL=redis://127.0.0.1:6379/1.",
            file=sys.stderr,
        )
        return 1
    os.environ.setdefault("SITE_URL", f"http://127.0.0.1:{web_port}")
    import django
    from django.core.exceptions import ImproperlyConfigured

    try:
        django.setup()
    except ImproperlyConfigured as exc:  # a setting's own message, not its traceback
        print(f"blogpublish cannot start: {exc}", file=sys.stderr)
        return 1
    from django.conf import settings
    from django.core.management import call_command
    from kombu.utils.url import maybe_sanitize_url

    problem = broker_answers(settings.CELERY_BROKER_URL)
    if problem:
        print(
            f"No broker answers at {maybe_sanitize_url(settings.CELERY_BROKER_URL)} ({problem}).\n"
            "blogpublish needs Redis (or RabbitMQ) for its workers. Start one, then run "
            "`make run` again:\n"
            "  redis-server --daemonize yes            (Debian/Ubuntu: apt-get install "
            "redis-server)\n"
            "  docker run -d -p 6379:6379 redis:7\n"
            "or point CELERY_BROKER_URL at one you have.",
            file=sys.stderr,
        )
        return 1

    from work.db import database_unreachable

    problem = database_unreachable()
    if problem:  # not call_command's traceback (72 lines for a PostgreSQL not running)
        print(
            f"No database answers at {problem}. Start it or create the database, "
            "or point DATABASE_URL at one (unset: SQLite in var/).",
            file=sys.stderr,
        )
        return 1
    call_command("migrate", interactive=False, verbosity=0)
    creds = credentials()
    kept_password = ensure_admin(creds["admin_user"], creds["admin_password"])
    if isinstance(settings.SITE_ROOT, Path):  # a folder (the default), not s3://…
        settings.SITE_ROOT.mkdir(parents=True, exist_ok=True)
    settings.STATIC_ROOT.mkdir(parents=True, exist_ok=True)
    (ROOT / "var" / "flower").mkdir(mode=0o700, exist_ok=True)  # Flower's --persistent db

    print(
        "\nblogpublish is starting (Ctrl-C stops everything):\n"
        f"  Blog:   http://127.0.0.1:{web_port}/\n"
        f"  Admin:  http://127.0.0.1:{web_port}/admin/\n"
        f"  Flower: http://127.0.0.1:{flower_port}/\n"
        f"Admin user: {creds['admin_user']}\n"
        + (
            f"Admin password: {creds['admin_password']}\n"
            if kept_password
            else "Admin password: not the one kept here (changed since; `DEBUG=1 "
            f".venv/bin/python manage.py changepassword {creds['admin_user']}` sets another)\n"
        )
        + f"Flower user: {creds['flower_user']}\n"
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
        "WEB_PORT": str(web_port),
        "FLOWER_PORT": str(flower_port),
    }
    return run_until_stopped(honcho_command(env["PATH"]), env)


def honcho_command(path: str, procfile: str = "Procfile") -> list[str]:
    """honcho starting the Procfile's processes with this process's environment alone:
    not the `.env` honcho reads by default, which is docker compose's (.env.example:
    production's defaults, DEBUG off). Read, it overrode what this script sets (DEBUG,
    SITE_URL, Flower's password), and the processes ran on other settings than the
    migrate above (a review's: `cp .env.example .env` stopped `make run`)."""
    honcho = shutil.which("honcho", path=path) or "honcho"
    return [honcho, "-f", procfile, "-e", os.devnull, "start"]


def run_until_stopped(command: list[str], env: dict[str, str]) -> int:
    """honcho in a session of its own, so that only this process hears the terminal:
    Ctrl-C (SIGINT) is passed on as it is, and a closed terminal (SIGHUP) or a SIGTERM
    as SIGTERM; honcho stops web, worker, beat and Flower on either, and this process
    waits for it. honcho in the terminal's group ended on SIGHUP and left them all
    running, each in a session of its own (a review's finding)."""
    child = subprocess.Popen(command, env=env, start_new_session=True)

    def pass_on(signum: int, frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signal.SIGINT if signum == signal.SIGINT else signal.SIGTERM)

    for signum in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(signum, pass_on)
    while True:
        try:
            return child.wait()
        except InterruptedError:  # pragma: no cover - PEP 475 retries wait() itself
            continue


def ports_taken(ports: dict[str, int]) -> str | None:
    """None if each port is free on 127.0.0.1 (where runserver and Flower listen), else
    which are taken: a second `make run` printed its banner and then failed in honcho's
    interleaved output, its Flower's error lost among the first one's."""
    if len(set(ports.values())) < len(ports):
        return "WEB_PORT and FLOWER_PORT are the same port ({})".format(
            ", ".join(f"{name}={port}" for name, port in ports.items())
        )
    taken = []
    for name, port in ports.items():
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            # As the servers bind: a port in TIME_WAIT is free to them.
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(("127.0.0.1", port))
            except OSError as exc:
                taken.append(f"{name}={port} is taken ({exc.strerror or exc})")
    return "; ".join(taken) or None


def port_from_env(name: str, default: int) -> int | None:
    raw = os.environ.get(name, "").strip() or str(default)
    # isdigit() alone takes "²" (a digit to Unicode, not to int()): a ValueError traceback.
    if raw.isascii() and raw.isdigit() and 1 <= int(raw) <= 65535:
        return int(raw)
    print(f"{name}={raw!r} is not a port (1 to 65535).", file=sys.stderr)
    return None


if __name__ == "__main__":
    sys.exit(main())
