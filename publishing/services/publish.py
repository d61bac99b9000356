"""The one publish path: DESIGN.md's state transitions, each one conditional UPDATE.

A publish is a group of claimed rows, one or many, through the same code. A save's own
message (`publish_article`) claims its row first and, in the same statement, up to
PUBLISH_BATCH_SIZE - 1 other due rows, so a burst drains in groups; an idle save's
group is its row alone. A backlog's `publish_batch` and `manage.py publish_pending`
claim groups of due rows without a row of their own.

- **Claim** (`claim_group`): one `UPDATE … RETURNING` through the one fenced lease
  (work.lease.claim_many: SKIP LOCKED on PostgreSQL). Each row gets its own lease, its
  attempt counted, its claim count raised (the fencing token) and a `PublishAttempt`.
  On PostgreSQL the claim, its attempt rows and a read of the message's own row are one
  statement (`_claim_in_one_statement`). A message whose own row another claimer holds,
  or that is done, claims nothing else and ends after that statement (on SQLite, and
  one read that says why). A row whose budget is
  spent by attempts that never finished (each killed its worker) goes dead instead of
  being claimed, so a message that kills workers cannot loop.
- **Publish** (`_Group.publish`): COMPLETE_EVERY rows at a time, every publisher in
  order. A publisher that takes groups (`in_groups`, the static site) takes them at
  once and checks each row's token at its write; the others go row by row, each row
  checked first: still ours (its token), and within the group's time. A failure is
  that row's own: backoff, dead after PUBLISH_MAX_ATTEMPTS with one alert.
- **Complete** (`complete`): the rows that published, in one fenced UPDATE
  (`claims = token AND content_hash = hash AND status = pending`, per row); a row that
  does not match was edited meanwhile (published again next) or overtaken (left to the
  newer attempt). Then one request to refresh the shared pages, after the commit.
- **Within the lease**: a group starts no row after 0.4 of the lease, and no later step
  of a row after 0.6 of it (the soft time limit is at 0.8); the first row of each
  step always goes on, so every group makes progress. A time limit fails the rows it
  stopped (their own time), never the rows it did not reach: the published rows
  complete, the rest are let go (lease cleared, the attempt not counted), and the
  task sends a message for them.

The token fences every write: an attempt whose lease ran out and was overtaken cannot
overwrite a newer attempt's outcome. (`attempts` is the budget of the current content
and starts again at 0 after a requeue or an edit, so it cannot be the token.)
"""

from __future__ import annotations

import dataclasses
import enum
import logging
import time
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db import connection, connections, transaction
from django.db.models import (
    Case,
    DurationField,
    Exists,
    Expression,
    ExpressionWrapper,
    F,
    IntegerField,
    Q,
    QuerySet,
    Value,
    When,
)
from django.db.models.functions import Now, StrIndex, Substr
from django.utils import timezone

from publishing import rollup
from publishing.dispatch import discard_messages, dispatch_many, eta_horizon
from publishing.exceptions import TIME_LIMITS, PermanentPublishError, TransientPublishError
from publishing.logcontext import log_context
from publishing.models import (
    Article,
    ArticleStatus,
    AttemptOutcome,
    FormerAddress,
    PublishAttempt,
    key_of,
)
from publishing.publishers import get_publishers, publish_many_of
from publishing.selectors import backlog_waiting, due_q
from publishing.services.alarms import (
    article_dead_alert,
    articles_dead_alerts,
    site_unwritable_alert,
)
from publishing.services.live_tags import live_tags_write
from publishing.services.refresh import shared_views_backlog_drained, shared_views_request
from work import lease
from work.db import Returning, after_commit, update_returning
from work.lease import describe

logger = logging.getLogger(__name__)

# A long group completes what it published every this many rows, so its first rows are
# live (and a worker killed late in the group loses little) before the group ends.
COMPLETE_EVERY = 100
# A publisher that takes groups gets them this many rows at a time, the group's
# deadline checked between them.
SLICE = 25


class Outcome(enum.StrEnum):
    PUBLISHED = "published"  # this attempt's content is live
    RETRY = "retry"  # failed; due again after `retry_in` seconds
    DEAD = "dead"  # failed for the last time
    CHANGED = "changed"  # published, but the content changed meanwhile: publish again
    SKIPPED = "skipped"  # nothing claimed, or overtaken: someone else has it, or no work
    RELEASED = "released"  # claimed, not tried: the group ran short of time; due again


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
    taken_over: bool = False  # from an attempt that never finished (its claimer died)


@dataclass
class GroupReport:
    """What one group did: a result per claimed row, and why the message's own row was
    not claimed when it was not."""

    claimed: int = 0
    limit: int = 0
    results: list[AttemptResult] = field(default_factory=list)
    unclaimed: AttemptResult | None = None
    # Seconds until the first row that failed in this group is due again.
    retry_in: float | None = None
    # A row was taken over from a claimer that died: its group's other rows wait for
    # messages of their own (`suspects_due`).
    took_over: bool = False

    @property
    def outcomes(self) -> Counter:
        return Counter(str(result.outcome) for result in self.results)

    @property
    def full(self) -> bool:
        """Claimed as many as it could: more may be due."""
        return self.claimed > 0 and self.claimed >= self.limit

    @property
    def released(self) -> int:
        return self.outcomes[str(Outcome.RELEASED)]

    def of(self, article_id: int) -> AttemptResult | None:
        """The result for `article_id`: its outcome, or why it was not claimed."""
        for result in self.results:
            if result.article_id == article_id:
                return result
        return self.unclaimed

    def add(self, result: AttemptResult) -> None:
        self.results.append(result)
        if result.outcome is Outcome.RETRY and result.retry_in is not None:
            self.retry_in = min(self.retry_in or result.retry_in, result.retry_in)


UNFINISHED = "never finished: its worker died or ran out of time, and the lease ran out"


# --- claim ---------------------------------------------------------------------------


def claim_group(
    *, limit: int, first: int | None = None, worker: str = "", task_id: str = ""
) -> list[Claim]:
    """Claim up to `limit` due rows with a free lease in one statement: `first` (a
    message's own row) first and, only while it is claimable, the others saved or
    requeued last (their messages are the queue's last: `_claimable`); without
    `first`, the oldest. A Claim each: `first`, then by date."""
    return _claim_group(limit=limit, first=first, worker=worker, task_id=task_id)[0]


def _claim_group(
    *, limit: int, first: int | None, worker: str, task_id: str
) -> tuple[list[Claim], Seen | None]:
    """`claim_group`, and on PostgreSQL the message's own row as the claim saw it."""
    if first is None:
        _give_up_spent(limit)

    def sort_key(article: Article) -> tuple:
        return (article.pk != first, article.publish_at, article.pk)

    worker, task_id = worker[:255], task_id[:255]
    if connections[Article.objects.db].vendor == "postgresql":
        claimed, records, unfinished, seen = _claim_in_one_statement(
            _claim_statement(limit=limit, first=first),
            worker=worker,
            task_id=task_id,
            first=first,
        )
        claimed.sort(key=sort_key)
        taken_over: set[int] = set()
        if unfinished:
            new = [record.pk for record in records.values()]
            taken_over = _record_unfinished(unfinished, besides=new)
        return _claims(claimed, records, taken_over), seen
    rows, order_by = _claimable(limit=limit, first=first)
    with transaction.atomic():
        claimed = lease.claim_many(
            rows,
            limit=limit,
            order_by=order_by,
            seconds=settings.PUBLISH_LEASE_SECONDS,
            max_attempts=settings.PUBLISH_MAX_ATTEMPTS,
            sort_key=sort_key,
            updated_at=Now(),
        )
        if not claimed:
            return [], None
        again = [a.pk for a in claimed if a.claims > 1]
        taken_over = _record_unfinished(again) if again else set()
        made = PublishAttempt.objects.bulk_create(
            PublishAttempt(
                article=article,
                number=article.attempts,
                content_hash=article.content_hash,
                worker=worker,
                task_id=task_id,
            )
            for article in claimed
        )
    return _claims(claimed, {record.article_id: record for record in made}, taken_over), None


def _claimable(*, limit: int, first: int | None) -> tuple[QuerySet[Article], list]:
    """The rows a claim may take, and their order: `first` first and, only while it is
    claimable, the others saved or requeued last (`updated_at`); without `first` (the
    catch-up, a batch), the oldest.

    Last sent, because the queue holds the saves' messages in the order they were sent:
    a group that took the oldest others left the next 2 x (K - 1) messages for rows it
    had published, and the worker's parent drops those one at a time (a broker round
    trip each, prefetch 1) while both pool children wait: half of a burst's drain
    (docs/performance.md, "Groups take the newest"). Taking those sent last leaves the
    next messages to rows still due, each the start of a group, and the dropped ones
    at the queue's end. Not the newest dates: the admin's "Publish now" sends a list
    sorted newest first. A due row without a message (saved while the broker was
    unreachable) is taken once fewer newer rows are due, or by the catch-up."""
    due = Article.objects.filter(due_q())
    # A row left leased by a claimer that died is only ever claimed alone, by its own
    # message: if it is what killed the claimer, it takes no other row down with it.
    clean = Q(lease_expires_at__isnull=True)
    order_by: list[str | Expression]
    if first is None:
        rows, order_by = due.filter(clean), ["publish_at", "id"]
    else:
        own = due.filter(lease.lease_free(), clean, pk=first)
        own = own.filter(lease.within_budget(settings.PUBLISH_MAX_ATTEMPTS))
        others = clean & Exists(own) if limit > 1 else Q(pk__in=[])
        rows = due.filter(Q(pk=first) | others)
        first_key = Case(When(pk=first, then=0), default=1, output_field=IntegerField())
        order_by = [first_key, "-updated_at", "-id"]
    return rows, order_by


def _claims(
    claimed: list[Article], records: dict[int, PublishAttempt], taken_over: set[int]
) -> list[Claim]:
    started = time.monotonic()
    return [
        Claim(
            article,
            article.attempts,
            article.claims,
            article.content_hash,
            records[article.pk],
            started,
            taken_over=article.pk in taken_over,
        )
        for article in claimed
    ]


# The claim's statement on PostgreSQL, compiled once per shape (Django took longer to
# compile it than the database to run it: most of a message's CPU time in a burst,
# where most messages find their row in another group). Keyed by what changes its SQL;
# a message's own row is a parameter, compiled as FIRST_PLACEHOLDER and replaced.
_claim_statements: dict[tuple, Returning[Article]] = {}
FIRST_PLACEHOLDER = -(2**62) - 18


def _claim_statement(*, limit: int, first: int | None) -> Returning[Article] | None:
    seconds, budget = settings.PUBLISH_LEASE_SECONDS, settings.PUBLISH_MAX_ATTEMPTS
    key = (Article.objects.db, limit, first is None, seconds, budget)
    statement = _claim_statements.get(key)
    if statement is None:
        rows, order_by = _claimable(limit=limit, first=None if first is None else FIRST_PLACEHOLDER)
        statement = lease.claim_many_returning(
            rows,
            limit=limit,
            order_by=order_by,
            seconds=seconds,
            max_attempts=budget,
            updated_at=Now(),
        )
        if statement is None:
            return None
        _claim_statements[key] = statement
    if first is None:
        return statement
    params = [first if param == FIRST_PLACEHOLDER else param for param in statement.params]
    return dataclasses.replace(statement, params=params)


def _record_unfinished(article_ids: list[int], *, besides: Sequence[int] = ()) -> set[int]:
    """Earlier attempts of these rows still "running" lost their lease (their claimer
    died): recorded as never finished, and counted, in one transaction. The rows that
    had one (`besides`: the attempt rows the claim itself made)."""
    with transaction.atomic():
        lost = PublishAttempt.objects.filter(article_id__in=article_ids, outcome="")
        lost = lost.exclude(pk__in=besides)
        taken_over = set(lost.values_list("article_id", flat=True))
        count = lost.update(
            outcome=AttemptOutcome.RETRY, error=UNFINISHED, finished_at=timezone.now()
        )
        rollup.record(outcome=AttemptOutcome.RETRY, count=count)
    return taken_over


@dataclass(frozen=True)
class Seen:
    """A message's own row as its claim's statement saw it (None: not there), so that a
    claim that took nothing says why without reading the row again."""

    state: lease.RowState | None


# What a claim's statement reads of the message's own row, for `lease.why_not`.
OWN_FIELDS = ("status", "publish_at", "next_attempt_at", "lease_expires_at")


def _claim_in_one_statement(
    returning: Returning[Article] | None, *, worker: str, task_id: str, first: int | None
) -> tuple[list[Article], dict[int, PublishAttempt], list[int], Seen | None]:
    """PostgreSQL: the claim's UPDATE and the INSERT of its attempt rows as one statement
    (a data-modifying WITH), committed on its own: the claim and its attempts' record
    are still all or nothing, in one round trip instead of four (BEGIN, UPDATE, INSERT,
    COMMIT). Returns the claimed rows, their attempt rows by article id, and the rows
    that still had an attempt without an outcome before this claim (read in the
    statement's snapshot, which does not see its own INSERT): their claimer died, and
    `_record_unfinished` says so, in a transaction of its own. (A worker killed between
    the two leaves both attempts unfinished; the next claim records both.)
    With `first`, the same statement also reads that row as it was before the claim
    (`Seen`): why it was not claimed, when it was not, costs no second round trip."""
    if returning is None:
        return [], {}, [], None
    connection = connections[returning.db]
    quote = connection.ops.quote_name
    attempts = quote(PublishAttempt._meta.db_table)
    columns = ", ".join(f"claimed.{column}" for column in returning.columns)
    sql = (
        f"WITH claimed AS ({returning.sql}), "
        f"made AS (INSERT INTO {attempts} (article_id, number, content_hash, started_at, "
        "outcome, error, worker, task_id) "
        "SELECT claimed.id, claimed.attempts, claimed.content_hash, %s, '', '', %s, %s "
        "FROM claimed RETURNING id, article_id, started_at)"
    )
    claimed_rows = "claimed JOIN made ON made.article_id = claimed.id"
    select = (
        f"SELECT {columns}, made.id, made.started_at, EXISTS (SELECT 1 FROM {attempts} a "
        "WHERE a.article_id = claimed.id AND a.outcome = '')"
    )
    params = [*returning.params, timezone.now(), worker, task_id]
    if first is None:
        sql += f" {select} FROM {claimed_rows}"
    else:
        # The row before the claim (the WITH's snapshot): one row, or none if it is gone,
        # joined to each claimed row, or alone when nothing was claimed.
        own = ", ".join(f"own.{quote(name)}" for name in OWN_FIELDS)
        sql += (
            f", own AS (SELECT {', '.join(quote(name) for name in OWN_FIELDS)}, "
            f"STATEMENT_TIMESTAMP() AS db_now FROM {quote(Article._meta.db_table)} "
            f"WHERE id = %s) {select}, {own}, own.db_now "
            f"FROM own LEFT JOIN ({claimed_rows}) ON TRUE"
        )
        params.append(first)
    # Inside a caller's transaction, a savepoint as `transaction.atomic()` would make.
    savepoint = transaction.atomic() if connection.in_atomic_block else nullcontext()
    with savepoint, connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    width = len(returning.columns)
    seen = None
    if first is not None:
        seen = Seen(None)
        if rows:
            *values, db_now = rows[0][width + 3 :]
            seen = Seen(lease.RowState(dict(zip(OWN_FIELDS, values, strict=True)), db_now))
        key = returning.columns.index(quote("id"))
        rows = [row for row in rows if row[key] is not None]
    claimed = returning.rows(rows)
    records: dict[int, PublishAttempt] = {}
    unfinished: list[int] = []
    for article, row in zip(claimed, rows, strict=True):
        record_id, record_started, had_unfinished = row[width : width + 3]
        record = PublishAttempt(
            id=record_id,
            article=article,
            number=article.attempts,
            content_hash=article.content_hash,
            started_at=record_started,
            worker=worker,
            task_id=task_id,
        )
        record._state.adding, record._state.db = False, returning.db
        records[article.pk] = record
        if had_unfinished:
            unfinished.append(article.pk)
    return claimed, records, unfinished, seen


def article_claim(*, article_id: int, worker: str = "", task_id: str = "") -> Claim | None:
    """`claim_group` of one row: its Claim, or None (dead if its budget is spent)."""
    claims = claim_group(limit=1, first=article_id, worker=worker, task_id=task_id)
    if not claims:
        _give_up_if_spent(article_id)
    return claims[0] if claims else None


def _unfinished(article_ids: list[int]):
    return PublishAttempt.objects.filter(article_id__in=article_ids, outcome="")


def _give_up_unfinished(rows: QuerySet[Article], *, article_id: int) -> bool:
    """Dead, when the budget is spent by attempts that never said how they ended."""
    error = f"the last attempt {UNFINISHED}"
    if not rows.filter(lease.budget_spent(settings.PUBLISH_MAX_ATTEMPTS)).update(
        status=ArticleStatus.DEAD, lease_expires_at=None, last_error=error, updated_at=Now()
    ):
        return False
    lost = _unfinished([article_id]).update(
        outcome=AttemptOutcome.DEAD, error=UNFINISHED, finished_at=timezone.now()
    )
    rollup.record(outcome=AttemptOutcome.DEAD, count=lost)
    logger.error("article %s is dead: %s", article_id, error)
    after_commit(article_dead_alert, article_id=article_id)
    return True


def _give_up_if_spent(article_id: int) -> bool:
    with transaction.atomic():
        rows = Article.objects.filter(due_q(), lease.lease_free(), pk=article_id)
        return _give_up_unfinished(rows, article_id=article_id)


def _give_up_spent(limit: int) -> None:
    """Due rows whose budget is spent by attempts that never finished: dead, each with
    its alert, instead of claimed again."""
    rows = Article.objects.filter(
        due_q() & lease.lease_free() & lease.budget_spent(settings.PUBLISH_MAX_ATTEMPTS)
    )
    for article_id in rows.values_list("id", flat=True)[:limit]:
        with transaction.atomic():
            _give_up_unfinished(rows.filter(pk=article_id), article_id=article_id)


def explain_unclaimed(*, article_id: int, seen: Seen | None = None) -> AttemptResult:
    """Why a claim found nothing: said in the log, and returned to the caller. A due row
    whose lease is free was not claimed because its budget is spent: it goes dead.
    `seen`: the row as the claim's statement read it (else it is read now)."""
    scheduled = ("publish_at", lambda at, _: f"it is scheduled for {at:%Y-%m-%d %H:%M:%S} UTC")
    pending, holder = ArticleStatus.PENDING, "another attempt"
    if seen is not None:
        why = lease.why_not(seen.state, pending=pending, holder=holder, waits=[scheduled])
    else:
        rows = Article.objects.filter(pk=article_id)
        why = lease.why_not_claimed(rows, pending=pending, holder=holder, waits=[scheduled])
    if why is None:
        spent = _give_up_if_spent(article_id)
        # Due, free and within budget, yet not claimed: on PostgreSQL a short row lock
        # of another statement made the claim's SKIP LOCKED pass it by. Try again soon.
        why = lease.WhyNot(
            "its budget is spent: it is dead" if spent else "its row was locked",
            due_in=None if spent else 1.0,
        )
    logger.info("article %s not claimed: %s", article_id, why.reason)
    return AttemptResult(
        Outcome.SKIPPED,
        article_id,
        reason=why.reason,
        due_in=why.due_in,
        lease_left=why.lease_left,
    )


# --- outcomes ------------------------------------------------------------------------


def _finish(claim: Claim, outcome: AttemptOutcome, error: str = "") -> None:
    """Record one attempt's outcome other than published, and count it in the metrics
    rollup, in the caller's transaction (so the counts are exactly what committed)."""
    now = timezone.now()
    seconds = time.monotonic() - claim.started
    record = PublishAttempt.objects.filter(pk=claim.record.pk)
    if record.filter(outcome="").update(
        outcome=outcome,
        error=lease.cut(error),
        finished_at=now,
        duration=timedelta(seconds=seconds),
    ):
        rollup.record(outcome=outcome, duration=seconds, now=now)
    else:
        # Said already: the claim that took the row over recorded this attempt as never
        # finished, and counted it. It did finish, late: say how, count it once.
        record.update(error=lease.cut(f"{UNFINISHED}; then, late: {error}"))


def _pending(claim: Claim) -> QuerySet[Article]:
    return Article.objects.filter(pk=claim.article.pk, status=ArticleStatus.PENDING)


def _fenced(claims: list[Claim]) -> QuerySet[Article]:
    """The claimed rows still at each claim's token and content, in one condition."""
    held = [(c.article.pk, c.token, c.content_hash) for c in claims]
    return lease.fenced_many(Article.objects.all(), held, also=("content_hash",))


def complete(*, claims: list[Claim], request_refresh: bool = True) -> list[AttemptResult]:
    """The publishers succeeded for `claims`: those still current and ours published in
    one UPDATE; each other one through `_complete_one` (changed, or overtaken). Then,
    after the commit, one request to refresh the shared pages (unless the caller asks
    itself)."""
    if not claims:
        return []
    with transaction.atomic():
        done = update_returning(
            lease.in_lock_order(_fenced(claims).filter(status=ArticleStatus.PENDING)),
            only=("id", "published_tags", "published_byline", "published_publish_at"),
            status=ArticleStatus.PUBLISHED,
            # The fence on content_hash means the row's content is what was published.
            published_hash=F("content_hash"),
            published_slug=F("slug"),
            published_slug_key=_live_key(),
            published_title=F("title"),
            published_body=F("body"),
            published_publish_at=F("publish_at"),
            published_description=F("description"),
            published_language=F("language"),
            published_byline=F("byline"),
            published_tags=F("tags"),
            published_at=Now(),
            lease_expires_at=None,
            next_attempt_at=None,
            last_error="",
            updated_at=Now(),
        )
        done_ids = {article.pk for article in done}
        live_tags_write(done)
        published = [c for c in claims if c.article.pk in done_ids]
        if published:
            _record_published(published)
            _record_moves([c.article for c in published])
        results = []
        for claim in claims:
            with log_context(article_id=claim.article.pk, attempt=claim.attempt):
                if claim.article.pk not in done_ids:
                    results.append(_complete_one(claim))
                    continue
                logger.info("article %s published (attempt %s)", claim.article.pk, claim.attempt)
                results.append(AttemptResult(Outcome.PUBLISHED, claim.article.pk, claim.attempt))
        # The shared views (index, feed) are refreshed from the database after the
        # commit, by a pass that begins after it: coalesced, never waited for.
        if request_refresh and any(r.outcome is Outcome.PUBLISHED for r in results):
            transaction.on_commit(shared_views_request, robust=True)
    return results


def _live_key() -> Case:
    """The key of the page a slug is published at: the slug's key, without the `#<id>`
    that a key kept from before keys carries (models.key_of)."""
    cut_at = StrIndex(F("slug_key"), Value("#"))
    return Case(
        When(slug_key__contains="#", then=Substr(F("slug_key"), 1, cut_at - 1)),
        default=F("slug_key"),
    )


def _record_moves(articles: list[Article]) -> None:
    """The slugs the published articles left, their former addresses (FormerAddress:
    the folder sends readers on to the listed article that left it last); an article
    back at a slug it had left has that one no longer. No statement when none moved
    (the claim read each row's live slug)."""
    # A slug re-spelt within its key (`Foo` → `foo`) is the same page's folder on a file
    # system that ignores case: no former address, whose page would take the live one's.
    moved = [a for a in articles if a.published_slug and key_of(a.published_slug) != key_of(a.slug)]
    if not moved:
        return
    now = timezone.now()
    # Each its own row (article and slug together): by `IN … AND IN …`, an article that
    # moved in the same group to a slug another one had left took that one's row too.
    back = Q()
    for article in moved:
        back |= Q(article_id=article.pk, slug=article.slug)
    FormerAddress.objects.filter(back).delete()
    FormerAddress.objects.bulk_create(
        [FormerAddress(slug=a.published_slug, article_id=a.pk, left_at=now) for a in moved],
        update_conflicts=True,
        unique_fields=["article", "slug"],
        update_fields=["left_at"],
    )


def _record_published(claims: list[Claim]) -> None:
    """Their attempts OK, in one UPDATE (the duration from each record's start), and the
    metrics rollup, in the completion's transaction (publishing.rollup)."""
    finished_at = timezone.now()
    PublishAttempt.objects.filter(pk__in=[c.record.pk for c in claims]).update(
        outcome=AttemptOutcome.OK,
        finished_at=finished_at,
        duration=ExpressionWrapper(
            Value(finished_at) - F("started_at"), output_field=DurationField()
        ),
    )
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
        ],
        now=finished_at,
    )


def _complete_one(claim: Claim) -> AttemptResult:
    """A claim the group's UPDATE did not publish: the content changed meanwhile
    (released, published again next), or the claim was overtaken (the newer attempt
    has the row)."""
    article_id, attempt = claim.article.pk, claim.attempt
    done = Article.objects.filter(
        pk=article_id,
        status=ArticleStatus.PUBLISHED,
        published_hash=claim.content_hash,
        claims=claim.token,
    )
    if done.exists():  # completed already by this claim (a time limit came after)
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


def article_complete(*, claim: Claim) -> AttemptResult:
    """`complete` of one claim."""
    return complete(claims=[claim])[0]


def article_fail(
    *,
    claim: Claim,
    error: str,
    permanent: bool,
    retry_in: float = 0.0,
    alert: Callable[[int], object] | None = None,
    counted: bool = True,
) -> AttemptResult:
    """An attempt failed: back off, or dead after the last attempt or a permanent error
    (alerted after the commit, or by `alert(article_id)` when the caller sends its
    alerts later). Content edited meanwhile is not this failure's: it goes next, now,
    with the fresh budget the edit gave it. Not `counted` (the target took no article:
    TransientPublishError.site_wide): backed off with its attempt given back."""
    article_id, attempt = claim.article.pk, claim.attempt
    give_up = permanent or (counted and attempt >= settings.PUBLISH_MAX_ATTEMPTS)
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
            if alert is not None:
                alert(article_id)
            else:
                after_commit(article_dead_alert, article_id=article_id)
            return AttemptResult(Outcome.DEAD, article_id, attempt, error=error)
        edited = _pending(claim).exclude(content_hash=claim.content_hash)
        if lease.release(edited, claim.token, updated_at=Now()):
            reason = "the content changed while publishing; the new content goes next"
            _finish(claim, AttemptOutcome.RETRY, f"{error} ({reason})")
            return AttemptResult(Outcome.CHANGED, article_id, attempt, error=error, reason=reason)
        if give_up:
            retry_in = 0.0
        if lease.release(
            _pending(claim),
            claim.token,
            refund_attempt=not counted,
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


def release(*, claims: list[Claim]) -> list[AttemptResult]:
    """Let claimed rows go without an attempt (the group ran short of time): the lease
    cleared, the attempt not counted, its record removed. Fenced, like an outcome: a
    claim overtaken meanwhile is recorded as such."""
    results = []
    for claim in claims:
        with transaction.atomic():
            if lease.release(_pending(claim), claim.token, refund_attempt=True, updated_at=Now()):
                PublishAttempt.objects.filter(pk=claim.record.pk).delete()
                results.append(AttemptResult(Outcome.RELEASED, claim.article.pk, claim.attempt))
            else:
                reason = "overtaken: the lease ran out and another attempt took over"
                _finish(claim, AttemptOutcome.RETRY, reason)
                results.append(
                    AttemptResult(Outcome.SKIPPED, claim.article.pk, claim.attempt, reason=reason)
                )
    return results


# --- the group -----------------------------------------------------------------------


class _Group:
    """One group's run: which claims have an outcome, which one a publisher is on."""

    def __init__(
        self,
        claims: list[Claim],
        retry_in: Callable[[int], float],
        own: int | None = None,
        send: bool = False,
    ):
        self.claims = claims
        self.retry_in = retry_in
        self.own = own  # the message's own row: its next message is the task's business
        self.send = send  # the rows' next messages (`send_next`)
        self.report = GroupReport(claimed=len(claims))
        self.done: set[int] = set()  # claims with an outcome (or let go)
        # Rows that went dead: alerted once the group is over, never inside its lease
        # (an alert's mail or webhook may take its whole timeout).
        self.dead: list[int] = []
        self.unwritable = ""  # a site-wide failure's error, alerted after the group too
        self.in_flight: list[Claim] = []  # what a publisher is working on now
        # Start no row after 0.4 of the lease, and no later step of a row after 0.6 of
        # it (the soft time limit comes at 0.8): each row's work stays inside its lease.
        lease_seconds = settings.PUBLISH_LEASE_SECONDS
        self.start_by = claims[0].started + lease_seconds * 0.4
        self.finish_by = claims[0].started + lease_seconds * 0.6

    def settle(self, results: list[AttemptResult]) -> None:
        for result in results:
            self.report.add(result)
            self.done.add(result.article_id)
        if self.send:
            send_next(results, own=self.own)

    def fail(self, claim: Claim, exc: BaseException) -> None:
        """The outcome of a claim whose publisher raised `exc`: permanent → dead now;
        anything else retried, then dead."""
        with log_context(article_id=claim.article.pk, attempt=claim.attempt):
            if isinstance(exc, PermanentPublishError):
                result = article_fail(
                    claim=claim, error=describe(exc), permanent=True, alert=self.dead.append
                )
            else:
                # No page could be written (TransientPublishError.site_wide): every
                # article meets it until an operator mends the target, so no traceback
                # each, the budget's longest wait between tries, and no attempt counted.
                site_wide = isinstance(exc, TransientPublishError) and exc.site_wide
                if site_wide:
                    self.unwritable = describe(exc)
                else:
                    logger.warning(
                        "article %s attempt %s raised",
                        claim.article.pk,
                        claim.attempt,
                        exc_info=exc,
                    )
                waited = settings.PUBLISH_MAX_ATTEMPTS if site_wide else claim.attempt
                result = article_fail(
                    claim=claim,
                    error=describe(exc),
                    permanent=False,
                    retry_in=self.retry_in(waited),
                    alert=self.dead.append,
                    counted=not site_wide,
                )
        self.settle([result])

    def ours(self, claims: list[Claim]) -> list[Claim]:
        """The claims whose rows this group still holds (token and content), in one
        query: the rest were edited or overtaken, and are left to the newer attempt."""
        held = set(
            _fenced(claims).filter(status=ArticleStatus.PENDING).values_list("id", flat=True)
        )
        # Their outcome now: changed (the new content goes next), or overtaken.
        self.settle([_complete_one(c) for c in claims if c.article.pk not in held])
        return [claim for claim in claims if claim.article.pk in held]

    def publish(self, claims: list[Claim]) -> list[Claim]:
        """Every publisher for `claims`, in order; returns the claims every publisher
        published. A claim that a publisher failed goes to no later one; one overtaken
        or edited has its outcome now; one that a publisher going row by row did not
        reach before its deadline (`start_by` for the first publisher, `finish_by` for
        the later ones) is left without one, and let go. The first row of each
        publisher's turn always goes on, so every group makes progress."""
        alive = claims
        for number, publisher in enumerate(get_publishers()):
            if not alive:
                break
            if publisher.in_groups:
                # Checks each row's token at its own write too; takes the group in
                # slices, the deadline checked between them (a slow bucket's PUTs).
                alive = self.ours(alive) if number else alive
                kept: list[Claim] = []
                deadline = self.finish_by if number else self.start_by
                for n in range(0, len(alive), SLICE):
                    if n and time.monotonic() > deadline:
                        break
                    kept += self.publish_slice(publisher, alive[n : n + SLICE], alive)
                alive = kept
                continue
            kept = []
            deadline = self.finish_by if number else self.start_by
            for claim in alive:
                if kept and time.monotonic() > deadline:
                    break
                if number and not self.ours([claim]):
                    continue
                self.in_flight = [claim]
                with log_context(article_id=claim.article.pk, attempt=claim.attempt):
                    try:
                        publisher.publish(claim.article)
                    except TIME_LIMITS:
                        raise
                    except Exception as exc:  # transient, permanent, or a bug: its own
                        self.in_flight = []
                        self.fail(claim, exc)
                        continue
                self.in_flight = []
                kept.append(claim)
            alive = kept
        return alive

    def publish_slice(self, publisher, claims: list[Claim], group: list[Claim]) -> list[Claim]:
        """`publish_many` of a publisher that takes groups: the claims it published.
        `group`: the claims this slice's completion lists with it (`listed_with`)."""
        self.in_flight = claims
        failures = publish_many_of(
            publisher,
            [claim.article for claim in claims],
            listed_with=[claim.article for claim in group],
        )
        self.in_flight = []
        for exc in failures.values():
            if isinstance(exc, TIME_LIMITS):
                raise exc
        for claim in claims:
            if claim.article.pk in failures:
                self.fail(claim, failures[claim.article.pk])
        return [claim for claim in claims if claim.article.pk not in failures]

    def run(self, time_limit: Callable[[], AbstractContextManager]) -> None:
        published: list[Claim] = []
        try:
            with time_limit():
                for n in range(0, len(self.claims), COMPLETE_EVERY):
                    if n and time.monotonic() > self.start_by:
                        break
                    published = self.publish(self.claims[n : n + COMPLETE_EVERY])
                    self.settle(complete(claims=published, request_refresh=False))
                    published = []
        except TIME_LIMITS as exc:
            # The rows it stopped ran out of time themselves: their attempt failed.
            logger.warning("the group stopped at its time limit: %s", describe(exc))
            # The limit may have come in the middle of a statement: the connection is
            # then unusable, and the outcomes below need a fresh one.
            if not connection.in_atomic_block:
                connection.close()
            for claim in self.in_flight:
                self.fail(claim, exc)
        finally:
            # Also when a time limit or an error stopped the loop after a group's
            # pages were written: what did publish completes; the rows not started are
            # let go. A row a publisher was on when an error (or the worker's kill)
            # stopped it keeps its lease and its attempt: the next claim records it as
            # never finished, so a row that always hangs ends dead, not looping.
            unsettled = [claim for claim in published if claim.article.pk not in self.done]
            try:
                self.settle(complete(claims=unsettled, request_refresh=False))
            finally:
                started = {claim.article.pk for claim in self.in_flight}
                rest = [c for c in self.claims if c.article.pk not in self.done | started]
                if rest:
                    self.settle(release(claims=rest))
                    logger.warning(
                        "group: %d of %d rows let go, untried", len(rest), len(self.claims)
                    )


def send_next(results: list[AttemptResult], *, own: int | None) -> None:
    """The next message of each row besides `own` that these outcomes leave due: a row
    that failed and backs off, for when it is due (as a task's own retry would be); one
    changed meanwhile or let go, now. Their own messages have ended (they found the row
    held), so these are their only ones: a group run by a task (`publish_group(send=
    True)`) sends them as each outcome commits (at once, outside a caller's
    transaction), not when the group ends, so a worker that dies later in the group (a
    kill, its hard time limit, an alert that hangs) leaves no row without a message (a
    review's finding: such a row waited for the catch-up). A message sent twice ends
    after one claim. A soft time limit that comes during the send is let through to the
    group once the messages are sent (the limit comes once: the hard one is later)."""
    now, horizon = timezone.now(), eta_horizon()
    batch = [
        (r.article_id, now + timedelta(seconds=r.retry_in) if r.retry_in else None)
        for r in results
        if r.article_id != own
        and (
            r.outcome in (Outcome.CHANGED, Outcome.RELEASED)
            or (r.outcome is Outcome.RETRY and r.retry_in is not None and r.retry_in <= horizon)
        )
    ]
    if not batch:
        return

    def send() -> None:
        try:
            dispatch_many(batch)
        except TIME_LIMITS:
            dispatch_many(batch)
            raise

    # Not `robust`: a time limit must reach the group (the broker's own errors are
    # dispatch_many's to handle and log).
    transaction.on_commit(send)


def publish_group(
    *,
    retry_in: Callable[[int], float],
    first: int | None = None,
    worker: str = "",
    task_id: str = "",
    time_limit: Callable[[], AbstractContextManager] = nullcontext,
    limit: int | None = None,
    send: bool = False,
) -> GroupReport:
    """Claim a group (`claim_group`: `first` first), publish it COMPLETE_EVERY rows at a
    time, complete or fail each row, let go what it could not try, and ask for one
    refresh of the shared pages.

    `retry_in(attempt)` gives the backoff after a transient failure of that attempt (the
    Celery task's retry_backoff policy). `time_limit()` bounds the publishers: the
    backup executor passes its own (publishing.time_limits); a Celery worker enforces
    the task's limits itself. `limit`: PUBLISH_BATCH_SIZE by default. `send`: the
    messages of the rows its outcomes leave due, besides `first` (`send_next`), as the
    tasks ask; the backup executor, which runs without a broker, claims them again
    itself."""
    limit = limit or settings.PUBLISH_BATCH_SIZE
    with log_context(article_id=first, task_id=task_id):
        claims, seen = _claim_group(limit=limit, first=first, worker=worker, task_id=task_id)
        if not claims:
            report = GroupReport(limit=limit)
            if first is not None:
                report.unclaimed = explain_unclaimed(article_id=first, seen=seen)
            else:
                shared_views_backlog_drained()
            return report
        group = _Group(claims, retry_in, own=first, send=send)
        group.report.limit = limit
        group.report.took_over = any(claim.taken_over for claim in claims)
        try:
            group.run(time_limit)
        finally:
            report = group.report
            _drop_their_messages(claims, first, report)
            if group.dead:  # (the catch-up sends any a kill left unsent)
                after_commit(articles_dead_alerts, article_ids=sorted(group.dead))
            if group.unwritable:
                after_commit(site_unwritable_alert, error=group.unwritable)
            if report.outcomes[str(Outcome.PUBLISHED)] or group.dead:
                # A full group with more due rows behind it is a backlog draining (a
                # batch's, or a burst of saves): its pass comes within the backlog's
                # interval; the group that leaves none due brings it forward. A death
                # asks for one too: its attempt may have written a page of the version
                # refused (a new slug's, a later target failing), which the pass that
                # settles its note takes off (a review's finding: it stayed until the
                # catch-up's pass).
                backlog = report.full and (first is None or _more_due())
                after_commit(shared_views_request, backlog=backlog)
            elif first is None and not report.full:
                transaction.on_commit(shared_views_backlog_drained, robust=True)
    if len(claims) > 1:
        logger.info(
            "group of %d: %s",
            report.claimed,
            ", ".join(f"{n} {o}" for o, n in sorted(report.outcomes.items())),
        )
    if first is not None and report.of(first) is None:
        report.unclaimed = explain_unclaimed(article_id=first)
    return report


def _drop_their_messages(claims: list[Claim], first: int | None, report: GroupReport) -> None:
    """The messages the saves of the rows this group published besides `first` sent
    (each row's Article.message_id as the claim read it: the save whose content was
    published, or an earlier one), dropped unrun by the workers: their work is done.
    Only once published: a row whose group's worker died keeps its message, which takes
    the row over once the lease ends, as any message of a row left leased does. A save
    after the claim stored a new id, and its message runs; so does any message not
    dropped in time (it ends after one claim)."""
    published = {r.article_id for r in report.results if r.outcome is Outcome.PUBLISHED}
    ids = [
        c.article.message_id
        for c in claims
        if c.article.pk != first
        and c.article.pk in published
        and c.article.message_id
        # Only at a content's first attempt: a row tried before may have been its own
        # message's row, and that message's group may still be running other rows (a
        # row that failed there is claimed again here); its redelivery, if its worker
        # dies, must still come back for them (a review's finding).
        and c.attempt == 1
        and not c.taken_over
    ]
    if ids:  # (after the completion commits: at once, unless a caller's transaction holds it)
        after_commit(discard_messages, ids)


def _more_due() -> bool:
    """A due row with a free lease is left (one query, after a full group)."""
    return backlog_waiting(1)


def article_publish(
    *,
    article_id: int,
    retry_in: Callable[[int], float],
    worker: str = "",
    task_id: str = "",
    time_limit: Callable[[], AbstractContextManager] = nullcontext,
) -> AttemptResult:
    """One attempt of one row: `publish_group` of the row alone; its result."""
    report = publish_group(
        limit=1,
        first=article_id,
        retry_in=retry_in,
        worker=worker,
        task_id=task_id,
        time_limit=time_limit,
    )
    result = report.of(article_id)
    assert result is not None  # claimed, or explained
    return result


def suspects_due(*, limit: int, unsent: bool = False) -> list[int]:
    """Due rows left leased by a claimer that died (their lease ran out, never let go):
    each is claimed only alone, by a message of its own. Oldest first. `unsent`: only
    those no message was sent for since their lease ran out (`mark_sent`)."""
    rows = Article.objects.filter(due_q(), lease_expires_at__lte=Now())
    if unsent:
        rows = rows.exclude(dispatched_at__gte=F("lease_expires_at"))
    return list(rows.order_by("publish_at", "id").values_list("id", flat=True)[:limit])


def leased_by(task_id: str) -> tuple[int, float] | None:
    """Of the rows whose attempts the task `task_id` left unfinished (its worker died:
    this is its redelivered message), the one still leased whose lease runs out last,
    and the seconds until it does; None if none is leased any more."""
    left = PublishAttempt.objects.filter(task_id=task_id, outcome="").values("article_id")
    state = lease.row_state(
        Article.objects.filter(pk__in=left, lease_expires_at__gt=Now()).order_by(
            "-lease_expires_at"
        ),
        "id",
        "lease_expires_at",
    )
    if state is None:
        return None
    return state["id"], state.seconds_until("lease_expires_at") or 0.0


def mark_sent(article_ids: list[int]) -> None:
    """A message is about to go out for these rows (marked before, so that the mark's
    row lock never meets the message's own claim)."""
    if article_ids:
        Article.objects.filter(pk__in=article_ids).update(dispatched_at=Now())
