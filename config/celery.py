"""The Celery app. All CELERY_* settings live in config/settings.py, each with its reason."""

from __future__ import annotations

import os

from celery import Celery, signals

from config import redis_transport
from config.flower import refuse_an_open_flower

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
redis_transport.install()  # workers survive Redis restarts (see the module)
refuse_an_open_flower()  # `celery -A config flower` only: strong credentials or no Flower

app = Celery("blogpublish")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@signals.task_prerun.connect
@signals.task_postrun.connect
def _recycle_database_connections(**kwargs) -> None:
    """What Django does around each request, around each task: a connection that
    broke (a database restart) or outlived CONN_MAX_AGE is closed and the next query
    opens a fresh one; a healthy one is kept (CELERY_DB_REUSE_MAX in settings stops
    Celery's fixup from closing every connection before and after each task)."""
    from django.db import close_old_connections

    close_old_connections()
