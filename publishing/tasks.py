"""Celery tasks: thin. Each calls one service and owns only the Celery-level policy."""

from __future__ import annotations

import logging
from dataclasses import asdict
from datetime import timedelta
from typing import Any

from celery import Celery, Task, shared_task
from celery.exceptions import SoftTimeLimitExceeded
from celery.utils import uuid
from celery.utils.time import get_exponential_backoff_interval
from celery.worker import state as worker_state
from celery.worker.control import control_command
from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.utils import timezone

from publishing.dispatch import (
    DISCARD_COMMAND,
    dispatch_batches,
    dispatch_deliveries,
    dispatch_many,
    dispatch_publish,
    dispatch_rerender,
    eta_horizon,
)
from publishing.exceptions import ArticleDeadError, TransientPublishError
from publishing.services import (
    DeliveryOutcome,
    GroupReport,
    Outcome,
    article_unpublish,
    catch_up,
    leased_by,
    mark_sent,
    publish_group,
    shared_views_deferred,
    suspects_due,
    webhook_deliver,
)
from publishing.services.rerender import RerenderOutcome, site_rerender

logger = logging.getLogger(__name__)

# Task ids in one discard at most (a group's, PUBLISH_BATCH_SIZE - 1; a bound on what a
# broadcast from anyone with the broker's password can put in a worker's memory).
DISCARD_MAX = 10_000


@control_command(
    name=DISCARD_COMMAND,
    variadic="task_ids",  # `celery control publish_discard id1 id2 …`, as revoke's
    signature="[id1 [id2 [... [idN]]]]",
)
def publish_discard(state, task_ids: list | None = None) -> dict:
    """Remote control (dispatch.discard_messages): drop these publish messages unrun when
    they come, as Celery drops a revoked task. Each is the message of a save whose
    content another message's group has published: its work is done. The worker's own
    set of revoked ids holds them (bounded, and forgotten after
    CELERY_WORKER_REVOKE_EXPIRES, 3 hours); a message dropped shows in Flower as
    revoked."""
    if not isinstance(task_ids, list | tuple):  # anyone with the broker can send one
        return {"error": "task_ids: a list of task ids"}
    ids = [str(task_id) for task_id in task_ids[:DISCARD_MAX]]
    worker_state.revoked.update(ids)
    return {"ok": f"{len(ids)} message(s) to drop"}


class LeaseLimits(Task):
    """A task whose soft and hard time limits (`limits()`) sit inside a lease, read from
    the settings when Celery asks for them rather than when this module is imported. A
    worker asks as it starts consuming (its request class keeps them: a running worker
    keeps the limits it started with, as it keeps the lease it claims with); a process
    that sends the task asks at its first send (the message carries them). So a worker
    started under other settings (a test's short lease, `override_settings` in the
    process that starts it) gets limits that fit them without anything re-derived."""

    def limits(self) -> tuple[float, float]:
        """(soft, hard): an attempt's, inside PUBLISH_LEASE_SECONDS."""
        return settings.PUBLISH_SOFT_TIME_LIMIT, settings.PUBLISH_TIME_LIMIT

    # Celery reads these as attributes (its Task declares them so); the stubs type them
    # as writable ints, which a read-only property of floats is not.
    @property
    def soft_time_limit(self) -> float:  # type: ignore[override]  # read-only float: above
        return self.limits()[0]

    @property
    def time_limit(self) -> float:  # type: ignore[override]  # read-only float: above
        return self.limits()[1]


class RefreshLimits(LeaseLimits):
    """Inside the refresher's lease (PUBLISH_REFRESH_LEASE_SECONDS), so no second pass
    can begin while this one writes."""

    def limits(self) -> tuple[float, float]:
        lease = settings.PUBLISH_REFRESH_LEASE_SECONDS
        return lease * 0.8, lease * 0.9


class DeliveryLimits(LeaseLimits):
    """Inside the delivery's lease, so no other try can take it over while this one
    runs (the POST's own timeouts end inside the soft limit: config/checks.py)."""

    def limits(self) -> tuple[float, float]:
        lease = settings.PUBLISH_WEBHOOK_LEASE_SECONDS
        return lease * 0.8, lease * 0.9


class CatchUpLimits(LeaseLimits):
    """Bounded, so a hung alert channel or a huge reconcile cannot hold a worker child
    for good; the next run (idempotent) carries on where this one stopped."""

    def limits(self) -> tuple[float, float]:
        return settings.PUBLISH_CATCHUP_TIME_LIMIT - 30, settings.PUBLISH_CATCHUP_TIME_LIMIT


class PublishTask(LeaseLimits):
    """Retries arrive when the database says the next attempt is due.

    `autoretry_for` draws its own jittered countdown when it catches the error, but the
    failed attempt has already recorded `next_attempt_at` from `backoff()` (the same
    Celery policy, drawn once). A message that came earlier would find the row still
    backing off, so the countdown is the recorded one.

    A retry goes out under a new task id; Celery's keeps the message's own. A save's
    message id may be in the workers' revoked set (a group that published the row
    besides its own named it: `publish_discard`), and a message that ran before that
    broadcast reached its worker, then claimed its row again (edited since), would see
    its retry dropped as revoked, and the row wait for the catch-up. Only a save's own
    id is ever named, so a new one is never dropped.
    """

    # Class attributes of each task made with DURABLE's options (Celery sets them from
    # the decorator's arguments); the stubs' Task does not declare them.
    retry_backoff: bool | int
    retry_backoff_max: int
    retry_jitter: bool

    def backoff(self, attempt: int) -> float:
        return get_exponential_backoff_interval(
            factor=int(max(1.0, float(self.retry_backoff))),
            retries=max(0, attempt - 1),
            maximum=self.retry_backoff_max,
            full_jitter=self.retry_jitter,
        )

    def retry(
        self,
        args=None,
        kwargs=None,
        exc=None,
        throw=True,
        eta=None,
        countdown=None,
        max_retries=None,
        **options,
    ):
        if isinstance(exc, TransientPublishError) and exc.retry_in is not None:
            countdown, eta = exc.retry_in, None
        options.setdefault("task_id", uuid())
        return super().retry(args, kwargs, exc, throw, eta, countdown, max_retries, **options)


# The Celery-level policy of the tasks that change what readers see.
DURABLE: dict[str, Any] = {
    # Ack only after the attempt, and requeue when the pool child dies mid-attempt; the
    # database's attempt budget is what stops a message that kills workers every time.
    "acks_late": True,
    "reject_on_worker_lost": True,
    # A database that is briefly unreachable is as transient as a failing target.
    "autoretry_for": (TransientPublishError, OperationalError, InterfaceError),
    "retry_backoff": True,
    "retry_backoff_max": settings.PUBLISH_RETRY_BACKOFF_MAX,
    "retry_jitter": True,
    # (Inside the lease, so no other executor can take the row over while this runs:
    # every task made with these options has LeaseLimits' time limits, from its base.)
}

# For the tasks whose rows carry an attempt budget: a job ended by the hard time limit
# goes back to the queue at once, like a lost worker's, instead of being acked. Celery's
# default acks it (acks_on_timeout, celery.worker.request), and then only the catch-up
# would take the row, after its lease. It also covers a pool child killed near its hard
# limit: when the dying child's pipe closes before the kernel lets the master reap it,
# the prefork pool looks once, sees it running, and finds the death only on its 5 s
# timer (AsynPool.maintain_pool); if the hard limit comes first, the job ends as a
# TimeLimitExceeded, not a WorkerLostError. The redelivered message finds the killed
# attempt's lease (the last tenth of it) and comes back when it runs out (below); the
# budget (PUBLISH_MAX_ATTEMPTS) stops an article that hangs on every attempt.
REQUEUE_ON_HARD_TIME_LIMIT: dict[str, Any] = {"acks_on_timeout": False}


@shared_task(
    bind=True,
    base=PublishTask,
    max_retries=None,  # the database decides when to give up (PUBLISH_MAX_ATTEMPTS)
    # A dead article is alerted by the service; no second traceback in the worker log.
    throws=(ArticleDeadError,),
    **DURABLE,
    **REQUEUE_ON_HARD_TIME_LIMIT,
)
def publish_article(self: PublishTask, article_id: int) -> dict:
    """Publish the article: its row first, and in the same claim up to
    PUBLISH_BATCH_SIZE - 1 other due rows (a burst drains in groups; an idle save goes
    alone). A message whose row another task holds or has published ends after the
    claim (services.publish)."""
    report = publish_group(
        limit=settings.PUBLISH_BATCH_SIZE,
        first=article_id,
        retry_in=self.backoff,
        worker=self.request.hostname or "",
        task_id=self.request.id or "",
        send=True,
    )
    redelivered = bool((self.request.delivery_info or {}).get("redelivered"))
    follow_up(report, redelivered=redelivered, own=article_id, task_id=self.request.id or "")
    result = report.of(article_id)
    assert result is not None  # claimed, or explained
    if result.outcome is Outcome.RETRY:
        raise TransientPublishError(result.error, retry_in=result.retry_in)
    if result.outcome is Outcome.DEAD:
        raise ArticleDeadError(
            f"article {article_id} is dead after {result.attempt} attempt(s): {result.error}",
            article_id=article_id,
        )
    if result.outcome in (Outcome.CHANGED, Outcome.RELEASED):
        dispatch_publish(article_id)
    elif result.due_in is not None and result.due_in <= eta_horizon():
        # This message came before the row was due (an ETA from a host whose clock runs
        # ahead of the database's): send it again for when it is due.
        dispatch_publish(article_id, eta=timezone.now() + timedelta(seconds=result.due_in))
    elif result.lease_left is not None and (
        redelivered or self.request.retries or (self.request.id or "").startswith(LEASE_END)
    ):
        # Redelivered because the worker running it died (reject_on_worker_lost) or was
        # killed at the hard time limit (acks_on_timeout): the dead attempt's lease still
        # holds the row. Come back when it runs out rather than wait for the catch-up;
        # that message claims the dead attempt's group again. So does this very message
        # sent for a dead attempt's lease's end (LEASE_END) that came early, on a host
        # whose clock runs ahead of the sender's by more than the second of margin. Any
        # other message that finds its row held ends: the holder is alive and sends the
        # row's next message itself (send_next). Only these re-arm, each with one
        # message, so copies never multiply.
        # (A second of margin: a worker whose clock runs ahead must not come too early.)
        left = result.lease_left + 1.0
        send_for_lease_end(article_id, left)
    return {"outcome": str(result.outcome), "attempt": result.attempt, "reason": result.reason}


# The task id's start of a message sent for the end of a lease a dead attempt left: if it
# comes early (its host's clock ahead of the sender's), it comes back for it again.
LEASE_END = "lease-end-"


def send_for_lease_end(article_id: int, seconds: float) -> None:
    """A message for `article_id` in `seconds`, when the lease a dead attempt left on it
    runs out (by the database's clock; the caller adds its margin)."""
    dispatch_publish(
        article_id,
        eta=timezone.now() + timedelta(seconds=seconds),
        task_id=f"{LEASE_END}{uuid()}",
    )


def follow_up(
    report: GroupReport, *, redelivered: bool, own: int | None = None, task_id: str = ""
) -> None:
    """`_follow_up`, to the end even when the soft time limit comes in the middle of it
    (a group that used its time): the limit comes once, and the messages still to send
    are sent in the time left before the hard limit. A message sent twice ends after
    one claim; a message not sent leaves its row to the catch-up."""
    try:
        _follow_up(report, redelivered=redelivered, own=own, task_id=task_id)
    except SoftTimeLimitExceeded:
        logger.warning("the soft time limit came while sending the group's messages")
        _follow_up(report, redelivered=redelivered, own=own, task_id=task_id)


def _follow_up(
    report: GroupReport, *, redelivered: bool, own: int | None = None, task_id: str = ""
) -> None:
    """The messages a group leaves besides those of its rows' outcomes (sent as each
    commits, services.publish `send_next`: a row that failed and backs off, one changed
    meanwhile or let go):
    - a redelivered message whose own row is done, while rows its dead predecessor
      (the same task id) left unfinished are still leased: one message for the one
      whose lease runs out last, for then;
    - a group that took over a row its dead claimer left (that message, or the one a
      redelivered message sent), and any redelivered message: one message now for
      each row a dead claimer left whose lease has run out and that no message was
      sent for since, claimed alone, so that a row that kills its claimer takes no
      other row down with it.
    """
    mine = report.of(own) if own is not None else None
    if redelivered and (mine is None or mine.lease_left is None):
        # (A message whose own row is still leased comes back for it itself.)
        held = leased_by(task_id) if task_id else None
        if held is not None:
            article_id, left = held
            send_for_lease_end(article_id, left + 1.0)
    if report.took_over or redelivered:
        # Rows a dead claimer left are claimed alone, each by a message of its own (a
        # redelivered message may come after their lease ran out: then no group takes
        # them, and no claim of its own took one over).
        suspects = [
            article_id
            for article_id in suspects_due(limit=settings.PUBLISH_BATCH_SIZE, unsent=True)
            if article_id != own
        ]
        mark_sent(suspects)  # so the groups those messages take over do not send them again
        dispatch_many([(article_id, None) for article_id in suspects])


@shared_task(
    bind=True,
    base=LeaseLimits,
    ignore_result=True,
    max_retries=5,  # a database that stays away: the catch-up sends batches again
    **DURABLE,
    **REQUEUE_ON_HARD_TIME_LIMIT,
)
def publish_batch(self: Task) -> dict:
    """Publish up to PUBLISH_BATCH_SIZE due articles (a group without a row of its own,
    services.publish), then send itself again while the backlog lasts: a full group
    means more may be due. Rows that failed and back off, rows let go, and a redelivered
    batch's dead predecessor's rows get their messages as a save's group leaves them
    (`follow_up`).
    (A whole worker killed: Redis redelivers only after its visibility timeout, and
    the catch-up takes the rows once their lease has run out.)"""
    report = publish_group(
        limit=settings.PUBLISH_BATCH_SIZE,
        retry_in=publish_article.backoff,
        worker=self.request.hostname or "",
        task_id=self.request.id or "",
        send=True,
    )
    if report.full:
        dispatch_batches(1)
    follow_up(
        report,
        redelivered=bool((self.request.delivery_info or {}).get("redelivered")),
        task_id=self.request.id or "",
    )
    return {"claimed": report.claimed, **report.outcomes}


@shared_task(
    bind=True,
    base=LeaseLimits,
    max_retries=5,  # after these the catch-up's reconcile removes what is left
    **DURABLE,
)
def unpublish_article(self: Task, snapshot: dict) -> None:
    article_unpublish(snapshot=snapshot)


class DeliveryRetry(TransientPublishError):
    """A webhook delivery's try failed; it is tried again after its backoff."""


@shared_task(
    bind=True,
    ignore_result=True,
    # The database counts the tries and gives up (PUBLISH_WEBHOOK_MAX_ATTEMPTS), not Celery.
    max_retries=None,
    # Ack only after the try, and requeue when the pool child dies mid-POST (or at the
    # hard time limit); the redelivered message waits for the dead try's lease, and the
    # database's budget stops a delivery that kills its worker every time.
    acks_late=True,
    reject_on_worker_lost=True,
    **REQUEUE_ON_HARD_TIME_LIMIT,
    # A database that is briefly unreachable: the message is tried again.
    autoretry_for=(OperationalError, InterfaceError),
    retry_backoff=True,
    retry_backoff_max=settings.PUBLISH_RETRY_BACKOFF_MAX,
    retry_jitter=True,
    base=DeliveryLimits,  # its time limits: inside the delivery's lease
)
def deliver_webhook(self: Task, delivery_id: int) -> dict:
    """One try of one webhook delivery (services.deliveries): after the publish, never
    inside it."""
    result = webhook_deliver(delivery_id=delivery_id)
    if result.outcome is DeliveryOutcome.RETRY and (result.retry_in or 0) <= eta_horizon():
        raise self.retry(countdown=result.retry_in, exc=DeliveryRetry(result.error))
    # A longer wait (a receiver's Retry-After): no countdown near the broker's visibility
    # timeout (CELERY-NOTES.md); the catch-up sends it when its next_attempt_at comes.
    if result.due_in is not None and result.due_in <= eta_horizon():
        # Came before its backoff was over (a copy sent by the catch-up or a requeue
        # meanwhile): send it again for when it is due.
        dispatch_deliveries([delivery_id], eta=timezone.now() + timedelta(seconds=result.due_in))
    elif result.lease_left is not None and (self.request.delivery_info or {}).get("redelivered"):
        # Redelivered because the worker running it died: the dead try's lease still holds
        # the row. Come back when it runs out; only redeliveries re-arm.
        eta = timezone.now() + timedelta(seconds=result.lease_left)
        dispatch_deliveries([delivery_id], eta=eta)
    return {"outcome": str(result.outcome), "attempt": result.attempt, "reason": result.reason}


@shared_task(ignore_result=True, base=CatchUpLimits)
def publish_catch_up() -> dict:
    """Celery Beat's safety net (CELERY_BEAT_SCHEDULE): see services.catch_up."""
    return asdict(catch_up())


@shared_task(
    ignore_result=True,
    # Acked on receipt: a pass lost with its worker costs nothing (the next request
    # sends another once PUBLISH_REFRESH_LOST_AFTER has passed, and the catch-up runs one).
    acks_late=False,
    base=RefreshLimits,  # its time limits: inside the refresher's lease
)
def refresh_site(after: int | None = None) -> str:
    """The deferred pass of the shared views' refresher (services.refresh), or with
    `after` the watchdog of pass `after`; the pass's outcome."""
    return str(shared_views_deferred(after=after))


def takes_publishes(app: Celery) -> bool:
    """Does this worker consume the queue publishes come on? A worker of the re-render's
    own (`-Q <queue>.rerender`, docs/operations.md) does not: its pass giving way to a
    waiting publish would only stop it after every chunk. Celery selects a worker's
    queues (`-Q`) before its pool forks, so a pool child knows them too."""
    return app.conf.task_default_queue in app.amqp.queues.consume_from


@shared_task(
    name="publishing.tasks.rerender_site",
    ignore_result=True,
    # Acked on receipt: a pass lost with its worker costs a pass (the catch-up sends
    # the next once the lost one's lease has run out); the checkpoint keeps the work.
    acks_late=False,
    # Inside the re-render's lease (PUBLISH_LEASE_SECONDS), as a publish group's.
    base=LeaseLimits,
)
def rerender_site() -> str:
    """One pass of the site's re-render in this worker's look (services.rerender), then
    the next pass while pages are left; on the re-render's own low-priority queue. The
    pass gives way to a waiting publish only in a worker that would take it."""
    outcome = site_rerender(give_way=takes_publishes(rerender_site.app))
    if outcome is RerenderOutcome.MORE:
        dispatch_rerender()
    return str(outcome)
