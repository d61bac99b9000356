"""The one fenced lease: take a row with one conditional UPDATE, by the database clock.

Every job that must not run twice at once (an article's attempt, a batch of them, the
refresher's pass, a scheduled run, a day's digest) holds its row this way, and only
this way (docs/design.md, "The fenced lease"):

- **claim**: `UPDATE … SET <expires> = now + lease, <token> = <token> + 1[, <attempts> =
  <attempts> + 1] WHERE <the caller's conditions> AND lease free [AND <attempts> <
  budget]`, returning the rows as the UPDATE left them. One row updated = claimed;
  none = someone else has it, or there is no work. Two claimers can never both win,
  on SQLite or PostgreSQL, because the check and the write are one statement.
- **token**: the claim counter is never reset, so the value the claim returned is the
  claimer's fencing token. Every write of the claimed attempt is `WHERE <token> =
  mine` (`fenced`): a claimer whose lease ran out and was overtaken writes nothing
  over the newer claim's work. (An attempt budget is reset by an edit or a requeue,
  so it cannot be the token: an old attempt would match a new one with its number.)
- **time**: the lease and every due time are the database's clock (`Now()`), so hosts
  with skewed clocks agree on whose lease has run out.
- **at the write** (`Fence`): a holder whose writes cannot share a statement with its
  token (files, objects in a bucket) checks the token just before each write and again
  just after it; a holder that finds itself overtaken stops (`Overtaken`), and says
  whether a write of its may have landed after the newer holder's.
- **many rows** (`claim_many`): up to `limit` rows in the one statement, oldest first;
  on PostgreSQL the rows are picked with `FOR UPDATE SKIP LOCKED`, so concurrent
  claimers pass each other's rows by instead of waiting or taking them twice.

The module knows no model: the caller passes a queryset and the names of its fields
(`LeaseFields`). It imports nothing of the project, so every package can use it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from django.db import connections
from django.db.models import (
    BooleanField,
    DateTimeField,
    Expression,
    ExpressionWrapper,
    F,
    Model,
    Q,
    QuerySet,
    Value,
)
from django.db.models.functions import Greatest, Now

from work.db import Returning, column_name, row_values_in, update_returning

M = TypeVar("M", bound=Model)

# Longest error text kept on a row (an article's last error, an attempt's): enough for
# a traceback's last line and its context, bounded so one bad target cannot bloat rows.
ERROR_MAX_CHARS = 4000


@dataclass(frozen=True)
class LeaseFields:
    """The names of a model's lease fields. `attempts` is None for a row without an
    attempt budget (a job's lease, the refresher's)."""

    expires: str = "lease_expires_at"
    token: str = "claims"
    attempts: str | None = "attempts"


LEASE = LeaseFields()


# --- the database clock ----------------------------------------------------------------


def now_plus(seconds: float) -> ExpressionWrapper:
    """The database clock plus `seconds` (negative: ago), as an expression for UPDATE
    and WHERE, so every host compares times on one clock."""
    return ExpressionWrapper(
        Now() + Value(timedelta(seconds=seconds)), output_field=DateTimeField()
    )


def lease_free(fields: LeaseFields = LEASE) -> Q:
    """Nobody holds the lease: never taken, let go, or run out."""
    return Q(**{f"{fields.expires}__isnull": True}) | Q(**{f"{fields.expires}__lte": Now()})


def due(field: str = "next_attempt_at") -> Q:
    """Not backing off: the next try's time (`field`) is unset or has come."""
    return Q(**{f"{field}__isnull": True}) | Q(**{f"{field}__lte": Now()})


def within_budget(max_attempts: int, fields: LeaseFields = LEASE) -> Q:
    """Tries left in the budget (see `claim`'s `max_attempts`)."""
    return Q(**{f"{_attempts(fields)}__lt": max_attempts})


def budget_spent(max_attempts: int, fields: LeaseFields = LEASE) -> Q:
    """No try left, although no try said it was the last (each one died): the caller
    gives the row up instead of claiming it again, so a row that kills its claimer
    cannot loop."""
    return Q(**{f"{_attempts(fields)}__gte": max_attempts})


def _attempts(fields: LeaseFields) -> str:
    if fields.attempts is None:
        raise ValueError("these rows have no attempt budget (LeaseFields.attempts is None)")
    return fields.attempts


# --- claim, renew, release ---------------------------------------------------------------


def _claim_changes(fields: LeaseFields, seconds: float, count_attempt: bool) -> dict[str, Any]:
    changes: dict[str, Any] = {
        fields.expires: now_plus(seconds),
        fields.token: F(fields.token) + 1,
    }
    if count_attempt and fields.attempts is not None:
        changes[fields.attempts] = F(fields.attempts) + 1
    return changes


def claim(
    rows: QuerySet[M],
    *,
    seconds: float,
    fields: LeaseFields = LEASE,
    max_attempts: int | None = None,
    only: tuple[str, ...] | None = None,
    **changes: Any,
) -> list[M]:
    """Claim the rows of `rows` whose lease is free, for `seconds`, in one UPDATE: the
    rows as the claim left them (`getattr(row, fields.token)` is each one's token);
    empty when none was free. An attempt is counted when the rows have a budget;
    `max_attempts` claims only rows with a try left. `changes`: more columns the same
    statement sets (`updated_at=Now()`, who holds it). `only`: the fields to return
    (default every field)."""
    rows = rows.filter(lease_free(fields))
    if max_attempts is not None:
        rows = rows.filter(within_budget(max_attempts, fields))
    return update_returning(
        rows, only=only, **_claim_changes(fields, seconds, count_attempt=True), **changes
    )


def claim_token(
    rows: QuerySet,
    *,
    seconds: float,
    fields: LeaseFields = LEASE,
    max_attempts: int | None = None,
    **changes: Any,
) -> int | None:
    """`claim` of a single row (a job's lease, the refresher, a day's digest): its
    fencing token, or None when its lease is held, its budget spent (`max_attempts`) or
    the row is not there."""
    claimed = claim(
        rows,
        seconds=seconds,
        fields=fields,
        max_attempts=max_attempts,
        only=(fields.token,),
        **changes,
    )
    return getattr(claimed[0], fields.token) if claimed else None


def pick(rows: QuerySet[M], *, limit: int, order_by: Sequence[str | Expression]) -> QuerySet[M]:
    """Up to `limit` of `rows`, in `order_by` order (field names or expressions, e.g. a
    `Case` that puts one row first), as the WHERE of one claim.

    On PostgreSQL the ids are locked with SKIP LOCKED, so another claimer's statement
    passes them by instead of waiting, and read as `pk = ANY(ARRAY(subquery))`: an
    InitPlan, run once. (With `pk IN (subquery)` the planner may run the subquery again
    per row, and each run skips the rows the last one locked: more than `limit` rows
    would be claimed.) SQLite runs an uncorrelated IN subquery once, and its writers
    take turns anyway. The outer query keeps `rows`' conditions: on PostgreSQL a row
    changed since the subquery read it is checked again against them (READ COMMITTED's
    re-check), not against the subquery's snapshot."""
    ids = rows.order_by(*order_by).values("pk")[:limit]
    connection = connections[rows.db]
    if connection.vendor != "postgresql":
        return rows.filter(pk__in=ids)
    sql, params = ids.query.sql_with_params()
    table = connection.ops.quote_name(rows.model._meta.db_table)
    pk = connection.ops.quote_name(column_name(rows.model._meta, "pk"))
    return rows.extra(
        where=[f"{table}.{pk} = ANY(ARRAY({sql} FOR UPDATE SKIP LOCKED))"], params=list(params)
    )


def in_lock_order(rows: QuerySet[M]) -> QuerySet[M]:
    """`rows` as the WHERE of a write that takes their row locks in key order (on
    PostgreSQL: `pk = ANY(ARRAY(SELECT pk … ORDER BY pk FOR UPDATE))`, locked before the
    write, one by one in that order), so two writers of many rows at once (a group's
    completion, a bulk delete) cannot each hold a row the other waits for. SQLite has
    one writer at a time."""
    connection = connections[rows.db]
    if connection.vendor != "postgresql":
        return rows
    sql, params = rows.order_by("pk").values("pk").query.sql_with_params()
    table = connection.ops.quote_name(rows.model._meta.db_table)
    pk = connection.ops.quote_name(column_name(rows.model._meta, "pk"))
    return rows.extra(where=[f"{table}.{pk} = ANY(ARRAY({sql} FOR UPDATE))"], params=list(params))


def claim_many(
    rows: QuerySet[M],
    *,
    limit: int,
    order_by: Sequence[str | Expression],
    seconds: float,
    fields: LeaseFields = LEASE,
    max_attempts: int | None = None,
    sort_key: Callable[[M], Any] | None = None,
    **changes: Any,
) -> list[M]:
    """`claim` of up to `limit` rows in one statement, picked first by `order_by` (`pick`:
    SKIP LOCKED on PostgreSQL); returned sorted by `sort_key`, by default by the field
    names of `order_by` (ascending), since RETURNING comes in no particular order."""
    returning = claim_many_returning(
        rows,
        limit=limit,
        order_by=order_by,
        seconds=seconds,
        fields=fields,
        max_attempts=max_attempts,
        **changes,
    )
    claimed = returning.run() if returning is not None else []
    return sort_claimed(claimed, order_by=order_by, sort_key=sort_key)


def claim_many_returning(
    rows: QuerySet[M],
    *,
    limit: int,
    order_by: Sequence[str | Expression],
    seconds: float,
    fields: LeaseFields = LEASE,
    max_attempts: int | None = None,
    **changes: Any,
) -> Returning[M] | None:
    """The statement of `claim_many` (`UPDATE … RETURNING`), not run: for a caller that
    makes it part of a larger one (on PostgreSQL, a data-modifying `WITH` that also
    inserts what the claim starts), then sorts the rows with `sort_claimed`. None when
    there is nothing to claim."""
    rows = rows.filter(lease_free(fields))
    if max_attempts is not None:
        rows = rows.filter(within_budget(max_attempts, fields))
    return Returning.of(
        pick(rows, limit=limit, order_by=order_by),
        **_claim_changes(fields, seconds, count_attempt=True),
        **changes,
    )


def sort_claimed(
    claimed: list[M],
    *,
    order_by: Sequence[str | Expression],
    sort_key: Callable[[M], Any] | None = None,
) -> list[M]:
    """Claimed rows in `sort_key` order, by default by the field names of `order_by`
    (ascending): RETURNING comes in no particular order."""
    if sort_key is None:
        names = [name for name in order_by if isinstance(name, str)]
        claimed.sort(key=lambda row: tuple(getattr(row, name) for name in names))
    else:
        claimed.sort(key=sort_key)
    return claimed


def fenced(rows: QuerySet[M], token: int, *, fields: LeaseFields = LEASE) -> QuerySet[M]:
    """The rows still held by the claim whose token is `token`: every write of a claimed
    attempt goes through this, so an overtaken claimer's write matches nothing."""
    return rows.filter(**{fields.token: token})


def fenced_many(
    rows: QuerySet[M],
    held: Sequence[Sequence[Any]],
    *,
    fields: LeaseFields = LEASE,
    also: tuple[str, ...] = (),
) -> QuerySet[M]:
    """`fenced` for many claims in one condition: `held` is `(pk, token, *also)` per
    claim (`also`: more fields that must still match, e.g. the content a claim read)."""
    return row_values_in(
        rows.filter(pk__in=[row[0] for row in held]), ("pk", fields.token, *also), held
    )


def seconds_left(rows: QuerySet, token: int, *, fields: LeaseFields = LEASE) -> float | None:
    """Seconds the claim whose token is `token` still holds the row, by the database
    clock; None when it holds it no longer (ran out, let go, or overtaken). For a
    claimer that may have paused (a stalled host) to check before a write that cannot
    be fenced in the same statement (a file, a webhook)."""
    state = row_state(fenced(rows, token, fields=fields), fields.expires)
    return None if state is None else state.seconds_until(fields.expires)


def renew(rows: QuerySet, token: int, *, seconds: float, fields: LeaseFields = LEASE) -> bool:
    """Hold the lease `seconds` from now; False when it was lost (it ran out and another
    claim took the row)."""
    return bool(fenced(rows, token, fields=fields).update(**{fields.expires: now_plus(seconds)}))


def release(
    rows: QuerySet,
    token: int,
    *,
    fields: LeaseFields = LEASE,
    refund_attempt: bool = False,
    **changes: Any,
) -> bool:
    """Let the lease go (with `changes`, an outcome written in the same statement),
    if the claim whose token is `token` still holds it. `refund_attempt`: the claim did
    not try (it ran short of lease), so its attempt does not count."""
    values: dict[str, Any] = {fields.expires: None, **changes}
    if refund_attempt:
        # Never below 0: an edit may have reset the budget since the claim.
        values[_attempts(fields)] = Greatest(F(_attempts(fields)) - 1, Value(0))
    return bool(fenced(rows, token, fields=fields).update(**values))


# --- the token at the write --------------------------------------------------------------


class Overtaken(Exception):
    """The lease was lost (it ran out, or a newer claim took the row): the holder stops."""

    def __init__(self, message: str | None = None, *, wrote: bool = False):
        super().__init__(message or self.__doc__)
        # A write of the stopped holder landed after the newer claim was made: what it
        # wrote may be older than the newer holder's, so it must be written again.
        self.wrote = wrote


@dataclass
class Fence:
    """A claim's token, checked at each of its writes that the database cannot fence
    (a file renamed into place, a PUT): `before(what)` raises `Overtaken` unless the
    claim still holds the row; `after(what)` too, with `wrote=True` when a newer claim
    took the row meanwhile (the write may have landed over the newer holder's).

    `deadline` (time.monotonic()): when the holder stops starting new work, well inside
    its lease and its time limit (`time_left`). `give_way`: asked by `time_left` when
    the deadline is still ahead; True ends the time left too (more urgent work waits
    for the process the holder runs in).

    `trusted_until` (`lease_clock()`, read *before* the claim, plus a share of the
    lease): until then the claim cannot have been lost, since no other claim succeeds
    before the lease ends, and no query is made. The clock counts time the process was
    stopped (SIGSTOP) or the host suspended, so a holder that was paused past it asks
    the database. A fast holder (a pass of a second in a lease of minutes) never does.

    The token is read outside the caller's transaction: a holder reading in one snapshot
    (PostgreSQL's REPEATABLE READ) would see its own claim there forever. On SQLite the
    caller's connection is used: while it is in a write transaction no claim can commit.
    """

    rows: QuerySet
    token: int
    fields: LeaseFields = LEASE
    deadline: float | None = None
    trusted_until: float | None = None
    give_way: Callable[[], bool] | None = None
    _side: Any = field(default=None, repr=False)

    def state(self) -> str:
        """ "held", "ran out" (nobody claimed it since) or "taken" (a newer claim)."""
        if self.trusted_until is not None and lease_clock() < self.trusted_until:
            return "held"
        held = ExpressionWrapper(
            Q(**{f"{self.fields.expires}__gt": Now()}), output_field=BooleanField()
        )
        query = self.rows.annotate(_held=held).values_list(self.fields.token, "_held")
        connection = connections[self.rows.db]
        if connection.vendor == "postgresql" and connection.in_atomic_block:
            sql, params = query[:1].query.sql_with_params()
            with self._side_connection().cursor() as cursor:
                cursor.execute(sql, params)
                row = cursor.fetchone()
        else:
            row = query.first()
        if row is None or row[0] != self.token:
            return "taken"
        return "held" if row[1] else "ran out"

    def before(self, what: str) -> None:
        state = self.state()
        if state != "held":
            raise Overtaken(f"claim {self.token}: the lease was {state} before {what}")

    def after(self, what: str) -> None:
        state = self.state()
        if state != "held":
            raise Overtaken(
                f"claim {self.token}: the lease was {state} after {what}", wrote=state == "taken"
            )

    def hold(self, what: str) -> None:
        """Inside the caller's transaction: the row locked (FOR UPDATE) while the claim
        still holds it, else `Overtaken`. A newer claim's UPDATE then waits for the
        caller's commit, so whatever the transaction writes (a checkpoint, the writes
        it records) commits only under this claim. (SQLite: the caller's write
        transaction already keeps every other claim from committing.)"""
        held = (
            self.rows.select_for_update()
            .filter(**{self.fields.token: self.token, f"{self.fields.expires}__gt": Now()})
            .exists()
        )
        if not held:
            raise Overtaken(f"claim {self.token}: the lease was lost before {what}")

    def time_left(self) -> float:
        left = math.inf if self.deadline is None else self.deadline - time.monotonic()
        if left > 0 and self.give_way is not None and self.give_way():
            return 0.0
        return left

    def close(self) -> None:
        if self._side is not None:
            self._side.close()
            self._side = None

    def _side_connection(self):
        if self._side is None:
            self._side = connections.create_connection(self.rows.db)
        return self._side


def lease_clock() -> float:
    """Seconds on a clock that never goes back and counts the time the process was
    stopped or the host suspended (Linux's CLOCK_BOOTTIME), for `Fence.trusted_until`."""
    boottime = getattr(time, "CLOCK_BOOTTIME", None)
    return time.monotonic() if boottime is None else time.clock_gettime(boottime)


# --- why not claimed, errors, backoff ----------------------------------------------------


@dataclass(frozen=True)
class RowState:
    """A row as a claim that found nothing saw it, with the database clock's time: what
    says why (held, backing off, not due, done) in the caller's words."""

    values: dict[str, Any]
    db_now: datetime

    def __getitem__(self, field: str) -> Any:
        return self.values[field]

    def seconds_until(self, field: str) -> float | None:
        """Seconds until the time in `field` (a lease's end, a due time) by the database
        clock; None when it is unset or has come."""
        moment = self.values[field]
        if moment is None or moment <= self.db_now:
            return None
        return (moment - self.db_now).total_seconds()


def db_now(using: str = "default") -> datetime:
    """The database's clock now (aware, UTC): the one every lease and due time is
    compared with, so hosts with skewed clocks agree on what time it is."""
    connection = connections[using]
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":  # as Django's Now() reads it there
            cursor.execute("SELECT STRFTIME('%Y-%m-%d %H:%M:%f', 'NOW')")
            return datetime.fromisoformat(cursor.fetchone()[0]).replace(tzinfo=UTC)
        cursor.execute("SELECT CURRENT_TIMESTAMP")
        return cursor.fetchone()[0].astimezone(UTC)


def row_state(rows: QuerySet, *fields: str) -> RowState | None:
    """The first row of `rows` (one, by its key) with `fields`, read with the database
    clock; None when there is no such row."""
    row = rows.annotate(_db_now=Now()).values(*fields, "_db_now").first()
    if row is None:
        return None
    db_now = row.pop("_db_now")
    return RowState(values=row, db_now=db_now)


@dataclass(frozen=True)
class WhyNot:
    """Why a claim found nothing, in words, and when to come back: `due_in` seconds
    until the row is due, `lease_left` until another holder's lease runs out."""

    reason: str
    due_in: float | None = None
    lease_left: float | None = None


def why_not_claimed(
    rows: QuerySet,
    *,
    pending: str,
    holder: str,
    waits: Sequence[tuple[str, Callable[[Any, float], str]]] = (),
) -> WhyNot | None:
    """The reasons every leased row shares, read in one query (`row_state`): gone, not
    `pending`, waiting (each of `waits`: a due-time field and its words, then the
    backoff of `next_attempt_at`), or held by `holder`'s lease. None when none applies:
    the caller's own reasons come next."""
    fields = [field for field, _ in waits]
    state = row_state(rows, "status", *fields, "next_attempt_at", "lease_expires_at")
    return why_not(state, pending=pending, holder=holder, waits=waits)


def why_not(
    state: RowState | None,
    *,
    pending: str,
    holder: str,
    waits: Sequence[tuple[str, Callable[[Any, float], str]]] = (),
) -> WhyNot | None:
    """`why_not_claimed` of a row state the caller read already (in its claim's own
    statement): `status`, each wait's field, `next_attempt_at` and `lease_expires_at`."""
    if state is None:
        return WhyNot("it no longer exists")
    if state["status"] != pending:
        return WhyNot(f"it is {state['status']}")
    for field_name, words in [
        *waits,
        (
            "next_attempt_at",
            lambda _, due_in: f"it is backing off for {due_in:.1f}s after a failure",
        ),
    ]:
        if (due_in := state.seconds_until(field_name)) is not None:
            return WhyNot(words(state[field_name], due_in), due_in=due_in)
    if (lease_left := state.seconds_until("lease_expires_at")) is not None:
        return WhyNot(f"{holder} holds its lease for {lease_left:.1f}s", lease_left=lease_left)
    return None


def cut(text: str, limit: int = ERROR_MAX_CHARS) -> str:
    """An error text as a row keeps it: at most `limit` characters."""
    return text[:limit]


def describe(exc: BaseException, limit: int = ERROR_MAX_CHARS) -> str:
    """An exception as a row keeps it: its type and message, cut."""
    return cut(f"{type(exc).__name__}: {exc}", limit)


def backoff(attempt: int, *, cap: float, first: float = 1.0) -> float:
    """Seconds before the try after `attempt` failed: `first`, then twice as long each
    time (1, 2, 4 … by default), capped at `cap`, as Celery's `retry_backoff` (without
    its jitter)."""
    return float(min(cap, first * 2 ** max(0, attempt - 1)))
