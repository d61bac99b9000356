"""The clock's gauges in /metrics: the last run of each scheduled job, as its summary
line said (work.runs). Kept apart from publishing's metrics: one call adds them."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Gauge

from work.models import JobOutcome, JobRun

FIGURES = {
    "wall_seconds": ("wall_s", "Wall time of the job's last run"),
    "cpu_seconds": ("cpu_s", "CPU time of the job's last run"),
    "rows_read": ("rows_read", "Database rows read by the job's last run"),
    "rows_written": ("rows_written", "Database rows written by the job's last run"),
    "io_read_bytes": ("io_read_bytes", "Bytes read from storage by the job's last run"),
    "io_write_bytes": ("io_write_bytes", "Bytes written to storage by the job's last run"),
    "peak_rss_bytes": ("peak_rss_bytes", "Peak RSS of the process of the job's last run"),
}


def add_job_gauges(registry: CollectorRegistry) -> None:
    """blogpublish_job_last_run_timestamp_seconds{job,outcome} and the figures of each
    job's last run that was not skipped (blogpublish_job_last_run_<figure>{job})."""
    when = Gauge(
        "blogpublish_job_last_run_timestamp_seconds",
        "When the job's last run (of this outcome) finished",
        ["job", "outcome"],
        registry=registry,
    )
    gauges = {
        name: Gauge(f"blogpublish_job_last_run_{name}", text, ["job"], registry=registry)
        for name, (_, text) in FIGURES.items()
    }
    for job in _jobs():
        last = {
            outcome: JobRun.objects.filter(job=job, outcome=outcome).order_by("-started_at").first()
            for outcome in JobOutcome
        }
        for outcome, run in last.items():
            if run is not None:
                when.labels(job, outcome.value).set(run.finished_at.timestamp())
        ran = max(
            (run for outcome, run in last.items() if run and outcome != JobOutcome.SKIPPED),
            key=lambda run: run.started_at,
            default=None,
        )
        if ran is None:
            continue
        for name, (field, _) in FIGURES.items():
            value = getattr(ran, field)
            if value is not None:
                gauges[name].labels(job).set(value)


def _jobs() -> Iterator[str]:
    """The name of each job that has a run, one seek into an index of `job` each
    (a loose index scan). A scrape reads as many rows as there are jobs and outcomes,
    however long the history: JobRun rows are never deleted, and a DISTINCT read every
    one (with Meta.ordering's started_at, it even made one "job" of each run: a day of
    catch-ups made a scrape take 7 s, a review's finding)."""
    rows = JobRun.objects.order_by("job").values_list("job", flat=True)
    job = rows.first()
    while job is not None:
        yield job
        job = rows.filter(job__gt=job).first()
