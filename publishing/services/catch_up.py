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
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models.functions import Now

from publishing import rollup
from publishing.dispatch import (
    dispatch_batches,
    dispatch_many,
    dispatch_rerender,
    eta_horizon,
)
from publishing.models import Article, CatchUpRun
from publishing.selectors import (
    articles_due_for_catch_up,
    articles_to_arm,
    dead_unalerted_ids,
)
from publishing.services.alarms import (
    article_dead_alert,
    death_alerts_pass,
    storm_follow_ups,
    stuck_check,
)
from publishing.services.deliveries import deliveries_catch_up
from publishing.services.publish import publish_group, suspects_due
from publishing.services.refresh import full_check_due, shared_views_pass
from publishing.services.rerender import rerender_wanted
from publishing.services.site import site_reconcile
from publishing.services.stories import stories_tidy
from publishing.time_limits import attempt_time_limit
from work.runs import Run, busy_message, scheduled_run

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class CatchUpReport:
    stale_found: int
    stale_sent: int
    armed: int
    alerts_sent: int
    stuck: bool
    # Not run: the previous catch-up still held its lease.
    skipped: bool = False
    # Stale pending webhook deliveries sent again, and dead ones alerted late.
    deliveries_sent: int = 0
    delivery_alerts: int = 0
    # A pass of the site's re-render sent: the look changed (a deploy), or a run whose
    # runner died is unfinished (issue 20).
    rerender_sent: bool = False


def _mark_dispatched(ids: list[int]) -> list[int]:
    """Marks the rows and returns those marked: on PostgreSQL a row another transaction
    holds (a save under way, which sends its own message as it commits) is passed by,
    never waited for (a review's finding: a slow edit holding its row held the catch-up
    with it, the safety net of everything else)."""
    if not ids:
        return []
    with transaction.atomic():
        free = list(
            Article.objects.filter(pk__in=ids)
            .select_for_update(skip_locked=True)
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        Article.objects.filter(pk__in=free).update(dispatched_at=Now())
    return free


def _send_all(batch: Sequence[tuple[int, datetime | None]]) -> list[int]:
    """Send each (id, eta) on one connection; stop at the first failure, since the
    broker is then down for the rest too (the next run sends them).

    Past the dispatch's breaker: the catch-up runs once an interval, and a breaker that
    another send opened a moment ago must not make it skip a whole interval; a broker
    that is still down costs this one batch one timeout."""
    # Marked before they go out, as `_send_batches` does: marked after, the UPDATE's row
    # lock could meet the message's own claim, whose SKIP LOCKED would pass its row by.
    marked = set(_mark_dispatched([article_id for article_id, _ in batch]))
    batch = [item for item in batch if item[0] in marked]
    ids = [article_id for article_id, _ in batch]
    sent = dispatch_many(batch, past_breaker=True)
    if len(sent) < len(batch):
        logger.warning(
            "catch-up: the broker is unreachable; %d left for the next run", len(batch) - len(sent)
        )
        Article.objects.filter(pk__in=ids[len(sent) :]).update(dispatched_at=None)
    return sent


def _send_batches(stale: list[int]) -> list[int]:
    """A large backlog: batch tasks (services.publish) instead of one message per row.
    They claim the oldest due rows, these among them, and send themselves again while
    any are due. Returns the rows counted as sent (all, or none if the broker is down).

    The rows are marked before the batches go out: marked after, the UPDATE's row locks
    could meet a batch's claim (FOR UPDATE SKIP LOCKED), which would pass them by, find
    nothing and stop, leaving them for the next catch-up."""
    stale = _mark_dispatched(stale)
    if not dispatch_batches(past_breaker=True):
        logger.warning("catch-up: the broker is unreachable; %d left for the next run", len(stale))
        Article.objects.filter(pk__in=stale).update(dispatched_at=None)  # not sent after all
        return []
    return stale


def catch_up(*, limit: int | None = None) -> CatchUpReport:
    """Re-send stale due rows and stale webhook deliveries, arm the soon-scheduled ones,
    alert unalerted deaths (of articles and deliveries), check for a stuck pipeline, and
    let the publishers refresh the site; then, when it is due, the full check
    (reconcile), a run of its own.

    One catch-up at a time: a run that finds the previous one still running is skipped
    (work.runs), and each run ends with its cost summary line."""
    with scheduled_run("catch-up", lease_seconds=catch_up_run_lease()) as run:
        if run.skipped:
            return CatchUpReport(0, 0, 0, 0, False, skipped=True)
        report = _catch_up(run, limit=limit or settings.PUBLISH_CATCHUP_BATCH)
        full = full_check_due()
        if not full:
            run.renew()
            shared_views_pass()
    if full and not site_reconcile():
        # The full check was skipped (the last one still runs, a heavy batch) or not
        # done: a refresh instead, so that every catch-up runs a pass.
        shared_views_pass()
    return report


def catch_up_run_lease() -> float:
    """How long a catch-up run holds its job's lease before each step (it renews it as
    it goes): a catch-up whose worker died delays the next one by at most this, about
    two intervals, not by the task's time limit."""
    return max(10.0, 2 * settings.PUBLISH_CATCHUP_INTERVAL)


def _catch_up(run: Run, *, limit: int) -> CatchUpReport:
    stale = articles_due_for_catch_up(stale_after=settings.PUBLISH_STALE_AFTER, limit=limit)
    if len(stale) > settings.PUBLISH_CATCHUP_HEAVY_BATCH and (busy := run.take_heavy()) is not None:
        # A large batch is heavy: it does not run beside the reconcile. This run sends
        # a small batch; the next ones send the rest.
        logger.info(
            "catch-up: %d stale rows; %s; sending %d now",
            len(stale),
            busy_message("catch-up", busy).removeprefix("skipped: catch-up: "),
            settings.PUBLISH_CATCHUP_HEAVY_BATCH,
        )
        stale = stale[: settings.PUBLISH_CATCHUP_HEAVY_BATCH]
    if len(stale) > settings.PUBLISH_BATCH_THRESHOLD:
        # Rows a dead claimer left are claimed only alone: a message each.
        alone = set(stale) & set(suspects_due(limit=limit))
        sent = _send_batches([pk for pk in stale if pk not in alone])
        if alone:
            sent += _send_all([(article_id, None) for article_id in sorted(alone)])
    else:
        sent = _send_all([(article_id, None) for article_id in stale])
    run.renew()
    soon = articles_to_arm(
        horizon=eta_horizon(), stale_after=settings.PUBLISH_STALE_AFTER, limit=limit
    )
    armed = _send_all(soon)

    # The stuck check and the deliveries before the deaths' alerts, each of which may
    # wait for a slow mail server or webhook up to their deadlines (a review's finding:
    # a hung mail server took the run's time limit, and the rest was never reached).
    stuck = stuck_check()
    run.renew()
    deliveries_sent, delivery_alerts = deliveries_catch_up(limit=limit)
    alerts = 0
    with death_alerts_pass():
        for article_id in dead_unalerted_ids(limit=limit):
            run.renew()
            alerts += article_dead_alert(article_id=article_id)
    run.renew()
    alerts += storm_follow_ups()  # how many more died in a storm's window, once it is over
    rerender_sent = rerender_wanted() and dispatch_rerender()
    report = CatchUpReport(
        len(stale),
        len(sent),
        len(armed),
        alerts,
        stuck,
        deliveries_sent=deliveries_sent,
        delivery_alerts=delivery_alerts,
        rerender_sent=rerender_sent,
    )
    run.detail = (
        f"{report.stale_found} stale found, {report.stale_sent} sent, {report.armed} armed, "
        f"{report.alerts_sent} alerts, stuck: {report.stuck}, "
        f"{deliveries_sent} webhook deliveries sent, {delivery_alerts} delivery alerts"
        f"{', a re-render pass sent' if rerender_sent else ''}"
    )
    rollup.compact()
    stories_tidy(limit=limit)  # the trash and old revisions (docs/design.md, "Drafts")
    catch_up_recorded(report=report)
    logger.info(
        "catch-up: %d stale due article(s) found, %d sent; %d scheduled armed; "
        "%d dead-letter alert(s); stuck: %s; %d stale webhook deliveries sent, %d alerted",
        report.stale_found,
        report.stale_sent,
        report.armed,
        report.alerts_sent,
        report.stuck,
        report.deliveries_sent,
        report.delivery_alerts,
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

    Claims groups of due rows through the one publish path (services.publish) until
    nothing is claimable or `limit` rows were claimed; returns the count of each
    outcome. Each group has the worker's time limits, inside the lease
    (publishing.time_limits), so a hung target or a slow render cannot outlive it.
    """
    worker = f"publish_pending@{socket.gethostname()}:{os.getpid()}"
    outcomes: Counter = Counter()
    while outcomes.total() < limit:
        report = publish_group(
            limit=min(settings.PUBLISH_BATCH_SIZE, limit - outcomes.total()),
            retry_in=retry_in,
            worker=worker,
            time_limit=attempt_time_limit,
        )
        if not report.claimed and (alone := suspects_due(limit=1)):
            # A row a dead claimer left: alone (services.publish, claim_group).
            report = publish_group(
                limit=1,
                first=alone[0],
                retry_in=retry_in,
                worker=worker,
                time_limit=attempt_time_limit,
            )
        if not report.claimed:
            break
        outcomes.update(report.outcomes)
    stuck_check()
    with death_alerts_pass():
        for article_id in dead_unalerted_ids(limit=limit):
            article_dead_alert(article_id=article_id)
    # One pass now, here, as every catch-up runs one: its outcomes' passes need a
    # broker, and so does a delete's or a withdraw's unpublish message, whose removal
    # the publishers noted in the delete's transaction for the next pass (a review's: a
    # takedown during an outage stayed on the front page, its page served, while only
    # saves were published). A rebuild left at the pass's budget goes on at the next run.
    # Under a time limit inside the refresher's lease, as the refresh_site task runs
    # one (publishing.time_limits: no pool here to stop it).
    seconds = settings.PUBLISH_REFRESH_LEASE_SECONDS
    with attempt_time_limit(soft=0.8 * seconds, hard=0.9 * seconds):
        shared_views_pass()
    return outcomes
