"""Job leases: a run of a job does not start while the previous one still runs, and the
heavy jobs (the reconcile, a large catch-up batch) do not overlap each other.

A lease is a `JobLease` row held through the one fenced lease (work.lease), its token
the `takes` counter; it is let go at the run's end by that token, so a run that
outlived its lease cannot free the lease of the run that took over. A run whose
process died holds nobody up past its lease.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from datetime import datetime

from django.db import IntegrityError
from django.db.models.functions import Now

from work import lease
from work.models import JobLease

HEAVY = "heavy"
FIELDS = lease.LeaseFields(token="takes", attempts=None)


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


def lease_take(*, name: str, job: str, seconds: float) -> Lease | Busy:
    """Take the lease `name` for `seconds` on behalf of a run of `job`."""
    rows = JobLease.objects.filter(name=name)
    if not rows.exists():
        with contextlib.suppress(IntegrityError):  # made by a concurrent run
            JobLease.objects.create(name=name)
    token = lease.claim_token(
        rows, seconds=seconds, fields=FIELDS, running_job=job, held_since=Now()
    )
    if token is not None:
        return Lease(name, token)
    row = rows.values("running_job", "held_since").get()
    return Busy(name, row["running_job"], row["held_since"])


def lease_release(held: Lease) -> None:
    lease.release(JobLease.objects.filter(name=held.name), held.token, fields=FIELDS)


def lease_renew(held: Lease, *, seconds: float) -> bool:
    """Hold the lease `seconds` from now; False when it was lost (it ran out and another
    run took it)."""
    rows = JobLease.objects.filter(name=held.name)
    return lease.renew(rows, held.token, seconds=seconds, fields=FIELDS)
