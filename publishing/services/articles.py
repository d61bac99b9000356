"""The state transitions of DESIGN.md, each one conditional UPDATE.

Whoever runs an attempt (a Celery worker, `manage.py publish_pending`, a test) goes
through `article_publish`: claim, call the publishers, complete or fail. The claim
count read after the claim is the fencing token: completing or failing is
`WHERE claims = my_token AND status = pending`, so an attempt whose lease ran out and
was overtaken cannot overwrite a newer attempt's outcome. (`attempts` is the budget of
the current content and starts again at 0 after a requeue or an edit, so it cannot be
the token: an old attempt would match a new one with the same number.) The lease, the
token, the budget and the database clock are the one fenced lease's (work.lease).
"""

from __future__ import annotations

import enum
import logging
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import timedelta
from functools import partial

from django.conf import settings
from django.db import transaction
from django.db.models.functions import Now
from django.utils import timezone

from publishing import rollup
from publishing.exceptions import PermanentPublishError
from publishing.logcontext import log_context
from publishing.models import (
    Article,
    ArticleStatus,
    AttemptOutcome,
    PublishAttempt,
)
from publishing.publishers import get_publishers
from publishing.selectors import article_claim_state, due_q
from publishing.services.alarms import article_dead_alert
from publishing.services.refresh import shared_views_request
from work import lease
from work.lease import describe

logger = logging.getLogger(__name__)


class Outcome(enum.StrEnum):
    PUBLISHED = "published"  # this attempt's content is live
    RETRY = "retry"  # failed; due again after `retry_in` seconds
    DEAD = "dead"  # failed for the last time
    CHANGED = "changed"  # published, but the content changed meanwhile: publish again
    SKIPPED = "skipped"  # nothing claimed, or overtaken: someone else has it, or no work


@dataclass(frozen=True)
class AttemptResult:
    outcome: Outcome
    article_id: int
    attempt: int | None = None
    error: str = ""
    reason: str = ""
    # RETRY: seconds until due again. SKIPPED: seconds until a scheduled or backing-off
    # row is due, or until another attempt's lease runs out.
    retry_in: float | None = None
    due_in: float | None = None
    lease_left: float | None = None


@dataclass(frozen=True)
class Claim:
    article: Article
    attempt: int  # of this content's budget (PUBLISH_MAX_ATTEMPTS)
    token: int  # Article.claims after this claim: the fencing token
    content_hash: str
    record: PublishAttempt
    started: float


UNFINISHED = "never finished: its worker died or ran out of time, and the lease ran out"


# --- claim ---------------------------------------------------------------------------


def article_claim(*, article_id: int, worker: str = "", task_id: str = "") -> Claim | None:
    """Take a due pending row whose lease is free, for PUBLISH_LEASE_SECONDS.

    A row whose budget is spent although no attempt said so (each one killed its worker
    or ran past the time limit) is not claimed again: it goes dead here, so a message
    that kills workers cannot loop forever."""
    rows = Article.objects.filter(due_q(), pk=article_id)
    with transaction.atomic():
        claimed = lease.claim(
            rows,
            seconds=settings.PUBLISH_LEASE_SECONDS,
            max_attempts=settings.PUBLISH_MAX_ATTEMPTS,
            updated_at=Now(),
        )
        if not claimed:
            _give_up_unfinished(rows.filter(lease.lease_free()), article_id=article_id)
            return None
        # As the claim left it, read in the claim's statement: the token is ours.
        [article] = claimed
        if article.claims > 1:
            # Earlier attempts still "running" lost their lease: say what became of them.
            lost = _unfinished(article_id).update(
                outcome=AttemptOutcome.RETRY, error=UNFINISHED, finished_at=timezone.now()
            )
            rollup.record(outcome=AttemptOutcome.RETRY, count=lost)
        record = PublishAttempt.objects.create(
            article=article,
            number=article.attempts,
            content_hash=article.content_hash,
            worker=worker[:255],
            task_id=task_id[:255],
        )
    return Claim(
        article=article,
        attempt=article.attempts,
        token=article.claims,
        content_hash=article.content_hash,
        record=record,
        started=time.monotonic(),
    )


def _unfinished(article_id: int):
    return PublishAttempt.objects.filter(article_id=article_id, outcome="")


def _give_up_unfinished(rows, *, article_id: int) -> bool:
    """Dead, when the budget is spent by attempts that never said how they ended."""
    error = f"the last attempt {UNFINISHED}"
    if not rows.filter(lease.budget_spent(settings.PUBLISH_MAX_ATTEMPTS)).update(
        status=ArticleStatus.DEAD, lease_expires_at=None, last_error=error, updated_at=Now()
    ):
        return False
    lost = _unfinished(article_id).update(
        outcome=AttemptOutcome.DEAD, error=UNFINISHED, finished_at=timezone.now()
    )
    rollup.record(outcome=AttemptOutcome.DEAD, count=lost)
    logger.error("article %s is dead: %s", article_id, error)
    transaction.on_commit(partial(article_dead_alert, article_id=article_id), robust=True)
    return True


def explain_unclaimed(*, article_id: int) -> AttemptResult:
    """Why a claim found nothing: said in the log, and returned to the caller."""
    state = article_claim_state(article_id=article_id)
    due_in = lease_left = None
    if state is None:
        reason = "it no longer exists"
    elif state["status"] != ArticleStatus.PENDING:
        reason = f"it is {state['status']}"
    elif (due_in := state.seconds_until("publish_at")) is not None:
        reason = f"it is scheduled for {state['publish_at']:%Y-%m-%d %H:%M:%S} UTC"
    elif (due_in := state.seconds_until("next_attempt_at")) is not None:
        reason = f"it is backing off for {due_in:.1f}s after a failure"
    elif (lease_left := state.seconds_until("lease_expires_at")) is not None:
        reason = f"another attempt holds its lease for {lease_left:.1f}s"
    else:
        reason = "another executor claimed it first"
    logger.info("article %s not claimed: %s", article_id, reason)
    return AttemptResult(
        Outcome.SKIPPED, article_id, reason=reason, due_in=due_in, lease_left=lease_left
    )


# --- outcomes ------------------------------------------------------------------------


def _finish(claim: Claim, outcome: AttemptOutcome, error: str = "") -> None:
    """Record the attempt's outcome, and count it in the metrics rollup, in the caller's
    transaction (so the counts are exactly what committed)."""
    now = timezone.now()
    seconds = time.monotonic() - claim.started
    PublishAttempt.objects.filter(pk=claim.record.pk).update(
        outcome=outcome,
        error=lease.cut(error),
        finished_at=now,
        duration=timedelta(seconds=seconds),
    )
    latency = None
    if outcome == AttemptOutcome.OK:
        article = claim.article
        latency = rollup.latency_of(
            pending_since=article.pending_since,
            created_at=article.created_at,
            publish_at=article.publish_at,
            published_at=now,
        )
    rollup.record(outcome=outcome, duration=seconds, latency=latency, now=now)


def _pending(claim: Claim):
    return Article.objects.filter(pk=claim.article.pk, status=ArticleStatus.PENDING)


def _fenced(claim: Claim):
    """The row, if this claim still holds it (its token) and it is still pending."""
    return lease.fenced(_pending(claim), claim.token)


def article_complete(*, claim: Claim, request_refresh: bool = True) -> AttemptResult:
    """The publishers succeeded: published, unless the content changed or we were overtaken.
    `request_refresh=False`: the caller asks for the shared views' refresh itself (a
    batch asks once for all its rows)."""
    article_id, attempt = claim.article.pk, claim.attempt
    with transaction.atomic():
        if lease.release(
            _pending(claim).filter(content_hash=claim.content_hash),
            claim.token,
            status=ArticleStatus.PUBLISHED,
            published_hash=claim.content_hash,
            # The fence on content_hash means the slug is the one that was published.
            published_slug=claim.article.slug,
            published_title=claim.article.title,
            published_body=claim.article.body,
            published_publish_at=claim.article.publish_at,
            published_at=Now(),
            next_attempt_at=None,
            last_error="",
            updated_at=Now(),
        ):
            _finish(claim, AttemptOutcome.OK)
            # The shared views (index, feed) are refreshed from the database after the
            # commit, by a pass that begins after it: coalesced, never waited for.
            if request_refresh:
                transaction.on_commit(shared_views_request, robust=True)
            logger.info("article %s published (attempt %s)", article_id, attempt)
            return AttemptResult(Outcome.PUBLISHED, article_id, attempt)
        if lease.release(_pending(claim), claim.token, updated_at=Now()):
            reason = "the content changed while publishing; the new content goes next"
            _finish(claim, AttemptOutcome.RETRY, reason)
            logger.info("article %s attempt %s: %s", article_id, attempt, reason)
            return AttemptResult(Outcome.CHANGED, article_id, attempt, reason=reason)
        reason = "overtaken: the lease ran out and another attempt took over"
        _finish(claim, AttemptOutcome.RETRY, reason)
        logger.warning("article %s attempt %s %s", article_id, attempt, reason)
        return AttemptResult(Outcome.SKIPPED, article_id, attempt, reason=reason)


def article_fail(
    *, claim: Claim, error: str, permanent: bool, retry_in: float = 0.0
) -> AttemptResult:
    """An attempt failed: back off, or dead after the last attempt or a permanent error."""
    article_id, attempt = claim.article.pk, claim.attempt
    give_up = permanent or attempt >= settings.PUBLISH_MAX_ATTEMPTS
    with transaction.atomic():
        # Dead only for the content that failed: an edit made meanwhile gets its chance.
        if give_up and lease.release(
            _pending(claim).filter(content_hash=claim.content_hash),
            claim.token,
            status=ArticleStatus.DEAD,
            next_attempt_at=None,
            last_error=error,
            updated_at=Now(),
        ):
            _finish(claim, AttemptOutcome.DEAD, error)
            transaction.on_commit(partial(article_dead_alert, article_id=article_id), robust=True)
            return AttemptResult(Outcome.DEAD, article_id, attempt, error=error)
        if give_up:
            retry_in = 0.0
        if lease.release(
            _pending(claim),
            claim.token,
            last_error=error,
            next_attempt_at=lease.now_plus(retry_in),
            updated_at=Now(),
        ):
            _finish(claim, AttemptOutcome.RETRY, error)
            logger.warning(
                "article %s attempt %s/%s failed, next in %.1fs: %s",
                article_id,
                attempt,
                settings.PUBLISH_MAX_ATTEMPTS,
                retry_in,
                error,
            )
            return AttemptResult(Outcome.RETRY, article_id, attempt, error=error, retry_in=retry_in)
        _finish(claim, AttemptOutcome.RETRY, f"overtaken by another attempt; {error}")
        return AttemptResult(Outcome.SKIPPED, article_id, attempt, error=error, reason="overtaken")


# --- the attempt ---------------------------------------------------------------------


def run_publishers(*, claim: Claim) -> None:
    """Every publisher, in order, for the claimed content. Before each one after the
    first, the attempt checks that it still holds the row (its token): one overtaken
    meanwhile (its host cut off, or stalled, past its lease) stops there, so a late
    attempt sends no second webhook and writes nothing after the newer one (the site's
    page write checks the token too, under its guard)."""
    for number, publisher in enumerate(get_publishers()):
        if number and not _fenced(claim).exists():
            logger.warning(
                "article %s attempt %s was overtaken; %s and what follows are left to the "
                "newer attempt",
                claim.article.pk,
                claim.attempt,
                type(publisher).__name__,
            )
            return
        publisher.publish(claim.article)


def article_publish(
    *,
    article_id: int,
    retry_in: Callable[[int], float],
    worker: str = "",
    task_id: str = "",
    time_limit: Callable[[], AbstractContextManager] = nullcontext,
) -> AttemptResult:
    """One attempt: claim, publish to every target, complete or fail.

    `retry_in(attempt)` gives the backoff after a transient failure of that attempt:
    the Celery task passes its own retry_backoff policy, the backup executor the same.
    `time_limit()` bounds the publishers: the backup executor passes its own
    (publishing.time_limits); a Celery worker enforces the task's limits itself.

    The publishers run through `run_publishers`, which stops an attempt that was
    overtaken meanwhile; its completion then records it as overtaken.
    """
    with log_context(article_id=article_id, task_id=task_id):
        claim = article_claim(article_id=article_id, worker=worker, task_id=task_id)
        if claim is None:
            return explain_unclaimed(article_id=article_id)
        with log_context(attempt=claim.attempt):
            return _attempt(claim, retry_in=retry_in, time_limit=time_limit)


def _attempt(
    claim: Claim,
    *,
    retry_in: Callable[[int], float],
    time_limit: Callable[[], AbstractContextManager],
) -> AttemptResult:
    """Publish the claimed content to every target, then complete or fail."""
    article_id = claim.article.pk
    try:
        with time_limit():
            run_publishers(claim=claim)
    except PermanentPublishError as exc:
        return article_fail(claim=claim, error=describe(exc), permanent=True)
    except Exception as exc:  # transient, a time limit, or a bug: retried, then dead
        logger.warning("article %s attempt %s raised", article_id, claim.attempt, exc_info=True)
        return article_fail(
            claim=claim, error=describe(exc), permanent=False, retry_in=retry_in(claim.attempt)
        )
    return article_complete(claim=claim)
