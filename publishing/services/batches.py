"""A backlog published by batches (issue 9): many due rows per task instead of one
message per article, with every per-row guarantee of the single path.

- **Claim**: up to `limit` due rows with a free lease, in ONE statement:
  `UPDATE … WHERE id IN (SELECT id … ORDER BY publish_at, id LIMIT k FOR UPDATE SKIP
  LOCKED) RETURNING …` on PostgreSQL, so concurrent batches never wait for each other
  nor take the same row; the same statement without SKIP LOCKED on SQLite, where
  writers take turns anyway. Each row gets its own lease, its attempt counted, its
  claim count (the fencing token) raised, and a `PublishAttempt` of its own, exactly
  as `article_claim` gives them (the one fenced lease's `claim_many`, work.lease).
- **Publish**: COMPLETE_EVERY rows at a time; a publisher with `publish_many` (the
  static site: one page guard, one currency query, one note statement and one disk
  flush for the group) takes the group at once, the others row by row. A failure is
  that row's (`article_fail`: backoff, dead after PUBLISH_MAX_ATTEMPTS with its
  alert), never the others'.
- **Complete**: the rows that published, in one fenced UPDATE per COMPLETE_EVERY rows
  (`claims = token AND content_hash = hash AND status = pending`, per row); a row
  that does not match (edited meanwhile, or overtaken after its lease ran out) goes
  through `article_complete`, which says which. Then one request to refresh the
  shared pages, for the whole batch; a full batch (more is due) asks with the
  backlog's longer interval (PUBLISH_REFRESH_BACKLOG_INTERVAL), the batch that drains
  the backlog with the usual one (publishing.services.refresh).
- **Within the lease**: a batch stops taking up rows at half the lease and lets the
  rest go (lease cleared, the attempt not counted), so a slow target cannot make the
  last rows of a batch outlive their lease.

A worker killed mid-batch leaves its rows leased; when the leases run out, any batch,
the single task or the catch-up takes them, and the fencing token keeps the dead
batch's late writes (if any) from counting.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from django.conf import settings
from django.db import transaction
from django.db.models import DurationField, ExpressionWrapper, F, QuerySet, Value
from django.db.models.functions import Now
from django.utils import timezone

from publishing import rollup
from publishing.exceptions import PermanentPublishError
from publishing.logcontext import log_context
from publishing.models import Article, ArticleStatus, AttemptOutcome, PublishAttempt
from publishing.publishers import get_publishers
from publishing.selectors import due_q
from publishing.services.articles import (
    UNFINISHED,
    AttemptResult,
    Claim,
    Outcome,
    _give_up_unfinished,
    article_complete,
    article_fail,
)
from publishing.services.refresh import shared_views_backlog_drained, shared_views_request
from work import lease
from work.db import update_returning
from work.lease import describe

logger = logging.getLogger(__name__)


# A long batch completes what it published every this many rows, so its first rows are
# live (and a worker killed late in the batch loses little) before the batch ends; the
# shared pages are still refreshed once per batch.
COMPLETE_EVERY = 100


@dataclass
class BatchReport:
    claimed: int = 0
    outcomes: Counter = field(default_factory=Counter)
    released: int = 0
    # Seconds until the first row that failed in this batch is due again.
    retry_in: float | None = None

    @property
    def full(self) -> bool:
        """Claimed as many as it could: more may be due."""
        return self.claimed > 0 and self.claimed >= settings.PUBLISH_BATCH_SIZE


def _give_up_spent(limit: int) -> None:
    """Due rows whose budget is spent by attempts that never finished (their workers
    died): dead with an alert, as `article_claim` makes them."""
    rows = Article.objects.filter(
        due_q() & lease.lease_free() & lease.budget_spent(settings.PUBLISH_MAX_ATTEMPTS)
    )
    for article_id in rows.values_list("id", flat=True)[:limit]:
        with transaction.atomic():
            _give_up_unfinished(rows.filter(pk=article_id), article_id=article_id)


def articles_claim_batch(*, limit: int, worker: str = "", task_id: str = "") -> list[Claim]:
    """Claim up to `limit` due rows in one statement (see the module's doc); a Claim
    each, as `article_claim` returns it, oldest first."""
    _give_up_spent(limit)
    with transaction.atomic():
        claimed = lease.claim_many(
            Article.objects.filter(due_q()),
            limit=limit,
            order_by=("publish_at", "id"),
            seconds=settings.PUBLISH_LEASE_SECONDS,
            max_attempts=settings.PUBLISH_MAX_ATTEMPTS,
            updated_at=Now(),
        )
        if not claimed:
            return []
        overtaken = [a.pk for a in claimed if a.claims > 1]
        if overtaken:
            # Earlier attempts still "running" lost their lease: say what became of them.
            lost = PublishAttempt.objects.filter(article_id__in=overtaken, outcome="").update(
                outcome=AttemptOutcome.RETRY, error=UNFINISHED, finished_at=timezone.now()
            )
            rollup.record(outcome=AttemptOutcome.RETRY, count=lost)
        records = PublishAttempt.objects.bulk_create(
            PublishAttempt(
                article=article,
                number=article.attempts,
                content_hash=article.content_hash,
                worker=worker[:255],
                task_id=task_id[:255],
            )
            for article in claimed
        )
    started = time.monotonic()
    return [
        Claim(
            article=article,
            attempt=article.attempts,
            token=article.claims,
            content_hash=article.content_hash,
            record=record,
            started=started,
        )
        for article, record in zip(claimed, records, strict=True)
    ]


def articles_release(*, claims: list[Claim]) -> int:
    """Let claimed rows go without an attempt (the batch ran short of lease): the lease
    cleared, the attempt not counted, its record removed. Fenced, like an outcome."""
    released = 0
    for claim in claims:
        with transaction.atomic():
            if lease.release(
                Article.objects.filter(pk=claim.article.pk, status=ArticleStatus.PENDING),
                claim.token,
                refund_attempt=True,
                updated_at=Now(),
            ):
                PublishAttempt.objects.filter(pk=claim.record.pk).delete()
                released += 1
    return released


def _fenced(claims: list[Claim]) -> QuerySet[Article]:
    """The claimed rows still at each claim's token and content, in one condition."""
    held = [(c.article.pk, c.token, c.content_hash) for c in claims]
    return lease.fenced_many(Article.objects.all(), held, also=("content_hash",))


def articles_complete(*, claims: list[Claim]) -> list[AttemptResult]:
    """`article_complete` for many claims: those still current and ours, published in
    one UPDATE; the others through `article_complete` (changed, or overtaken). Asks for
    no refresh of the shared pages: the caller asks once for all."""
    if not claims:
        return []
    with transaction.atomic():
        done = update_returning(
            # A slug key kept from before keys (`<key>#<id>`, models.key_of) is not its
            # live page's key: such a row completes through article_complete.
            _fenced(claims).filter(status=ArticleStatus.PENDING).exclude(slug_key__contains="#"),
            only=("id",),
            status=ArticleStatus.PUBLISHED,
            # The fence on content_hash means the row's content is what was published.
            published_hash=F("content_hash"),
            published_slug=F("slug"),
            published_slug_key=F("slug_key"),
            published_title=F("title"),
            published_body=F("body"),
            published_publish_at=F("publish_at"),
            published_at=Now(),
            lease_expires_at=None,
            next_attempt_at=None,
            last_error="",
            updated_at=Now(),
        )
        done_ids = {article.pk for article in done}
        # One UPDATE for all; the duration from the claim (the record's start) to now.
        finished_at = timezone.now()
        PublishAttempt.objects.filter(
            pk__in=[c.record.pk for c in claims if c.article.pk in done_ids]
        ).update(
            outcome=AttemptOutcome.OK,
            finished_at=finished_at,
            duration=ExpressionWrapper(
                Value(finished_at) - F("started_at"), output_field=DurationField()
            ),
        )
        # The metrics rollup, in the same transaction (publishing.rollup).
        rollup.record_published(
            observations=[
                (
                    max(0.0, (finished_at - c.record.started_at).total_seconds()),
                    rollup.latency_of(
                        pending_since=c.article.pending_since,
                        created_at=c.article.created_at,
                        publish_at=c.article.publish_at,
                        published_at=finished_at,
                    ),
                )
                for c in claims
                if c.article.pk in done_ids
            ],
            now=finished_at,
        )
    results = []
    for claim in claims:
        if claim.article.pk in done_ids:
            logger.info("article %s published (attempt %s)", claim.article.pk, claim.attempt)
            results.append(AttemptResult(Outcome.PUBLISHED, claim.article.pk, claim.attempt))
        else:
            results.append(article_complete(claim=claim, request_refresh=False))
    return results


def _fail(claim: Claim, exc: Exception, retry_in: Callable[[int], float]) -> AttemptResult:
    """The outcome of a claim whose publisher raised `exc`, recorded as the single
    path records it: permanent → dead now; anything else retried, then dead."""
    with log_context(article_id=claim.article.pk, attempt=claim.attempt):
        if isinstance(exc, PermanentPublishError):
            return article_fail(claim=claim, error=describe(exc), permanent=True)
        logger.warning(
            "article %s attempt %s raised", claim.article.pk, claim.attempt, exc_info=exc
        )
        return article_fail(
            claim=claim, error=describe(exc), permanent=False, retry_in=retry_in(claim.attempt)
        )


def _still_ours(claims: list[Claim]) -> list[Claim]:
    """The claims whose rows this batch still holds (token and content): the rest were
    overtaken meanwhile, and are left to the newer attempt (`run_publishers`' check, for
    a group in one query). Their completion records them as overtaken."""
    held = set(_fenced(claims).filter(status=ArticleStatus.PENDING).values_list("id", flat=True))
    for claim in claims:
        if claim.article.pk not in held:
            logger.warning(
                "article %s attempt %s was overtaken; the publishers after the first are "
                "left to the newer attempt",
                claim.article.pk,
                claim.attempt,
            )
    return [claim for claim in claims if claim.article.pk in held]


def _run_publishers(claims: list[Claim]) -> dict[int, Exception]:
    """Every publisher for a group of claims, in order, as `run_publishers` runs them
    for one: a row that one publisher failed goes to no later one, and before each
    publisher after the first the rows overtaken meanwhile drop out. Each publisher takes
    the group through `publish_many`: the static site at once, the others row by row
    (publishing.publishers.BasePublisher).
    Returns the failures by article id."""
    failures: dict[int, Exception] = {}
    alive = list(claims)
    for number, publisher in enumerate(get_publishers()):
        if number and alive:
            alive = _still_ours(alive)
        try:
            failures |= publisher.publish_many([claim.article for claim in alive])
        except Exception as exc:  # not one row's (its rows' failures are returned)
            failures |= {claim.article.pk: exc for claim in alive}
        alive = [claim for claim in alive if claim.article.pk not in failures]
    return failures


def publish_batch_of_due(
    *,
    retry_in: Callable[[int], float],
    limit: int | None = None,
    worker: str = "",
    task_id: str = "",
) -> BatchReport:
    """Claim a batch, publish it COMPLETE_EVERY rows at a time (each group's pages
    written together, then completed in one statement), ask for one refresh."""
    limit = limit or settings.PUBLISH_BATCH_SIZE
    report = BatchReport()
    claims = articles_claim_batch(limit=limit, worker=worker, task_id=task_id)
    report.claimed = len(claims)
    if not claims:
        shared_views_backlog_drained()
        return report
    # Stop taking up rows at half the lease: the rest are let go, not left to run out.
    deadline = time.monotonic() + settings.PUBLISH_LEASE_SECONDS / 2
    succeeded: list[Claim] = []
    try:
        for n in range(0, len(claims), COMPLETE_EVERY):
            if time.monotonic() > deadline:
                report.released = articles_release(claims=claims[n:])
                logger.warning(
                    "batch: half the lease is spent after %d of %d rows; %d let go",
                    n,
                    len(claims),
                    report.released,
                )
                break
            group = claims[n : n + COMPLETE_EVERY]
            failures = _run_publishers(group)
            succeeded = [claim for claim in group if claim.article.pk not in failures]
            for claim in group:
                if claim.article.pk not in failures:
                    continue
                failed = _fail(claim, failures[claim.article.pk], retry_in)
                report.outcomes[str(failed.outcome)] += 1
                if failed.outcome is Outcome.RETRY and failed.retry_in is not None:
                    report.retry_in = min(report.retry_in or failed.retry_in, failed.retry_in)
            done, succeeded = succeeded, []
            for result in articles_complete(claims=done):
                report.outcomes[str(result.outcome)] += 1
    finally:
        # Also when the task's time limit stops the loop after a group's pages were
        # written: what did publish completes.
        for result in articles_complete(claims=succeeded):
            report.outcomes[str(result.outcome)] += 1
        if report.outcomes[str(Outcome.PUBLISHED)]:
            transaction.on_commit(partial(shared_views_request, backlog=report.full), robust=True)
        elif not report.full:
            transaction.on_commit(shared_views_backlog_drained, robust=True)
    logger.info(
        "batch: %d claimed; %s",
        report.claimed,
        ", ".join(f"{n} {o}" for o, n in sorted(report.outcomes.items())) or "nothing done",
    )
    return report


def leases_left() -> float | None:
    """Seconds until every due row held by a lease now is free, or None if none is."""
    state = lease.row_state(
        Article.objects.filter(due_q(), lease_expires_at__gt=Now()).order_by("-lease_expires_at"),
        "lease_expires_at",
    )
    if state is None:
        return None
    return state.seconds_until("lease_expires_at") or 0.0
