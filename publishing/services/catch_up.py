"""The safety nets: the catch-up (run by Celery Beat) and the backup executor.

Neither owns anything. The catch-up only re-sends what the pending list says is
unfinished and nobody is touching; the backup executor claims and publishes through
the same services as a worker. Both may run any number of times, anywhere, at once.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models.functions import Now

from publishing import rollup
from publishing.dispatch import dispatch_many
from publishing.models import Article, CatchUpRun
from publishing.selectors import (
    article_ids_claimable,
    articles_due_for_catch_up,
    articles_to_arm,
    dead_unalerted_ids,
)
from publishing.services.alarms import article_dead_alert, stuck_check
from publishing.services.articles import article_publish
from publishing.services.refresh import shared_views_pass
from publishing.services.site import site_reconcile
from publishing.time_limits import attempt_time_limit

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class CatchUpReport:
    stale_found: int
    stale_sent: int
    armed: int
    alerts_sent: int
    stuck: bool


def _mark_dispatched(ids: list[int]) -> None:
    if ids:
        Article.objects.filter(pk__in=ids).update(dispatched_at=Now())


def _send_all(batch: list[tuple[int, datetime | None]]) -> list[int]:
    """Send each (id, eta) on one connection; stop at the first failure, since the
    broker is then down for the rest too (the next run sends them).

    Past the dispatch's breaker: the catch-up runs once an interval, and a breaker that
    another send opened a moment ago must not make it skip a whole interval; a broker
    that is still down costs this one batch one timeout."""
    sent = dispatch_many(batch, past_breaker=True)
    if len(sent) < len(batch):
        logger.warning(
            "catch-up: the broker is unreachable; %d left for the next run", len(batch) - len(sent)
        )
    _mark_dispatched(sent)
    return sent


def catch_up(*, limit: int | None = None) -> CatchUpReport:
    """Re-send stale due rows, arm the soon-scheduled ones, alert unalerted deaths,
    check for a stuck pipeline, and let the publishers reconcile the site."""
    limit = limit or settings.PUBLISH_CATCHUP_BATCH
    stale = articles_due_for_catch_up(stale_after=settings.PUBLISH_STALE_AFTER, limit=limit)
    sent = _send_all([(article_id, None) for article_id in stale])
    soon = articles_to_arm(
        horizon=settings.PUBLISH_ETA_HORIZON, stale_after=settings.PUBLISH_STALE_AFTER, limit=limit
    )
    armed = _send_all(soon)

    alerts = sum(article_dead_alert(article_id=i) for i in dead_unalerted_ids(limit=limit))
    stuck = stuck_check()
    site_reconcile()
    rollup.compact()
    report = CatchUpReport(len(stale), len(sent), len(armed), alerts, stuck)
    catch_up_recorded(report=report)
    logger.info(
        "catch-up: %d stale due article(s) found, %d sent; %d scheduled armed; "
        "%d dead-letter alert(s); stuck: %s",
        report.stale_found,
        report.stale_sent,
        report.armed,
        report.alerts_sent,
        report.stuck,
    )
    return report


def catch_up_recorded(*, report: CatchUpReport) -> None:
    """Keep when the catch-up last ran and what it did (the dashboard shows it, and
    blogpublish_catch_up_last_run_timestamp_seconds lets an alert see it stop)."""
    values = {"ran_at": Now(), "host": socket.gethostname(), "report": asdict(report)}
    if not CatchUpRun.objects.filter(pk=1).update(**values):
        # Two Beats: the other one may have created it meanwhile.
        with contextlib.suppress(IntegrityError), transaction.atomic():
            CatchUpRun.objects.create(pk=1, **values)


def publish_pending(*, limit: int, retry_in: Callable[[int], float]) -> Counter:
    """The backup executor: claim and publish due rows in this process, no broker.

    Goes on until nothing is claimable or `limit` attempts were made; returns the
    count of each outcome. Each attempt has the worker's time limits, inside the lease
    (publishing.time_limits), so a hung target or a slow render cannot outlive it.
    """
    worker = f"publish_pending@{socket.gethostname()}:{os.getpid()}"
    outcomes: Counter = Counter()
    while outcomes.total() < limit:
        batch = article_ids_claimable(limit=min(100, limit - outcomes.total()))
        if not batch:
            break
        for article_id in batch:
            result = article_publish(
                article_id=article_id,
                retry_in=retry_in,
                worker=worker,
                time_limit=attempt_time_limit,
            )
            outcomes[str(result.outcome)] += 1
    for article_id in dead_unalerted_ids(limit=limit):
        article_dead_alert(article_id=article_id)
    stuck_check()
    if outcomes:  # the passes its outcomes deferred need a broker: one now, here
        shared_views_pass()
    return outcomes
