from __future__ import annotations

from django.apps import AppConfig


class ClockConfig(AppConfig):
    """The clock's jobs: the daily digest, and what every scheduled run cost."""

    name = "clock"
    verbose_name = "Scheduled jobs"
    default_auto_field = "django.db.models.BigAutoField"
