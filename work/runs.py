"""Scheduled runs: one at a time per job, the heavy ones one at a time overall, and each
ending with one summary line and a `JobRun` row saying what it cost.

    with scheduled_run("reconcile", lease_seconds=330, heavy=True) as run:
        if run.skipped:
            return
        ...
        run.detail = "what it did"

A run whose job (or, for a heavy one, the heavy lease) is held logs
"skipped: <job> still running since <time>" and does nothing.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from django.utils import timezone

from work.job_leases import HEAVY, Busy, Lease, lease_release, lease_renew, lease_take
from work.metering import Meter
from work.models import JobOutcome, JobRun

# The name the summary lines have always had (docs/operations.md): log filters keep working.
logger = logging.getLogger("clock.runs")


@dataclass
class Run:
    job: str
    lease_seconds: float
    skipped: bool = False
    # Set by a run that ended without an error but without doing its work (a full check
    # a target failed): recorded `failed`, as a run that raised is, never `ok`.
    failed: bool = False
    detail: str = ""
    leases: list[Lease] = field(default_factory=list)

    def renew(self) -> None:
        """Extend the run's leases by `lease_seconds` from now: a run made of steps (the
        digest's days) holds them for its next step, so that a run that died lets go
        one step's lease after it, not the whole run's."""
        for lease in self.leases:
            lease_renew(lease, seconds=self.lease_seconds)

    def take_heavy(self) -> Busy | None:
        """Take the heavy lease for the rest of this run (a job that turns out heavy, such
        as a large catch-up batch); None when taken, else who holds it."""
        if any(lease.name == HEAVY for lease in self.leases):
            return None
        got = lease_take(name=HEAVY, job=self.job, seconds=self.lease_seconds)
        if isinstance(got, Busy):
            return got
        self.leases.append(got)
        return None


def busy_message(job: str, busy: Busy) -> str:
    since = busy.since.isoformat(timespec="seconds") if busy.since else "an unknown time"
    if busy.name == HEAVY and busy.running_job != job:
        return f"skipped: {job}: the heavy job {busy.running_job} still running since {since}"
    return f"skipped: {busy.running_job or job} still running since {since}"


def _record_skip(job: str, busy: Busy) -> None:
    message = busy_message(job, busy)
    logger.info(message, extra={"job": job, "outcome": JobOutcome.SKIPPED.value})
    now = timezone.now()
    JobRun.objects.create(
        job=job,
        outcome=JobOutcome.SKIPPED,
        started_at=now,
        finished_at=now,
        host=socket.gethostname(),
        detail=message,
    )


@contextmanager
def scheduled_run(
    job: str, *, lease_seconds: float, heavy: bool = False, exclusive: bool = True
) -> Iterator[Run]:
    """One run of `job` (see the module). `exclusive=False`: no lease of the job's own
    (a manual run, guarded by what it works on); measured and recorded all the same."""
    run = Run(job=job, lease_seconds=lease_seconds)
    if exclusive:
        got = lease_take(name=job, job=job, seconds=lease_seconds)
        if isinstance(got, Busy):
            _record_skip(job, got)
            run.skipped = True
            yield run
            return
        run.leases.append(got)
    if heavy and (busy := run.take_heavy()) is not None:
        _release(run)
        _record_skip(job, busy)
        run.skipped = True
        yield run
        return
    started_at = timezone.now()
    meter = Meter().start()
    outcome = JobOutcome.FAILED
    try:
        yield run
        outcome = JobOutcome.FAILED if run.failed else JobOutcome.OK
    finally:
        figures = meter.stop()
        _release(run)
        fields = {"job": job, "outcome": outcome.value, **figures.as_log_fields()}
        logger.info(
            "job %s %s: %s%s",
            job,
            outcome.value,
            " ".join(f"{k}={v}" for k, v in figures.as_log_fields().items()),
            f" ({run.detail})" if run.detail else "",
            extra=fields,
        )
        try:
            JobRun.objects.create(
                job=job,
                outcome=outcome,
                started_at=started_at,
                finished_at=timezone.now(),
                host=socket.gethostname(),
                detail=run.detail[:2000],
                **{k: getattr(figures, k) for k in _FIGURE_FIELDS},
            )
        except Exception:  # a database that went away must not hide the run's own error
            logger.exception("job %s: its run could not be recorded", job)


_FIGURE_FIELDS = (
    "wall_s",
    "cpu_s",
    "rows_read",
    "rows_written",
    "io_read_bytes",
    "io_write_bytes",
    "peak_rss_bytes",
    "rss_growth_bytes",
)


def _release(run: Run) -> None:
    """Let go of the run's leases; one that cannot be let go (the database went away)
    expires on its own."""
    for lease in run.leases:
        try:
            lease_release(lease)
        except Exception:
            logger.exception("job %s: the %s lease expires on its own", run.job, lease.name)
    run.leases.clear()
