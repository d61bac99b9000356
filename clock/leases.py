"""Job leases: a run of a job does not start while the previous one still runs, and the
heavy jobs (the reconcile, a large catch-up batch) do not overlap each other.

A lease is a `JobLease` row taken with one conditional UPDATE (free, or expired), as an
article is claimed; it is let go at the run's end by its token (`takes`), so a run that
outlived its lease cannot free the lease of the run that took over. A run whose process
died holds nobody up past its lease.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import IntegrityError
from django.db.models import DateTimeField, ExpressionWrapper, F, Q, Value
from django.db.models.functions import Now

from clock.models import JobLease

HEAVY = "heavy"


@dataclass(frozen=True)
class Lease:
    name: str
    token: int


@dataclass(frozen=True)
class Busy:
    """The lease is held: by which job's run, since when."""

    name: str
    running_job: str
    since: datetime | None


def now_plus(seconds: float) -> ExpressionWrapper:
    return ExpressionWrapper(
        Now() + Value(timedelta(seconds=seconds)), output_field=DateTimeField()
    )


def lease_take(*, name: str, job: str, seconds: float) -> Lease | Busy:
    """Take the lease `name` for `seconds` on behalf of a run of `job`."""
    rows = JobLease.objects.filter(name=name)
    if not rows.exists():
        with contextlib.suppress(IntegrityError):  # made by a concurrent run
            JobLease.objects.create(name=name)
    free = Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lte=Now())
    taken = rows.filter(free).update(
        lease_expires_at=now_plus(seconds),
        running_job=job,
        held_since=Now(),
        takes=F("takes") + 1,
    )
    row = rows.values("takes", "running_job", "held_since").get()
    if taken:
        # Nobody else can take it while it is ours: the count read now is our token.
        return Lease(name, row["takes"])
    return Busy(name, row["running_job"], row["held_since"])


def lease_release(lease: Lease) -> None:
    JobLease.objects.filter(name=lease.name, takes=lease.token).update(lease_expires_at=None)


def lease_renew(lease: Lease, *, seconds: float) -> bool:
    """Hold the lease `seconds` from now; False when it was lost (it ran out and another
    run took it)."""
    rows = JobLease.objects.filter(name=lease.name, takes=lease.token)
    return bool(rows.update(lease_expires_at=now_plus(seconds)))
