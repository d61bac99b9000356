"""The Celery app. All CELERY_* settings live in config/settings.py, each with its reason."""

from __future__ import annotations

import os
import sys

import click
from celery import Celery

from config import redis_transport
from config.checks import flower_basic_auth_problems, flower_command_line_problems

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
redis_transport.install()  # workers survive Redis restarts (see the module)

app = Celery("blogpublish")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


def refuse_an_open_flower() -> None:
    """Stop `celery -A config flower` unless FLOWER_BASIC_AUTH holds strong credentials.

    Flower reads FLOWER_BASIC_AUTH itself, and with it empty or unset serves its UI and
    its task API (which runs tasks) to anyone who reaches the port (issue 8). `celery -A
    config …` loads this module inside Celery's command group, after Click has chosen the
    sub-command, so the check runs in the Flower process, and only there: web, worker and
    beat do not need Flower's credentials.
    """
    context = click.get_current_context(silent=True)
    if context is None or context.invoked_subcommand != "flower":
        return
    from django.conf import settings

    after = sys.argv[sys.argv.index("flower") + 1 :] if "flower" in sys.argv else []
    problems = flower_basic_auth_problems(settings.FLOWER_BASIC_AUTH)
    problems += flower_command_line_problems(after)
    if problems:
        raise SystemExit("Flower does not start:\n  - " + "\n  - ".join(problems))


refuse_an_open_flower()
