"""The clock's gauges in /metrics: the last run of each scheduled job, as its summary
line said (work.runs). Kept apart from publishing's metrics: one call adds them."""

from __future__ import annotations

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
    # order_by(): Meta.ordering's started_at would join the DISTINCT, one row per run
    # ever recorded, and four queries each (a review's finding: a day of catch-ups made
    # a scrape take 7 s, a week 50 s).
    jobs = JobRun.objects.order_by().values_list("job", flat=True).distinct()
    for job in jobs:
        for outcome in JobOutcome:
            last = JobRun.objects.filter(job=job, outcome=outcome).order_by("-started_at").first()
            if last:
                when.labels(job, outcome.value).set(last.finished_at.timestamp())
        ran = (
            JobRun.objects.filter(job=job)
            .exclude(outcome=JobOutcome.SKIPPED)
            .order_by("-started_at")
            .first()
        )
        if ran is None:
            continue
        for name, (field, _) in FIGURES.items():
            value = getattr(ran, field)
            if value is not None:
                gauges[name].labels(job).set(value)
