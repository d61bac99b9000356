"""The coalescing refresher of the shared views (front page, archive, feed, sitemap).

An attempt's outcome and a delete only *ask* for a refresh (`shared_views_request`);
they never wait for one. At most one pass runs at a time, on any host: a pass holds
the `Refresher` row's lease, the one fenced lease (work.lease) as an article's claim.
A request made while a pass runs, or within PUBLISH_REFRESH_INTERVAL of the last one,
is folded into one deferred pass: the first such request sends `refresh_site` with an
ETA, the others find it sent. So a burst of N publishes costs about one pass per
interval, not N, and every article of the burst is listed within about an interval
(plus one pass) of the burst's last publish.

Nothing is lost when a refresher dies or a message is lost: a pass that fails is
wanted again and sent a little later; a pass that dies holding its lease is followed
by a watchdog (a `refresh_site` sent with a claim for just after the lease, one per
lease and process) within PUBLISH_REFRESH_INTERVAL plus the lease; a deferred pass that never came
is sent again by the next request; and the catch-up runs a pass every time.

No stale write: a pass writes the shared views under its fencing token, checked at
each write (work.lease.Fence, blogpublish.site.fenced); a pass that outlived its
lease and was overtaken stops and says so (PassOutcome.OVERTAKEN). Each pass keeps
to a budget inside its lease (`pass_budget`): a rebuild longer than that keeps its
progress in a checkpoint and the next pass resumes it (docs/design.md).

While publish work is due (a burst draining), a coalesced pass lets the publishers put
their lowest-priority views off (the tag pages, past a short slice) and asks for a pass
after the burst for them (`_run_pass`, docs/site.md "Tag pages").
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from django.conf import settings
from django.db import DatabaseError
from django.db.models import Q
from django.db.models.functions import Now
from django.utils import timezone

from publishing.dispatch import dispatch_refresh
from publishing.exceptions import TIME_LIMITS
from publishing.models import Refresher, TagRefresh
from publishing.publishers import Publisher, each_publisher
from publishing.selectors import backlog_waiting, publish_work_due
from work import lease
from work.lease import now_plus

logger = logging.getLogger(__name__)

REFRESHER_ID = 1
# A pass's token is the count of passes begun; a pass has no attempt budget.
FIELDS = lease.LeaseFields(token="passes", attempts=None)


def _row():
    return Refresher.objects.filter(pk=REFRESHER_ID)


@dataclass(frozen=True)
class Claim:
    """A pass's hold on the refresher: its token, its lease, and until when (on
    `lease.lease_clock()`, read before the claim) it may trust it without asking."""

    token: int
    seconds: float
    trusted_until: float


def _acquire(*, forced: bool, seconds: float, interval: float | None = None) -> Claim | None:
    """Take the lease for one pass (its token is its number), or None.

    Unforced: only if a pass is wanted and the last one began PUBLISH_REFRESH_INTERVAL
    ago (or `interval`). `seconds`: the lease (PUBLISH_REFRESH_LEASE_SECONDS). `wanted`
    is cleared as the pass begins: a request after this point asks for the next pass,
    since this one may have read the database before its commit. The pass's watchdog
    goes out with the claim, unless one from this process is still on its way
    (`_watch_claim`)."""
    if interval is None:
        interval = settings.PUBLISH_REFRESH_INTERVAL
    rows = _row()
    if not forced:
        rows = rows.filter(wanted=True).filter(
            Q(last_pass_at__isnull=True) | Q(last_pass_at__lte=now_plus(-interval))
        )
    before = lease.lease_clock()
    token = lease.claim_token(
        rows, seconds=seconds, fields=FIELDS, wanted=False, wanted_soon=False, last_pass_at=Now()
    )
    if token is None:
        return None
    _watch_claim(token, seconds)
    return Claim(token, seconds, trusted_until=before + TRUSTED_SHARE * seconds)


# The share of its lease a pass trusts without asking the database whether it still
# holds it (lease.Fence.trusted_until): the soft time limit's share, so a pass that
# writes after it (a pause, a stall) has its token read at each write.
TRUSTED_SHARE = 0.8


def _want() -> None:
    """Ask for a pass; the row is made if a flushed or hand-made database lacks it."""
    if not _row().update(wanted=True):
        Refresher.objects.get_or_create(pk=REFRESHER_ID, defaults={"wanted": True})


# (publisher, fence, busy): `busy`, publish work is due (`_run_pass`).
PASSES: dict[str, Callable[[Publisher, lease.Fence, bool], bool | None]] = {
    "refresh": lambda publisher, fence, busy: publisher.refresh(fence=fence, busy=busy),
    "reconcile": lambda publisher, fence, busy: publisher.reconcile(fence=fence),
}

# How long a pass works before it stops starting new work (a rebuild then keeps its
# checkpoint, and the next pass, sent at once, resumes it): a second, and never more
# than half its lease, so it stays well inside the lease and the task's soft time
# limit (0.8 of the lease) and commits its progress instead of being stopped and
# losing it. A second keeps the front page and feed within about a second of a
# publish during a long rebuild: each pass writes them first (docs/design.md).
PASS_BUDGET_SECONDS = 1.0
PASS_BUDGET_SHARE = 0.5


def pass_budget(seconds: float) -> float:
    """The budget of a pass whose lease is `seconds` long."""
    return min(PASS_BUDGET_SECONDS, PASS_BUDGET_SHARE * seconds)


class PassOutcome(StrEnum):
    # Every publisher brought its shared views in line with the snapshot.
    DONE = "done"
    # A publisher stopped at the pass's budget with work left (a rebuild's checkpoint
    # is saved): the next pass is wanted and sent at once.
    MORE = "more"
    # A publisher raised: the pass is wanted again and sent within an interval.
    FAILED = "failed"
    # A write met a concurrent one (a serialization failure, a deadlock, SQLite's lock):
    # as FAILED, and a forced pass is tried again at once (`_tried`).
    CONFLICT = "conflict"
    # The lease ran out or a newer pass took it: this pass stopped, and wrote nothing
    # after it found out (work.lease.Fence).
    OVERTAKEN = "overtaken"
    # Another pass holds the lease (it sends the next pass when it ends).
    BUSY = "busy"


def _run_pass(claim: Claim, hook: str, *, yielding: bool = False) -> PassOutcome:
    """One pass under `claim`; its outcome. Whatever the outcome, a pass wanted when it
    ends (a request made meanwhile, or its own failure) is sent within an interval, so
    no failure waits for the catch-up.

    `yielding` (the coalesced passes, not the catch-up's or a command's): while publish
    work is due (a burst draining), the publishers put their lowest-priority views off
    (`busy`: the tag pages past a short slice, docs/site.md "Tag pages"), and a pass that
    left tag pages to write wants one more within PUBLISH_REFRESH_BACKLOG_INTERVAL, or
    sooner when the burst's last group asks for its pass: so what it put off is written
    after the burst, never lost."""
    token = claim.token
    busy = False
    fence = lease.Fence(
        _row(),
        token,
        fields=FIELDS,
        deadline=time.monotonic() + pass_budget(claim.seconds),
        trusted_until=claim.trusted_until,
    )
    finished: list[bool | None] = []
    try:
        busy = yielding and hook == "refresh" and publish_work_due()  # one seek, in the try
        each_publisher(
            lambda publisher: finished.append(PASSES[hook](publisher, fence, busy)),
            what=hook,
            raising=True,
            expected=lambda exc: isinstance(exc, lease.Overtaken) or _met_a_write(exc),
        )
        outcome = PassOutcome.MORE if False in finished else PassOutcome.DONE
    except lease.Overtaken as exc:
        logger.warning(
            "shared views: the %s pass %d was overtaken and stopped: %s", hook, token, exc
        )
        outcome = PassOutcome.OVERTAKEN
    except TIME_LIMITS:
        _want()  # cut short: wanted again, never taken for done or tried again here
        raise
    except Exception as exc:
        # A failed pass (a serialization conflict with an attempt, a full disk) is
        # wanted again, and sent below. Its traceback is logged where it was raised
        # (each_publisher), or here if it was not a publisher's; a conflict's, which
        # is expected while writers work and tried again, is not.
        met = _met_a_write(exc)
        logger.warning(
            "shared views: the %s pass %s; another is wanted: %r",
            hook,
            "met a concurrent write" if met else "failed",
            exc,
            exc_info=not (getattr(exc, "logged", False) or met),
        )
        outcome = PassOutcome.CONFLICT if _conflict(exc) else PassOutcome.FAILED
    finally:
        fence.close()
        lease.release(_row(), token, fields=FIELDS)
    if outcome is not PassOutcome.DONE:
        # Its work is rolled back (or, stopped at its budget, not finished): wanted
        # again. Overtaken by a newer pass, that costs one pass more; with its lease
        # merely run out (a slow pass nobody took over), it is the only way its
        # requests get their pass before the catch-up.
        _want()
    if outcome is PassOutcome.MORE:
        logger.info(
            "shared views: the %s pass %d stopped at its budget; the next resumes", hook, token
        )
    # After the release: a request that found this pass holding the lease left the
    # next pass to it (shared_views_request's `covered`). A failed pass is tried again
    # a little later, not every interval while its cause (a full disk) lasts; a new
    # request meanwhile runs one at once.
    # (None: no pass wanted; else whether a request made meanwhile wants it soon.)
    soon = _row().filter(wanted=True).values_list("wanted_soon", flat=True).first()
    if soon is not None:
        if outcome in (PassOutcome.FAILED, PassOutcome.CONFLICT):
            _defer(_retry_after())
        else:
            _defer(_next_interval(yielding and outcome is PassOutcome.DONE and not soon))
    elif busy and outcome is PassOutcome.DONE and TagRefresh.objects.exists():
        # Tag pages put off (not a due row alone: one stuck due row would have a pass
        # every interval until its lease ran out). Each such pass writes a slice of them.
        _want()
        _defer(settings.PUBLISH_REFRESH_BACKLOG_INTERVAL)
    return outcome


# SQLSTATEs of a transaction the database rolled back for a concurrent one.
CONFLICT_STATES = frozenset({"40001", "40P01"})  # serialization failure, deadlock


def _met_a_write(exc: BaseException) -> bool:
    """Is `exc` itself the database's refusal of a write that met a concurrent one (a
    DatabaseError, whose cause is the driver's), which is logged as a warning without a
    traceback? Not an error of the pass's own that merely came from one (a review's
    finding: a RuntimeError raised from a serialization failure was logged so too)."""
    return isinstance(exc, DatabaseError) and _conflict(exc)


def _conflict(exc: BaseException) -> bool:
    """Did `exc` come from a write that met a concurrent one (worth trying again at
    once), not from the pass's own work (a full disk: not)?"""
    seen: BaseException | None = exc
    while seen is not None:
        if getattr(seen, "sqlstate", None) in CONFLICT_STATES or "database is locked" in str(seen):
            return True
        seen = seen.__cause__
    return False


def _next_interval(backlog_only: bool) -> float | None:
    """When the pass after one that ends wanted again comes: within
    PUBLISH_REFRESH_BACKLOG_INTERVAL when only a backlog's full groups asked for it
    (`backlog_only`: a coalesced pass that did its work, and no request made meanwhile
    set `wanted_soon`) and a full group of due rows still waits for a claim; else within
    PUBLISH_REFRESH_INTERVAL (None). A backlog's full groups ask for their pass no sooner
    than the backlog's interval (`shared_views_request`), but one that completes while a
    pass runs is covered by that pass's lease and leaves the next to it: without this, a
    pass ending mid-drain sent the next within the ordinary interval, and the passes
    chained through the whole drain (an import of 10,000: 40 passes, a third of the
    workers' time; docs/performance.md). The drain's last group asks for an ordinary
    pass, which brings a deferred one forward (`_defer`); a rebuild's next slice (a pass
    stopped at its budget) and a delete's request keep the ordinary interval."""
    if backlog_only and backlog_waiting(settings.PUBLISH_BATCH_SIZE):
        return settings.PUBLISH_REFRESH_BACKLOG_INTERVAL
    return None


def _retry_after() -> float:
    """Seconds before the pass after a failed one: inside PUBLISH_REFRESH_INTERVAL plus
    the lease, the bound docs/design.md gives."""
    return max(
        settings.PUBLISH_REFRESH_INTERVAL,
        min(settings.PUBLISH_REFRESH_LOST_AFTER, settings.PUBLISH_REFRESH_LEASE_SECONDS),
    )


def _watch(token: int, seconds: float) -> None:
    """Send a watchdog for `seconds` (and a margin) from now: a `refresh_site` that runs
    a pass if the lease it then finds ran out without being let go (the pass's process
    was killed, or stopped past its lease), and comes back when that lease ends if it
    is still held. A lease let go ends the chain. `token`: the claim that sent it."""
    dispatch_refresh(eta=timezone.now() + timedelta(seconds=seconds + WATCH_MARGIN), after=token)


# Seconds after a lease's end that its watchdog comes: the database's clock and the
# worker's may differ a little (an early watchdog sends itself again, _watched).
WATCH_MARGIN = 1.0
# When the last watchdog this process sent comes (time.monotonic()).
_watch_due = 0.0


def _watch_claim(token: int, seconds: float) -> None:
    """The watchdog of a claim, unless this process sent one that is still on its way
    and comes by this lease's end: that one finds this lease held when it comes and
    follows it to its end, or finds it run out and runs a pass. So a burst of passes
    costs a watchdog per lease, not one per pass. One that comes later does not cover
    it: a pass killed meanwhile would wait for it."""
    global _watch_due
    now = time.monotonic()
    ends = now + seconds + WATCH_MARGIN
    # After this claim whatever the clocks, and no later than its own watchdog would.
    if now + WATCH_MARGIN < _watch_due <= ends:
        return
    _watch(token, seconds)
    _watch_due = ends


def _defer(interval: float | None = None) -> None:
    """Make sure a pass comes within `interval` (PUBLISH_REFRESH_INTERVAL): the first
    request to find none on its way sends one; a deferred pass that never came (a lost
    message), or one deferred for later than that (the backlog's), is sent again for
    sooner. The later message then finds the pass done and nothing wanted."""
    if interval is None:
        interval = settings.PUBLISH_REFRESH_INTERVAL
    lost = now_plus(-settings.PUBLISH_REFRESH_LOST_AFTER)
    if (
        _row()
        .filter(
            Q(deferred_until__isnull=True)
            | Q(deferred_until__lte=lost)
            | Q(deferred_until__gt=now_plus(interval))
        )
        .update(deferred_until=now_plus(interval))
    ):
        dispatch_refresh(eta=timezone.now() + timedelta(seconds=interval))


def _lease_seconds() -> float:
    return settings.PUBLISH_REFRESH_LEASE_SECONDS


def shared_views_request(*, backlog: bool = False) -> None:
    """An outcome or a delete has committed: the shared views must catch up with it.
    Runs the pass here when none ran lately, else leaves it to one deferred pass.
    `backlog` (a full batch: more is due): "lately" and "deferred" mean within
    PUBLISH_REFRESH_BACKLOG_INTERVAL, so a draining backlog pays a pass per that
    interval; the request of the batch that drains it is an ordinary one, which
    brings a pass deferred for later forward.

    In a burst this costs one UPDATE that changes nothing: a pass is already wanted and
    deferred (that pass begins after this commit, so it covers it), or a pass is
    running, which sends the next one when it ends (`_run_pass`)."""
    interval = (
        settings.PUBLISH_REFRESH_BACKLOG_INTERVAL if backlog else settings.PUBLISH_REFRESH_INTERVAL
    )
    fresh = now_plus(-settings.PUBLISH_REFRESH_LOST_AFTER)
    deferred = Q(deferred_until__gt=fresh, deferred_until__lte=now_plus(interval))
    running = Q(lease_expires_at__gt=Now())
    if backlog:
        covered = Q(wanted=True) & (deferred | running)
    else:
        # While a pass runs, only a request made meanwhile that asked for the next pass
        # soon (`wanted_soon`, read as the pass ends) covers an ordinary one: a deferred
        # pass's message that comes during the pass leaves the next to the pass.
        covered = Q(wanted=True) & ((deferred & ~running) | (running & Q(wanted_soon=True)))
    soon = {} if backlog else {"wanted_soon": True}
    if not _row().exclude(covered).update(wanted=True, **soon):
        if _row().exists():
            return
        _want()
    claim = _acquire(forced=False, seconds=_lease_seconds(), interval=interval)
    if claim is None:
        _defer(interval)
        return
    _run_pass(claim, "refresh", yielding=True)


def shared_views_backlog_drained() -> None:
    """A batch found the backlog empty (or not full) without publishing anything: if the
    last full batches left their pass deferred for the backlog's interval, bring it
    forward, so the shared views list the backlog about an interval after its last
    publish. One query when there is nothing to bring forward."""
    later = now_plus(settings.PUBLISH_REFRESH_INTERVAL)
    if _row().filter(wanted=True, deferred_until__gt=later).exists():
        shared_views_request()


def shared_views_deferred(*, after: int | None = None) -> PassOutcome:
    """The deferred pass (the `refresh_site` task): run it if still wanted. If another
    pass holds the lease, that pass sends the next when it ends (and a watchdog if it
    never does); this message only sends a watchdog for when that lease runs out or
    PUBLISH_REFRESH_LOST_AFTER, whichever is first (for a holder that sends nothing at
    its end, as one of an older release does), not itself every interval while the
    pass runs.

    `after`: a watchdog, sent by claim `after` (`_watch`): if the lease ran out without
    being let go (a pass killed, or stopped past it), a pass is wanted and runs now."""
    if after is not None and not _watched(after):
        return PassOutcome.BUSY
    if after is None:
        _row().update(deferred_until=None)
    claim = _acquire(forced=False, seconds=_lease_seconds())
    if claim is not None:
        return _run_pass(claim, "refresh", yielding=True)
    state = lease.row_state(_row(), "wanted", FIELDS.expires, FIELDS.token)
    if state is not None and state["wanted"]:
        held = state.seconds_until(FIELDS.expires)
        if held is None:
            _defer()  # free: the last pass began less than an interval ago
        else:
            # Held: a watchdog, which leaves the deferred pass's bookkeeping alone (a
            # deferred pass far ahead would make every request run a pass in place).
            _watch(state[FIELDS.token], min(held, settings.PUBLISH_REFRESH_LOST_AFTER))
    return PassOutcome.BUSY


def _watched(token: int) -> bool:
    """A watchdog (sent by claim `token`, or by a deferred pass that found the lease
    held): True (a pass is now wanted) if the lease ran out without being let go; sent
    again for its end if a pass still holds it."""
    state = lease.row_state(_row(), FIELDS.expires, FIELDS.token)
    if state is None:
        return False
    held = state.seconds_until(FIELDS.expires)
    if held is not None:
        _watch(token, held)
        return False
    dead = Q(lease_expires_at__isnull=False, lease_expires_at__lte=Now())
    if not _row().filter(dead).update(wanted=True):
        # Let go: the chain ends (the next claim sends another). A pass still wanted
        # with none on its way (its holder sent none as it ended, as one of an older
        # release does) is sent now.
        if _row().filter(wanted=True).exists():
            _defer()
        return False
    logger.warning(
        "shared views: pass %d never let its lease go (its process died or stopped); "
        "another pass now",
        state[FIELDS.token],
    )
    return True


def shared_views_pass(*, full: bool = False) -> bool:
    """A pass now, wanted or not (the catch-up, the backup executor): a refresh, or
    with `full` the full check (`_full_check`). True when it did its work (a rebuild
    that stopped at its budget included: the next pass resumes it); False when another
    pass holds the lease, or this one failed or was overtaken (it says so in the log)."""
    if full:
        return _full_check(wait=FULL_CHECK_WAIT)
    return _tried(full=False) in (PassOutcome.DONE, PassOutcome.MORE)


def shared_views_whole(*, full: bool = False) -> bool:
    """Passes in this process until one leaves nothing to do (a long rebuild's last
    slice), the first the full check with `full`, for a command that must see the views
    whole (`restore_check --repair`). A pass running elsewhere is waited for (a lease at
    most, each pass). False when the check or a pass failed or was overtaken, or the
    other pass outlasted its lease."""
    if full and not _full_check(wait=_lease_seconds()):
        return False
    outcome = PassOutcome.MORE
    while outcome is PassOutcome.MORE:
        outcome = _forced_pass(full=False, wait=_lease_seconds())
    return outcome is PassOutcome.DONE


# How long the catch-up's full check waits for a pass running elsewhere before its own
# (passes keep to a budget of about a second, and leave gaps between them): well inside
# the task's time limit, which the check itself may have used most of.
FULL_CHECK_WAIT = 15.0
# Tries of a forced pass that meets a concurrent write (PassOutcome.CONFLICT: a
# re-render beginning, a delete's rows), at once: the catch-up's pass is not left to
# the next catch-up for it, nor the full check's reading done again. Any other failure
# is not tried again here.
PASS_TRIES = 3
# A full check not done (a target's check failed, its pass failed or found the lease
# held) is due again this much later.
FULL_CHECK_RETRY_AFTER = 600.0


def _full_check(*, wait: float) -> bool:
    """Every target's `check` (a million pages, or a bucket's, take minutes), before its
    pass and outside the refresher's lease, so the passes that publishes ask for
    meanwhile keep the front page and the feed current (holding the lease, it kept them
    as they were until it ended); then the reconcile pass, run even when a target's
    check failed (the others' is theirs), tried again at once if it meets a concurrent
    write. Done (and `reconciled_at` stamped, so the next is due in
    PUBLISH_RECONCILE_EVERY) only when every check and the pass did their work: else it
    is due again in FULL_CHECK_RETRY_AFTER. A time limit is raised through."""
    checked = True
    try:
        each_publisher(lambda publisher: publisher.check(), what="check", raising=True)
    except TIME_LIMITS:
        raise
    except Exception:
        checked = False  # each_publisher logged it
    done = _tried(full=True, wait=wait) in (PassOutcome.DONE, PassOutcome.MORE) and checked
    # Not done: tried again in FULL_CHECK_RETRY_AFTER, not at every catch-up (a target
    # down, a full disk: the whole site read again every few minutes for nothing).
    retry = min(0.0, FULL_CHECK_RETRY_AFTER - settings.PUBLISH_RECONCILE_EVERY)
    _row().update(reconciled_at=Now() if done else now_plus(retry))
    return done


def shared_views_lease_held_until() -> datetime | None:
    """Until when a pass holds the refresher's lease (None: nobody holds it). After a
    restore it may be a pass of the dumped database, whose process is gone: nothing
    lets it go before it ends."""
    return (
        _row().filter(lease_expires_at__gt=Now()).values_list("lease_expires_at", flat=True).first()
    )


def _tried(*, full: bool, wait: float = 0.0) -> PassOutcome:
    """`_forced_pass`, tried again at once when it meets a concurrent write, up to
    PASS_TRIES times."""
    for _ in range(PASS_TRIES):
        outcome = _forced_pass(full=full, wait=wait)
        if outcome is not PassOutcome.CONFLICT:
            break
    return outcome


def _forced_pass(*, full: bool, wait: float = 0.0) -> PassOutcome:
    """A refresh pass now, or with `full` the full check's reconcile pass; a pass
    holding the lease elsewhere is waited for up to `wait` seconds."""
    _want()
    waited_until = time.monotonic() + wait
    while (claim := _acquire(forced=True, seconds=_lease_seconds())) is None:
        if time.monotonic() >= waited_until:
            logger.info("shared views: a pass is running elsewhere; one more is deferred")
            _defer()
            return PassOutcome.BUSY
        time.sleep(0.1)  # the other pass's end, polled: it sends nothing to say so
    return _run_pass(claim, "reconcile" if full else "refresh")


def full_check_due() -> bool:
    """The full check (reconcile) runs every PUBLISH_RECONCILE_EVERY seconds; the
    catch-up runs a refresh the other times, whose cost follows what changed."""
    cutoff = now_plus(-settings.PUBLISH_RECONCILE_EVERY)
    return not _row().filter(reconciled_at__gt=cutoff).exists()
