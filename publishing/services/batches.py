"""A backlog published by batches (issue 9): many due rows per task instead of one
message per article, with every per-row guarantee of the single path.

- **Claim**: up to `limit` due rows with a free lease, in ONE statement:
  `UPDATE … WHERE id IN (SELECT id … ORDER BY publish_at, id LIMIT k FOR UPDATE SKIP
  LOCKED) RETURNING …` on PostgreSQL, so concurrent batches never wait for each other
  nor take the same row; the same statement without SKIP LOCKED on SQLite, where
  writers take turns anyway. Each row gets its own lease, its attempt counted, its
  claim count (the fencing token) raised, and a `PublishAttempt` of its own, exactly
  as `article_claim` gives them.
- **Publish**: each row's page, one after another; a failure is that row's
  (`article_fail`: backoff, dead after PUBLISH_MAX_ATTEMPTS with its alert), never the
  others'.
- **Complete**: the rows that published, in one fenced UPDATE per COMPLETE_EVERY rows
  (`claims = token AND content_hash = hash AND status = pending`, per row); a row
  that does not match (edited meanwhile, or overtaken after its lease ran out) goes
  through `article_complete`, which says which. Then one request to refresh the
  shared pages, for the whole batch.
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

from django.conf import settings
from django.db import connection, transaction
from django.db.models import DurationField, ExpressionWrapper, F, Q, QuerySet, Value
from django.db.models.functions import Now
from django.utils import timezone

from publishing import rollup
from publishing.db import update_returning
from publishing.exceptions import PermanentPublishError
from publishing.logcontext import log_context
from publishing.models import Article, ArticleStatus, AttemptOutcome, PublishAttempt
from publishing.selectors import articles_claimable, db_now_plus, due_q, lease_free_q
from publishing.services.articles import (
    UNFINISHED,
    AttemptResult,
    Claim,
    Outcome,
    _give_up_unfinished,
    article_complete,
    article_fail,
    describe,
    run_publishers,
)
from publishing.services.refresh import shared_views_request

logger = logging.getLogger(__name__)


# A long batch completes what it published every this many rows, so its first rows are
# live (and a worker killed late in the batch loses little) before the batch ends; the
# shared pages are still refreshed once per batch.
COMPLETE_EVERY = 25


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


def _claimable(limit: int) -> QuerySet[Article]:
    """Up to `limit` claimable rows, oldest first: the claim's WHERE.

    On PostgreSQL the ids are locked with SKIP LOCKED, so another batch's statement
    passes them by instead of waiting, and read as `id = ANY(ARRAY(subquery))`: an
    InitPlan, run once. (With `id IN (subquery)` the planner may run the subquery
    again per row, and each run skips the rows the last one locked: more than
    `limit` rows would be claimed.) SQLite runs an uncorrelated IN subquery once."""
    ids = (
        articles_claimable()
        .filter(attempts__lt=settings.PUBLISH_MAX_ATTEMPTS)
        .order_by("publish_at", "id")
        .values("id")[:limit]
    )
    # The outer conditions again: on PostgreSQL, a row changed since the subquery read
    # it is checked again against these (READ COMMITTED's re-check), not against the
    # subquery's snapshot.
    rows = Article.objects.filter(
        due_q() & lease_free_q(), attempts__lt=settings.PUBLISH_MAX_ATTEMPTS
    )
    if connection.vendor != "postgresql":
        return rows.filter(pk__in=ids)
    sql, params = ids.query.sql_with_params()
    table = connection.ops.quote_name(Article._meta.db_table)
    return rows.extra(
        where=[f'{table}."id" = ANY(ARRAY({sql} FOR UPDATE SKIP LOCKED))'], params=list(params)
    )


def _give_up_spent(limit: int) -> None:
    """Due rows whose budget is spent by attempts that never finished (their workers
    died): dead with an alert, as `article_claim` makes them."""
    rows = Article.objects.filter(
        due_q() & lease_free_q(), attempts__gte=settings.PUBLISH_MAX_ATTEMPTS
    )
    for article_id in rows.values_list("id", flat=True)[:limit]:
        with transaction.atomic():
            _give_up_unfinished(rows.filter(pk=article_id), article_id=article_id)


def articles_claim_batch(*, limit: int, worker: str = "", task_id: str = "") -> list[Claim]:
    """Claim up to `limit` due rows in one statement (see the module's doc); a Claim
    each, as `article_claim` returns it, oldest first."""
    _give_up_spent(limit)
    with transaction.atomic():
        claimed = update_returning(
            _claimable(limit),
            lease_expires_at=db_now_plus(settings.PUBLISH_LEASE_SECONDS),
            attempts=F("attempts") + 1,
            claims=F("claims") + 1,
            updated_at=Now(),
        )
        if not claimed:
            return []
        claimed.sort(key=lambda a: (a.publish_at, a.pk))
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
            if (
                Article.objects.filter(
                    pk=claim.article.pk, status=ArticleStatus.PENDING, claims=claim.token
                ).update(lease_expires_at=None, attempts=F("attempts") - 1, updated_at=Now())
                == 1
            ):
                PublishAttempt.objects.filter(pk=claim.record.pk).delete()
                released += 1
    return released


def articles_complete(*, claims: list[Claim]) -> list[AttemptResult]:
    """`article_complete` for many claims: those still current and ours, published in
    one UPDATE; the others through `article_complete` (changed, or overtaken). Asks for
    no refresh of the shared pages: the caller asks once for all."""
    if not claims:
        return []
    fence = Q()
    for claim in claims:
        fence |= Q(pk=claim.article.pk, claims=claim.token, content_hash=claim.content_hash)
    with transaction.atomic():
        done = update_returning(
            # A slug key kept from before keys (`<key>#<id>`, models.key_of) is not its
            # live page's key: such a row completes through article_complete.
            Article.objects.filter(fence, status=ArticleStatus.PENDING).exclude(
                slug_key__contains="#"
            ),
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


def _publish_one(claim: Claim, retry_in: Callable[[int], float]) -> AttemptResult | None:
    """Run the publishers for one claim: None when they succeeded (completed with the
    batch), else the failure's outcome, recorded."""
    with log_context(article_id=claim.article.pk, attempt=claim.attempt):
        return _publish_claimed(claim, retry_in)


def _publish_claimed(claim: Claim, retry_in: Callable[[int], float]) -> AttemptResult | None:
    try:
        run_publishers(claim=claim)  # stops, as a single attempt does, once overtaken
    except PermanentPublishError as exc:
        return article_fail(claim=claim, error=describe(exc), permanent=True)
    except Exception as exc:  # transient, a time limit, or a bug: retried, then dead
        logger.warning(
            "article %s attempt %s raised", claim.article.pk, claim.attempt, exc_info=True
        )
        return article_fail(
            claim=claim, error=describe(exc), permanent=False, retry_in=retry_in(claim.attempt)
        )
    return None


def publish_batch_of_due(
    *,
    retry_in: Callable[[int], float],
    limit: int | None = None,
    worker: str = "",
    task_id: str = "",
) -> BatchReport:
    """Claim a batch, publish each row, complete them, ask for one refresh."""
    limit = limit or settings.PUBLISH_BATCH_SIZE
    report = BatchReport()
    claims = articles_claim_batch(limit=limit, worker=worker, task_id=task_id)
    report.claimed = len(claims)
    if not claims:
        return report
    # Stop taking up rows at half the lease: the rest are let go, not left to run out.
    deadline = time.monotonic() + settings.PUBLISH_LEASE_SECONDS / 2
    succeeded: list[Claim] = []
    try:
        for n, claim in enumerate(claims):
            if len(succeeded) >= COMPLETE_EVERY:
                for result in articles_complete(claims=succeeded):
                    report.outcomes[str(result.outcome)] += 1
                succeeded = []
            if time.monotonic() > deadline:
                report.released = articles_release(claims=claims[n:])
                logger.warning(
                    "batch: half the lease is spent after %d of %d rows; %d let go",
                    n,
                    len(claims),
                    report.released,
                )
                break
            failed = _publish_one(claim, retry_in)
            if failed is None:
                succeeded.append(claim)
                continue
            report.outcomes[str(failed.outcome)] += 1
            if failed.outcome is Outcome.RETRY and failed.retry_in is not None:
                report.retry_in = min(report.retry_in or failed.retry_in, failed.retry_in)
    finally:
        # Also when the task's time limit stops the loop: what did publish completes.
        for result in articles_complete(claims=succeeded):
            report.outcomes[str(result.outcome)] += 1
        if report.outcomes[str(Outcome.PUBLISHED)]:
            transaction.on_commit(shared_views_request, robust=True)
    logger.info(
        "batch: %d claimed; %s",
        report.claimed,
        ", ".join(f"{n} {o}" for o, n in sorted(report.outcomes.items())) or "nothing done",
    )
    return report


def leases_left() -> float | None:
    """Seconds until every due row held by a lease now is free, or None if none is."""
    row = (
        Article.objects.filter(due_q(), lease_expires_at__gt=Now())
        .annotate(db_now=Now())
        .order_by("-lease_expires_at")
        .values("lease_expires_at", "db_now")
        .first()
    )
    if row is None:
        return None
    return max(0.0, (row["lease_expires_at"] - row["db_now"]).total_seconds())
