"""The Celery app. All CELERY_* settings live in config/settings.py, each with its reason."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("blogpublish")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
