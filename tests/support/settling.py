"""Waiting for the pipeline to be quiet: no pending row, nothing queued or running."""

from __future__ import annotations

from django.conf import settings

from publishing.models import Article, ArticleStatus
from tests.support.waiting import wait_for


def queue_is_drained() -> bool:
    from config.celery import app

    with app.connection_for_write() as conn:
        waiting = conn.default_channel.client.llen(settings.CELERY_TASK_DEFAULT_QUEUE)
    active = app.control.inspect(timeout=1.0).active() or {}
    return waiting == 0 and all(not tasks for tasks in active.values())


def wait_settled(timeout: float = 90.0) -> None:
    """Every article published or dead, and every message (publishes, unpublishes and
    the refreshes they run) consumed and finished."""
    wait_for(
        lambda: (
            not Article.objects.filter(status=ArticleStatus.PENDING).exists() and queue_is_drained()
        ),
        timeout=timeout,
        what="the pipeline to settle",
    )
