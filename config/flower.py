"""Flower's start-up check: no Flower without strong credentials (issue 8).

Flower reads FLOWER_BASIC_AUTH itself, and with it empty or unset serves its UI and
its task API (which runs tasks) to anyone who reaches the port. `celery -A config …`
imports config.celery inside Celery's command group, after Click has chosen the
sub-command, so config.celery calls refuse_an_open_flower() there: the check runs in
the Flower process, and only there (web, worker and beat do not need Flower's
credentials).
"""

from __future__ import annotations

import sys

import click

from config.checks import flower_basic_auth_problems, flower_command_line_problems


def refuse_an_open_flower() -> None:
    """Exit with the problems when this process is `celery … flower` and
    FLOWER_BASIC_AUTH (read in config/settings.py) or its command line fails the checks."""
    context = click.get_current_context(silent=True)
    if context is None or context.invoked_subcommand != "flower":
        return
    from django.conf import settings

    after = sys.argv[sys.argv.index("flower") + 1 :] if "flower" in sys.argv else []
    problems = flower_basic_auth_problems(settings.FLOWER_BASIC_AUTH)
    problems += flower_command_line_problems(after)
    if problems:
        raise SystemExit("Flower does not start:\n  - " + "\n  - ".join(problems))
