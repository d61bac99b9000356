"""The coalescing refresher of the shared views (front page, archive, feed, sitemap).

An attempt's outcome and a delete only *ask* for a refresh (`shared_views_request`);
they never wait for one. At most one pass runs at a time, on any host: a pass holds
the `Refresher` row's lease, the one fenced lease (work.lease) as an article's claim.
A request made while a pass runs, or within PUBLISH_REFRESH_INTERVAL of the last one,
is folded into one deferred pass: the first such request sends `refresh_site` with an
ETA, the others find it sent. So a burst of N publishes costs about one pass per
interval, not N, and every article of the burst is listed within about an interval
(plus one pass) of the burst's last publish.

Nothing is lost when a refresher dies or a message is lost: `wanted` stays set, the
lease runs out, a deferred pass that never came is sent again by the next request,
and the catch-up runs a pass every time.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.db.models import Q
from django.db.models.functions import Now
from django.utils import timezone

from publishing.dispatch import dispatch_refresh
from publishing.models import Refresher
from publishing.publishers import Publisher, each_publisher
from work import lease
from work.lease import now_plus

logger = logging.getLogger(__name__)

REFRESHER_ID = 1
# A pass's token is the count of passes begun; a pass has no attempt budget.
FIELDS = lease.LeaseFields(token="passes", attempts=None)


def _row():
    return Refresher.objects.filter(pk=REFRESHER_ID)


def _acquire(
    *, forced: bool, seconds: float | None = None, interval: float | None = None
) -> int | None:
    """Take the lease for one pass; its number (the fencing token), or None.

    Unforced: only if a pass is wanted and the last one began PUBLISH_REFRESH_INTERVAL
    ago (or `interval`). `seconds`: the lease (PUBLISH_REFRESH_LEASE_SECONDS). `wanted`
    is cleared as the pass begins: a request after this point asks for the next pass,
    since this one may have read the database before its commit."""
    if interval is None:
        interval = settings.PUBLISH_REFRESH_INTERVAL
    rows = _row()
    if not forced:
        rows = rows.filter(wanted=True).filter(
            Q(last_pass_at__isnull=True) | Q(last_pass_at__lte=now_plus(-interval))
        )
    return lease.claim_token(
        rows,
        seconds=seconds or settings.PUBLISH_REFRESH_LEASE_SECONDS,
        fields=FIELDS,
        wanted=False,
        last_pass_at=Now(),
    )


def _want() -> None:
    """Ask for a pass; the row is made if a flushed or hand-made database lacks it."""
    if not _row().update(wanted=True):
        Refresher.objects.get_or_create(pk=REFRESHER_ID, defaults={"wanted": True})


PASSES: dict[str, Callable[[Publisher], None]] = {
    "refresh": lambda publisher: publisher.refresh(),
    "reconcile": lambda publisher: publisher.reconcile(),
}


def _run_pass(token: int, hook: str) -> bool:
    """One pass under the lease `token`; False (and another pass wanted) if it failed."""
    try:
        each_publisher(PASSES[hook], what=hook, raising=True)
        return True
    except Exception:
        # A failed pass (a serialization conflict with an attempt, a full disk) is
        # wanted again; the next request or the catch-up runs it.
        logger.warning("shared views: the %s pass failed; another is wanted", hook, exc_info=True)
        _want()
        return False
    finally:
        lease.release(_row(), token, fields=FIELDS)


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


def shared_views_request(*, backlog: bool = False) -> None:
    """An outcome or a delete has committed: the shared views must catch up with it.
    Runs the pass here when none ran lately, else leaves it to one deferred pass.
    `backlog` (a full batch: more is due): "lately" and "deferred" mean within
    PUBLISH_REFRESH_BACKLOG_INTERVAL, so a draining backlog pays a pass per that
    interval; the request of the batch that drains it is an ordinary one, which
    brings a pass deferred for later forward.

    In a burst this costs one UPDATE that changes nothing: a pass is already wanted and
    deferred, and that pass begins after this commit, so it covers it."""
    interval = (
        settings.PUBLISH_REFRESH_BACKLOG_INTERVAL if backlog else settings.PUBLISH_REFRESH_INTERVAL
    )
    fresh = now_plus(-settings.PUBLISH_REFRESH_LOST_AFTER)
    covered = Q(wanted=True, deferred_until__gt=fresh, deferred_until__lte=now_plus(interval))
    if not _row().exclude(covered).update(wanted=True):
        if _row().exists():
            return
        _want()
    token = _acquire(forced=False, interval=interval)
    if token is None:
        _defer(interval)
        return
    _run_pass(token, "refresh")


def shared_views_backlog_drained() -> None:
    """A batch found the backlog empty (or not full) without publishing anything: if the
    last full batches left their pass deferred for the backlog's interval, bring it
    forward, so the shared views list the backlog about an interval after its last
    publish. One query when there is nothing to bring forward."""
    later = now_plus(settings.PUBLISH_REFRESH_INTERVAL)
    if _row().filter(wanted=True, deferred_until__gt=later).exists():
        shared_views_request()


def shared_views_deferred() -> None:
    """The deferred pass (the `refresh_site` task): run it if still wanted; if another
    pass holds the lease, come back after an interval."""
    _row().update(deferred_until=None)
    token = _acquire(forced=False)
    if token is not None:
        _run_pass(token, "refresh")
    elif _row().filter(wanted=True).exists():
        _defer()


def shared_views_pass(*, full: bool = False) -> bool:
    """A pass now, wanted or not (the catch-up, the backup executor): a refresh, or
    with `full` the publishers' full check. False when another pass holds the lease."""
    _want()
    # The full check runs in the catch-up task, stopped at its hard time limit.
    token = _acquire(forced=True, seconds=settings.PUBLISH_CATCHUP_TIME_LIMIT if full else None)
    if token is None:
        logger.info("shared views: a pass is running elsewhere; one more is deferred")
        _defer()
        return False
    # A full check that failed is due again at the next catch-up, not in an hour.
    if _run_pass(token, "reconcile" if full else "refresh") and full:
        _row().update(reconciled_at=Now())
    return True


def full_check_due() -> bool:
    """The full check (reconcile) runs every PUBLISH_RECONCILE_EVERY seconds; the
    catch-up runs a refresh the other times, whose cost follows what changed."""
    cutoff = now_plus(-settings.PUBLISH_RECONCILE_EVERY)
    return not _row().filter(reconciled_at__gt=cutoff).exists()
