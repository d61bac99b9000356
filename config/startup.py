"""A bad setting stops a program with its message alone, not with fifty lines of
traceback that end in it (config/settings.py raises ImproperlyConfigured naming the
setting and what it must be)."""

from __future__ import annotations

import sys

# gunicorn halts (and exits) when a worker exits with this status ("Worker failed to
# boot"); with any other it starts a new worker, which fails again, for ever.
WORKER_BOOT_ERROR = 3


def settings_or_exit(program: str, *, status: int = 1) -> None:
    """Load the settings now; a bad one prints `program: <message>` and exits."""
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured

    try:
        settings.INSTALLED_APPS  # noqa: B018 (the attribute loads the settings module)
    except ImproperlyConfigured as exc:
        print(f"{program}: {exc}", file=sys.stderr)
        raise SystemExit(status) from None


def manage_py_options(argv: list[str]) -> None:
    """What Django's own command line does first: `--settings` and `--pythonpath`
    applied (ManagementUtility.execute), so that the settings loaded are those asked
    for."""
    from django.core.management.base import CommandError, CommandParser, handle_default_options

    parser = CommandParser(prog="manage.py", add_help=False, allow_abbrev=False)
    parser.add_argument("--settings")
    parser.add_argument("--pythonpath")
    parser.add_argument("args", nargs="*")
    try:
        options, _ = parser.parse_known_args(argv[2:])
        handle_default_options(options)
    except CommandError:
        pass  # Django's own parse says what is wrong
