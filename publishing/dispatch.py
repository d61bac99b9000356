"""Handing work to the broker, best effort.

A dispatch only speeds things up: the pending row is the work, so a broker that is down
costs a log line, never a failed save. The bound on the time it may take is
PUBLISH_DISPATCH_TRANSPORT_OPTIONS and the publish retry policy (config/settings.py).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime

from django.conf import settings
from django.utils import timezone

logger = logging.getLogger(__name__)


@contextmanager
def dispatch_connection() -> Iterator[object]:
    """A broker connection of its own with short socket timeouts, so a broker that is
    down or silent costs the caller about a second (workers keep longer ones)."""
    from config.celery import app

    with app.connection_for_write(
        transport_options=settings.PUBLISH_DISPATCH_TRANSPORT_OPTIONS
    ) as connection:
        yield connection


def send(task, args: tuple, *, eta: datetime | None = None, connection=None) -> None:
    if connection is not None:
        task.apply_async(args, eta=eta, connection=connection)
        return
    with dispatch_connection() as own:
        task.apply_async(args, eta=eta, connection=own)


def dispatch_publish(article_id: int, *, eta: datetime | None = None, connection=None) -> bool:
    """Send `publish_article` (on `connection` when a caller sends many); False, with a
    warning in the log, when the broker could not be reached."""
    from publishing.tasks import publish_article  # the task module imports the services

    try:
        send(publish_article, (article_id,), eta=eta, connection=connection)
    except Exception as exc:  # any broker failure: the row stays pending for the catch-up
        logger.warning(
            "article %s: could not reach the broker (%s: %s); it stays pending and the "
            "catch-up or `manage.py publish_pending` will publish it",
            article_id,
            type(exc).__name__,
            exc,
        )
        return False
    return True


def dispatch_when_due(*, article_id: int, publish_at: datetime) -> bool:
    """Send now if due; with an ETA if due before the catch-up runs again; else leave it
    to the catch-up, which arms it when its time comes near."""
    delay = (publish_at - timezone.now()).total_seconds()
    if delay <= 0:
        return dispatch_publish(article_id)
    if delay <= settings.PUBLISH_ETA_HORIZON:
        return dispatch_publish(article_id, eta=publish_at)
    logger.info("article %s is scheduled for %s; the catch-up will arm it", article_id, publish_at)
    return False


def dispatch_unpublish(snapshot: dict) -> bool:
    """Take a deleted article off the site; if the broker is down, the catch-up's
    reconcile removes it instead."""
    from publishing.tasks import unpublish_article

    try:
        send(unpublish_article, (snapshot,))
    except Exception as exc:
        logger.warning(
            "article %s deleted, but the broker is unreachable (%s: %s); the catch-up "
            "will take it off the site",
            snapshot.get("id"),
            type(exc).__name__,
            exc,
        )
        return False
    return True


def dispatch_refresh(*, eta: datetime) -> bool:
    """Send the deferred refresh of the shared views (publishing.services.refresh),
    by name; if the broker is down, the catch-up's pass does it instead."""
    from config.celery import app

    try:
        with dispatch_connection() as connection:
            app.send_task("publishing.tasks.refresh_site", eta=eta, connection=connection)
    except Exception as exc:
        logger.warning(
            "the shared views' refresh could not be sent (%s: %s); the catch-up will run it",
            type(exc).__name__,
            exc,
        )
        return False
    return True
