"""The whole site in a new look: the re-render's passes (issue 20; docs/design.md, "The
re-render").

A pass is a scheduled run (work.runs) of the job "rerender": it holds that job's lease
(a `JobLease` row through the one fenced lease), so two runners never run at once; a
second one is skipped and says who runs. Within the pass every publisher writes its
pages again in this process's look (`Publisher.rerender`), from its checkpoint, until
the pass's budget is spent, each chunk's progress committed only while the lease holds
(`Fence.hold`). A pass that did not finish is followed by the next (the task sends
itself again; `manage.py rerender_site` loops); a runner that died is followed by the
catch-up, which sends a pass whenever a publisher says one is due (`rerender_wanted`),
once the dead runner's lease has run out. That is also how a deploy that changed the
look starts the re-render by itself.

Nothing of an article changes: no status, no attempt, no PublishAttempt, no webhook.
"""

from __future__ import annotations

import enum
import logging
import time

from django.conf import settings

from publishing.publishers import get_publishers
from publishing.selectors import articles_claimable
from work.job_leases import FIELDS
from work.lease import Fence, Overtaken, lease_clock, lease_free
from work.models import JobLease
from work.runs import scheduled_run

logger = logging.getLogger(__name__)

RERENDER_JOB = "rerender"


class RerenderOutcome(enum.StrEnum):
    DONE = "done"  # every target is in this process's look
    MORE = "more"  # stopped at the budget with pages left: the next pass carries on
    BUSY = "busy"  # another runner holds the lease
    OVERTAKEN = "overtaken"  # the lease was lost mid-pass: the runner that took it goes on


def rerender_lease_seconds() -> float:
    """The lease of a pass: the publish lease (a pass is a group's length of work)."""
    return float(settings.PUBLISH_LEASE_SECONDS)


# A pass starts no chunk after this many seconds: short passes hand the worker child
# back to publishing often (the re-render's queue is the low-priority one).
PASS_SECONDS = 10.0


def rerender_budget() -> float:
    """Seconds a pass starts new chunks for: PASS_SECONDS, and at most 0.4 of its lease,
    as a publish group, so a chunk begun at the end commits well inside the lease and
    the time limits."""
    return min(PASS_SECONDS, 0.4 * rerender_lease_seconds())


def publish_waiting() -> bool:
    """Is there a publish that no one has taken yet (due, pending, its lease free)?"""
    return articles_claimable().exists()


def site_rerender(
    *,
    force: bool = False,
    again: bool = False,
    budget: float | None = None,
    give_way: bool = False,
) -> RerenderOutcome:
    """One pass of the re-render (see the module). `force`: begin a run in this
    process's look even over a run a newer process began (`manage.py rerender_site`);
    `again`: begin a new run even if the site is in this look (`--again`).
    `give_way` (a worker's pass): after each chunk, a publish that waits for a worker
    ends the pass, as its budget would (at least one chunk a pass, so the run goes on):
    the worker's child it ran in takes the publish, and the next pass waits in the
    re-render's queue behind it (docs/performance.md, "The whole site in a new look")."""
    seconds = rerender_lease_seconds()
    trusted = lease_clock() + 0.3 * seconds  # read before the claim (work.lease.Fence)
    with scheduled_run(RERENDER_JOB, lease_seconds=seconds) as run:
        if run.skipped:
            return RerenderOutcome.BUSY
        held = run.leases[0]
        fence = Fence(
            rows=JobLease.objects.filter(name=held.name),
            token=held.token,
            fields=FIELDS,
            deadline=time.monotonic() + (rerender_budget() if budget is None else budget),
            trusted_until=trusted,
            give_way=publish_waiting if give_way else None,
        )
        try:
            outcome = _each_target(fence, force=force, again=again)
        finally:
            fence.close()
        run.detail = f"re-render: {outcome}"
    # A run that began marked the shared views for a rebuild: the refresher's next pass
    # does it (at the latest the catch-up's), not a pass asked for here.
    return outcome


def _each_target(fence: Fence, *, force: bool, again: bool) -> RerenderOutcome:
    done = True
    for publisher in get_publishers():
        try:
            done = publisher.rerender(fence=fence, force=force, again=again) is not False and done
        except Overtaken as exc:
            logger.warning("re-render: %s; the runner that took the lease goes on", exc)
            return RerenderOutcome.OVERTAKEN
    return RerenderOutcome.DONE if done else RerenderOutcome.MORE


def rerender_wanted() -> bool:
    """Does a target want a re-render pass from this process (its look changed, or a
    run is unfinished), with no runner holding the lease? For the catch-up."""
    if not any(publisher.rerender_due() for publisher in get_publishers()):
        return False
    held = JobLease.objects.filter(name=RERENDER_JOB).exclude(lease_free(FIELDS))
    return not held.exists()


def rerender_status() -> dict:
    """Every target's re-render progress (`Publisher.rerender_status`), by its class."""
    return {
        type(publisher).__name__: status
        for publisher in get_publishers()
        if (status := publisher.rerender_status()) is not None
    }
