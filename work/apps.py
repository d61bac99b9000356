from __future__ import annotations

from django.apps import AppConfig


class WorkConfig(AppConfig):
    """What every job shares: the fenced lease, scheduled runs and what they cost.

    Its label stays "clock", the app it was split from: its tables (`clock_jobrun`,
    `clock_joblease`, `clock_digest`), its migrations and the admin's URLs keep their
    names, so a deploy moves no table."""

    name = "work"
    label = "clock"
    verbose_name = "Scheduled jobs"
    default_auto_field = "django.db.models.BigAutoField"
