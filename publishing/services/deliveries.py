"""Webhook deliveries: the outbox (docs/design.md, "Webhook deliveries").

The publish attempt only inserts a delivery (`deliveries_enqueue`: one row per publish
and event, the Idempotency-Key unique) and a message is sent after its commit;
the `deliver_webhook` task then moves the row on by conditional UPDATEs on the one
fenced lease (work.lease), as an article is moved:

- **claim**: `status=pending`, next try due, lease free, tries left, and no earlier
  delivery of the same article pending → lease for PUBLISH_WEBHOOK_LEASE_SECONDS,
  `attempts+1`, `claims+1` (the fencing token). A row whose tries are spent although
  none said so (each try's worker died) goes dead instead of being claimed again.
- **deliver**: the body kept on the row, signed now, under the row's key
  (publishing/webhook_post.py).
- **delivered** on 2xx; **retry** after a backoff (1, 2, 4 … s, up to
  PUBLISH_RETRY_BACKOFF_MAX) on a timeout, a connection error, 408, 429 or 5xx; **dead**
  on any other answer or after PUBLISH_WEBHOOK_MAX_ATTEMPTS tries, with one alert. Each
  of these writes is fenced by the token: a try that outlived its lease writes nothing
  over the newer try's outcome.
- **order**: a later event of an article waits while an earlier one is pending; when the
  earlier one is delivered or dead, the next one is sent at once. A dead one stops
  blocking.

None of it touches the article: a receiver that is slow, down or refusing never changes
an article's status.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from django.conf import settings
from django.db import connection
from django.db.models import Exists, F, Max, OuterRef, Q
from django.db.models.functions import Now

from publishing.broker_status import queue_message_counts
from publishing.dispatch import DELIVER_TASK, dispatch_deliveries
from publishing.exceptions import TIME_LIMITS, NoAnswer, PermanentPublishError, PublishingError
from publishing.models import DeliveryStatus, WebhookDelivery
from publishing.services.alarms import death_alerts_pass, delivery_dead_alert
from publishing.time_limits import attempt_time_limit
from publishing.webhook_post import post_signed
from work import lease
from work.db import after_commit

logger = logging.getLogger(__name__)

UNFINISHED = "the last try never finished: its worker died or ran out of time"


@dataclass(frozen=True)
class NewDelivery:
    """An event to put in the outbox: `body` is the JSON text POSTed at every try."""

    article_id: int
    event: str
    key: str
    body: str


class DeliveryOutcome(StrEnum):
    DELIVERED = "delivered"
    RETRY = "retry"  # failed; tried again after a backoff
    DEAD = "dead"  # refused, or failed for the last time
    SKIPPED = "skipped"  # not claimed: done, held, backing off, or waiting for an earlier one
    OVERTAKEN = "overtaken"  # this try outlived its lease and another took the row over


@dataclass(frozen=True)
class DeliveryResult:
    outcome: DeliveryOutcome
    delivery_id: int
    attempt: int = 0
    error: str = ""
    reason: str = ""
    # RETRY: seconds until the next try. SKIPPED: until it is due, or its lease runs out.
    retry_in: float | None = None
    due_in: float | None = None
    lease_left: float | None = None
    # RETRY, DEAD: the receiver gave no answer (timed out, unreachable, the try's limit).
    unanswered: bool = False


# --- the outbox ------------------------------------------------------------------------


def deliveries_enqueue(new: Iterable[NewDelivery]) -> None:
    """Insert the deliveries that are not there yet (by key) and send a message for each
    pending one after the caller's transaction commits (at once outside one)."""
    new = list(new)
    if not new:
        return
    WebhookDelivery.objects.bulk_create(
        [
            WebhookDelivery(article_id=d.article_id, event=d.event, key=d.key, body=d.body)
            for d in new
        ],
        ignore_conflicts=True,  # the same version and event, again: nothing new
    )
    ids = list(
        WebhookDelivery.objects.filter(
            key__in=[d.key for d in new], status=DeliveryStatus.PENDING
        ).values_list("pk", flat=True)
    )
    after_commit(deliveries_dispatch, ids)


def deliveries_last(*, article_ids: Iterable[int], event: str) -> dict[int, WebhookDelivery]:
    """The latest delivery of `event` of each article that has one (its key and body)."""
    latest = (
        WebhookDelivery.objects.filter(article_id__in=list(article_ids), event=event)
        .values("article_id")
        .annotate(last=Max("pk"))
        .values_list("last", flat=True)
    )
    rows = WebhookDelivery.objects.filter(pk__in=list(latest)).only("article_id", "key", "body")
    return {row.article_id: row for row in rows}


def deliveries_dispatch(ids: list[int], *, past_breaker: bool = False) -> list[int]:
    """Send a `deliver_webhook` message per id and note when; returns the ids sent (a
    broker that is down leaves the rest to the catch-up)."""
    sent = dispatch_deliveries(ids, past_breaker=past_breaker)
    if sent:
        WebhookDelivery.objects.filter(pk__in=sent).update(dispatched_at=Now())
    return sent


def _pending():
    return WebhookDelivery.objects.filter(status=DeliveryStatus.PENDING)


def earlier_pending() -> Exists:
    """An earlier delivery of the same article is still pending: this one waits."""
    return Exists(_pending().filter(article_id=OuterRef("article_id"), pk__lt=OuterRef("pk")))


def _next_of_article(article_id: int) -> None:
    """Send the article's oldest pending delivery: the one that waited for this one."""
    first = _pending().filter(article_id=article_id).order_by("pk").values_list("pk", flat=True)
    ids = list(first[:1])
    if ids:
        after_commit(deliveries_dispatch, ids)


# --- one try -----------------------------------------------------------------------------


def delivery_claim(*, delivery_id: int) -> WebhookDelivery | None:
    """Take the delivery for one try (its token is `claims`), or None. A delivery whose
    tries are spent although no try said so goes dead here (with its alert)."""
    rows = _pending().filter(lease.due(), pk=delivery_id).filter(~earlier_pending())
    claimed = lease.claim(
        rows,
        seconds=settings.PUBLISH_WEBHOOK_LEASE_SECONDS,
        max_attempts=settings.PUBLISH_WEBHOOK_MAX_ATTEMPTS,
        updated_at=Now(),
    )
    if claimed:
        return claimed[0]
    spent = rows.filter(
        lease.lease_free(), lease.budget_spent(settings.PUBLISH_WEBHOOK_MAX_ATTEMPTS)
    )
    if spent.update(status=DeliveryStatus.DEAD, last_error=UNFINISHED, updated_at=Now()):
        _died(delivery_id, error=UNFINISHED)
    return None


def delivery_why_not(*, delivery_id: int) -> DeliveryResult:
    """Why a claim found nothing: said in the log, and returned to the caller."""
    rows = WebhookDelivery.objects.filter(pk=delivery_id)
    why = lease.why_not_claimed(rows, pending=DeliveryStatus.PENDING, holder="another try")
    if why is None:
        article_id = rows.values_list("article_id", flat=True).first()
        earlier = (
            _pending()
            .filter(article_id=article_id, pk__lt=delivery_id)
            .values_list("pk", flat=True)
            .first()
        )
        why = lease.WhyNot(
            "another try claimed it first"
            if earlier is None
            else f"it waits for the earlier delivery {earlier} of article {article_id}"
        )
    logger.info("webhook delivery %s not claimed: %s", delivery_id, why.reason)
    return DeliveryResult(
        DeliveryOutcome.SKIPPED,
        delivery_id,
        reason=why.reason,
        due_in=why.due_in,
        lease_left=why.lease_left,
    )


def webhook_deliver(*, delivery_id: int) -> DeliveryResult:
    """One try of one delivery: claim, POST, then delivered, retry or dead. With the
    webhook turned off (no PUBLISH_WEBHOOK_URL) nothing is tried: the outbox keeps its
    pending deliveries for when it is on again."""
    if not settings.PUBLISH_WEBHOOK_URL:
        logger.info("webhook delivery %s not sent: PUBLISH_WEBHOOK_URL is not set", delivery_id)
        return DeliveryResult(DeliveryOutcome.SKIPPED, delivery_id, reason="the webhook is off")
    row = delivery_claim(delivery_id=delivery_id)
    if row is None:
        return delivery_why_not(delivery_id=delivery_id)
    token, attempt = row.claims, row.attempts
    try:
        post_signed(
            url=settings.PUBLISH_WEBHOOK_URL,
            secret=settings.PUBLISH_WEBHOOK_SECRET,
            key=row.key,
            body=row.body.encode("utf-8"),
            read_timeout=settings.PUBLISH_WEBHOOK_TIMEOUT,
        )
    except Exception as exc:  # refused, transient, a time limit, or a bug
        return _failed(row, token=token, attempt=attempt, exc=exc)
    if not lease.release(
        _pending().filter(pk=row.pk),
        token,
        status=DeliveryStatus.DELIVERED,
        delivered_at=Now(),
        next_attempt_at=None,
        last_error="",
        updated_at=Now(),
    ):
        return _overtaken(row, attempt)
    logger.info(
        "webhook %s of article %s delivered (delivery %s, try %s)",
        row.event,
        row.article_id,
        row.pk,
        attempt,
    )
    _next_of_article(row.article_id)
    return DeliveryResult(DeliveryOutcome.DELIVERED, row.pk, attempt)


# The longest wait a receiver's Retry-After makes a delivery's next try wait.
RETRY_AFTER_MAX = 3600.0


def _failed(row: WebhookDelivery, *, token: int, attempt: int, exc: Exception) -> DeliveryResult:
    refused = isinstance(exc, PermanentPublishError)
    unanswered = isinstance(exc, (NoAnswer, *TIME_LIMITS))
    # The receiver's own words as they are; anything else with its type (a time limit, a bug).
    error = str(exc) if isinstance(exc, PublishingError) else lease.describe(exc)
    last = refused or attempt >= settings.PUBLISH_WEBHOOK_MAX_ATTEMPTS
    changes: dict = {"last_error": lease.cut(error), "updated_at": Now()}
    wait = None
    if last:
        changes["status"] = DeliveryStatus.DEAD
    else:
        wait = lease.backoff(attempt, cap=settings.PUBLISH_RETRY_BACKOFF_MAX)
        asked = getattr(exc, "asked_wait", None)
        if asked is not None:
            # The receiver's Retry-After (a 429, a 503 in maintenance), up to an hour: its
            # tries are not spent while it asked to be left alone (a review's finding:
            # four tries in five seconds, then dead).
            wait = max(wait, min(asked, RETRY_AFTER_MAX))
        # The retry's message goes out now (the task's retry), with its countdown.
        changes.update(next_attempt_at=lease.now_plus(wait), dispatched_at=Now())
    if not lease.release(_pending().filter(pk=row.pk), token, **changes):
        return _overtaken(row, attempt)
    if not last:
        logger.warning(
            "webhook delivery %s (article %s) try %s failed, next in %.0fs: %s",
            row.pk,
            row.article_id,
            attempt,
            wait,
            error,
        )
        return DeliveryResult(
            DeliveryOutcome.RETRY,
            row.pk,
            attempt,
            error=error,
            retry_in=wait,
            unanswered=unanswered,
        )
    _died(row.pk, error=error)
    return DeliveryResult(DeliveryOutcome.DEAD, row.pk, attempt, error=error, unanswered=unanswered)


def _overtaken(row: WebhookDelivery, attempt: int) -> DeliveryResult:
    logger.warning(
        "webhook delivery %s try %s outlived its lease; the newer try decides", row.pk, attempt
    )
    return DeliveryResult(DeliveryOutcome.OVERTAKEN, row.pk, attempt)


def _died(delivery_id: int, *, error: str) -> None:
    """A delivery is dead: one alert, and the article's next delivery no longer waits."""
    logger.error("webhook delivery %s is dead: %s", delivery_id, error)
    after_commit(delivery_dead_alert, delivery_id=delivery_id)
    article_id = WebhookDelivery.objects.values_list("article_id", flat=True).get(pk=delivery_id)
    _next_of_article(article_id)


# --- the operator, the safety nets -------------------------------------------------------


def later_of_article() -> Exists:
    """A later event of the same article is in the outbox (whatever its status)."""
    return Exists(
        WebhookDelivery.objects.filter(article_id=OuterRef("article_id"), pk__gt=OuterRef("pk"))
    )


def delivery_requeue(*, delivery_id: int) -> bool:
    """Dead → pending with a fresh budget of tries, and sent after commit; unless a later
    event of its article is in the outbox: sent now, the older event would reach the
    receiver after it and be its last word (an article.published after the article's
    article.withdrawn: a review's finding). The later event already says what is true
    now; `delivery_not_requeued_why` says why to the operator."""
    requeued = (
        WebhookDelivery.objects.filter(pk=delivery_id, status=DeliveryStatus.DEAD)
        .filter(~later_of_article())
        .update(
            status=DeliveryStatus.PENDING,
            attempts=0,
            last_error="",
            next_attempt_at=None,
            lease_expires_at=None,
            alerted_at=None,
            # The token moves on: a try from before it died cannot undo the requeue.
            claims=F("claims") + 1,
            updated_at=Now(),
        )
    )
    if requeued:
        logger.info("webhook delivery %s requeued", delivery_id)
        after_commit(deliveries_dispatch, [delivery_id])
    return bool(requeued)


def delivery_not_requeued_why(*, delivery_id: int) -> str:
    """Why `delivery_requeue` left the delivery as it was, in the operator's words."""
    row = WebhookDelivery.objects.filter(pk=delivery_id).values("status", "article_id").first()
    if row is None:
        return f"There is no webhook delivery {delivery_id}."
    later = (
        WebhookDelivery.objects.filter(article_id=row["article_id"], pk__gt=delivery_id)
        .order_by("-pk")
        .values_list("pk", "event")
        .first()
    )
    if row["status"] == DeliveryStatus.DEAD and later is not None:
        return (
            f"Webhook delivery {delivery_id} is superseded by a later event of article "
            f"{row['article_id']} (delivery {later[0]}, {later[1]}): sent now, it would reach "
            "the receiver after it. Requeue that one if it is dead."
        )
    return f"Only a dead webhook delivery can be requeued; this one is {row['status']}."


def deliveries_stale(*, stale_after: float, limit: int) -> list[int]:
    """Pending deliveries due for `stale_after` seconds that no message has taken: never
    sent (the broker was down), a retry message lost, a worker that died. Oldest first;
    those waiting for an earlier delivery of their article are left to it."""
    cutoff = lease.now_plus(-stale_after)
    return list(
        _pending()
        .filter(lease.lease_free())
        .filter(Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=cutoff))
        .filter(Q(dispatched_at__isnull=True) | Q(dispatched_at__lte=cutoff))
        .filter(~earlier_pending())
        .order_by("pk")
        .values_list("pk", flat=True)[:limit]
    )


def _messages_waiting() -> int | None:
    """Messages in the deliveries' queue (config.queues), or None when the broker does
    not say (then the stale ones are sent again, as before)."""
    name = settings.CELERY_TASK_ROUTES.get(DELIVER_TASK, {}).get("queue")
    if not name:
        return None
    try:
        return queue_message_counts(names=[name], timeout=1)[name]
    except Exception:  # the broker's own errors, whatever its kind: unknown
        return None


def dead_deliveries_unalerted(*, limit: int) -> list[int]:
    return list(
        WebhookDelivery.objects.filter(status=DeliveryStatus.DEAD, alerted_at__isnull=True)
        .order_by("pk")
        .values_list("pk", flat=True)[:limit]
    )


# What a pass of the backup executor counts for the deliveries it did not try.
LEFT = "left for the next pass"


def deliveries_deliver_due(*, limit: int) -> Counter:
    """The backup executor's part (`publish_pending`): try the due deliveries in this
    process, no broker, oldest first, each through the same claim as the task's (one that
    waits for an earlier one of its article is tried after it). The count of each
    outcome, and of those LEFT.

    Each try runs under the task's time limits (80 % and 90 % of its lease), which the
    POST's timeouts alone are not: they bound each read, and a receiver that trickles
    its answer held a pass past the lease while a worker posted the same delivery again
    (a review's finding). The due ones are read once, so a pass tries each at most once;
    it takes no more after a try the receiver did not answer (timed out, unreachable:
    the next would wait as long, and spend a try of each) or once it has spent a lease's
    time on them, and leaves the rest to the next pass or a worker: a silent receiver
    held one pass until every delivery was dead, publishing nothing meanwhile."""
    outcomes: Counter = Counter()
    if not settings.PUBLISH_WEBHOOK_URL:
        return outcomes
    lease_s = settings.PUBLISH_WEBHOOK_LEASE_SECONDS
    due = list(
        _pending()
        .filter(lease.due(), lease.lease_free())
        .order_by("pk")
        .values_list("pk", flat=True)[:limit]
    )
    ends = time.monotonic() + lease_s
    for n, pk in enumerate(due):
        if time.monotonic() >= ends:
            outcomes[LEFT] += len(due) - n
            break
        try:
            with attempt_time_limit(soft=0.8 * lease_s, hard=0.9 * lease_s, lease=lease_s):
                result = webhook_deliver(delivery_id=pk)
        except TIME_LIMITS:  # outside the POST (its claim, its record): the lease decides
            logger.warning("webhook delivery %s: its try ran past its time limit", pk)
            # It may have come in the middle of a statement: the connection is then
            # unusable for the tries after it (as a publish group's, services.publish).
            if not connection.in_atomic_block:
                connection.close()
            result = DeliveryResult(DeliveryOutcome.RETRY, pk, unanswered=True)
        outcomes[str(result.outcome)] += 1
        if result.unanswered and n + 1 < len(due):
            outcomes[LEFT] += len(due) - n - 1
            logger.warning(
                "publish_pending: the webhook receiver did not answer; %d deliveries left "
                "for the next pass",
                len(due) - n - 1,
            )
            break
    return outcomes


def deliveries_catch_up(*, limit: int) -> tuple[int, int]:
    """The catch-up's part: send the stale pending deliveries again, and alert deaths
    whose alert was lost with its worker. (sent, alerts)."""
    stale = []
    if settings.PUBLISH_WEBHOOK_URL:  # off: the pending ones wait for it to be on again
        stale = deliveries_stale(stale_after=settings.PUBLISH_STALE_AFTER, limit=limit)
    waiting = _messages_waiting() if stale else None
    if waiting is not None and waiting >= len(stale):
        # As many messages wait in the deliveries' queue as there are deliveries that
        # look stale: theirs are most likely among them, behind a slow receiver's tries.
        # Sent again, each run would add as many more (a review's finding: the queue
        # grew by hundreds a run). A lost one is sent once the queue holds fewer.
        logger.info(
            "catch-up: %d webhook deliveries wait longer than %ss, with %d messages in "
            "their queue; not sent again",
            len(stale),
            settings.PUBLISH_STALE_AFTER,
            waiting,
        )
        stale = []
    sent = deliveries_dispatch(stale, past_breaker=True)
    if len(sent) < len(stale):
        logger.warning(
            "catch-up: the broker is unreachable; %d webhook deliveries left for the next run",
            len(stale) - len(sent),
        )
    with death_alerts_pass():
        alerts = sum(
            delivery_dead_alert(delivery_id=pk) for pk in dead_deliveries_unalerted(limit=limit)
        )
    return len(sent), alerts
