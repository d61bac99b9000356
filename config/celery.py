"""The Celery app. All CELERY_* settings live in config/settings.py, each with its reason."""

from __future__ import annotations

import os

from celery import Celery

from config import redis_transport
from config.flower import refuse_an_open_flower

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
redis_transport.install()  # workers survive Redis restarts (see the module)
refuse_an_open_flower()  # `celery -A config flower` only: strong credentials or no Flower

app = Celery("blogpublish")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
