"""Every scheduled run says what it cost, and runs of a job (and heavy jobs) never
overlap: the catch-up and the reconcile, in this process against the real database."""

from __future__ import annotations

import json
import logging
import threading
from datetime import timedelta

import pytest
from django.conf import settings
from django.db import connections
from django.utils import timezone
from pythonjsonlogger.json import JsonFormatter

from publishing.services import catch_up, site_reconcile
from tests.support.chaos import RECONCILE_RULE, release
from tests.support.waiting import wait_for
from work.job_leases import HEAVY, lease_take
from work.models import JobLease, JobOutcome, JobRun
from work.runs import scheduled_run

pytestmark = pytest.mark.django_db(transaction=True)

SUMMARY_FIELDS = (
    "job",
    "wall_s",
    "cpu_s",
    "rows_read",
    "rows_written",
    "io_read_bytes",
    "io_write_bytes",
    "peak_rss_bytes",
)


def summary_records(caplog, job: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if getattr(r, "job", None) == job and hasattr(r, "wall_s")]


def test_each_run_ends_with_one_summary_line_with_every_field_and_a_jobrun(caplog, make_article):
    from publishing.models import Article

    # Scheduled far ahead, so nothing sends it; then made a lost message of long ago: the
    # catch-up reads the row and sends it again.
    stale = make_article(publish_at=timezone.now() + timedelta(days=1))
    Article.objects.filter(pk=stale.pk).update(
        updated_at="2000-01-01T00:00:00Z", publish_at="2000-01-01T00:00:00Z"
    )
    caplog.set_level(logging.INFO, logger="clock.runs")
    catch_up()  # a fresh database: the full check is due, so the reconcile runs too

    for job in ("catch-up", "reconcile"):
        [record] = summary_records(caplog, job)
        line = json.loads(JsonFormatter("%(message)s").format(record))  # LOG_FORMAT=json
        assert set(SUMMARY_FIELDS) <= line.keys(), line
        assert line["job"] == job and line["outcome"] == "ok"
        assert line["wall_s"] >= 0 and line["cpu_s"] >= 0
        assert line["peak_rss_bytes"] > 0
        assert line["io_read_bytes"] is not None and line["io_write_bytes"] is not None
        [run] = JobRun.objects.filter(job=job)
        assert run.outcome == JobOutcome.OK
        assert (run.rows_read, run.rows_written) == (line["rows_read"], line["rows_written"])
    catch_up_line = summary_records(caplog, "catch-up")[0]
    # It read the stale article and marked it sent; the reconcile wrote its pass.
    assert catch_up_line.rows_read >= 1 and catch_up_line.rows_written >= 1
    assert summary_records(caplog, "reconcile")[0].rows_written >= 1


def test_rows_are_counted_as_fetched_and_as_the_driver_reports_writes(make_article):
    from publishing.models import Article

    articles = [make_article() for _ in range(3)]
    with scheduled_run("counting", lease_seconds=30) as run:
        assert not run.skipped
        assert len(list(Article.objects.values_list("id", flat=True))) == 3
        Article.objects.filter(pk__in=[a.pk for a in articles[:2]]).update(last_error="x")
    counted = JobRun.objects.get(job="counting")
    assert (counted.rows_read, counted.rows_written) == (3, 2)


def test_a_second_reconcile_while_the_first_runs_is_skipped_and_says_so(caplog, chaos):
    chaos(RECONCILE_RULE, hold=60)

    def reconcile_in_thread() -> None:
        try:
            site_reconcile()
        finally:
            connections.close_all()  # this thread's connection, or PostgreSQL keeps the DB

    first = threading.Thread(target=reconcile_in_thread)
    first.start()
    try:
        wait_for(
            lambda: (settings.RUN_DIR / "pids" / RECONCILE_RULE).exists(),
            timeout=30,
            what="the first reconcile to be running",
        )
        caplog.set_level(logging.INFO, logger="clock.runs")
        site_reconcile()
        skips = [r for r in caplog.records if r.getMessage().startswith("skipped: ")]
        assert len(skips) == 1
        assert skips[0].getMessage().startswith("skipped: reconcile still running since ")
        assert JobRun.objects.filter(job="reconcile", outcome=JobOutcome.SKIPPED).count() == 1
        # A large catch-up batch is heavy too: it waits for the reconcile, as a whole.
        assert lease_take(name=HEAVY, job="catch-up", seconds=30).__class__.__name__ == "Busy"
    finally:
        release(RECONCILE_RULE)
        first.join(60)
        (settings.RUN_DIR / "pids" / RECONCILE_RULE).unlink(missing_ok=True)
    assert JobRun.objects.filter(job="reconcile", outcome=JobOutcome.OK).count() == 1
    # Both leases were let go at the first run's end.
    assert not JobLease.objects.filter(lease_expires_at__isnull=False).exists()
    site_reconcile()
    assert JobRun.objects.filter(job="reconcile", outcome=JobOutcome.OK).count() == 2


def test_a_large_catch_up_batch_beside_the_reconcile_sends_only_a_small_batch(
    caplog, make_article, settings
):
    settings.PUBLISH_CATCHUP_HEAVY_BATCH = 2
    settings.PUBLISH_STALE_AFTER = 0
    from publishing.models import Article

    # Scheduled far ahead, so nothing sends them (the session's worker, if a test started
    # it, would publish them first); then lost messages of long ago.
    ahead = timezone.now() + timedelta(days=1)
    ids = [make_article(publish_at=ahead).pk for _ in range(5)]
    Article.objects.filter(pk__in=ids).update(
        updated_at="2000-01-01T00:00:00Z", publish_at="2000-01-01T00:00:00Z"
    )
    held = lease_take(name=HEAVY, job="reconcile", seconds=60)  # the reconcile runs
    caplog.set_level(logging.INFO)
    report = catch_up()
    assert report.stale_found == 2, report
    assert any("the heavy job reconcile still running" in r.getMessage() for r in caplog.records)
    JobLease.objects.filter(name=HEAVY, takes=held.token).update(lease_expires_at=None)


def test_metrics_show_each_jobs_last_run(client, make_article):
    catch_up()
    text = client.get("/metrics", REMOTE_ADDR="127.0.0.1").content.decode()
    for job in ("catch-up", "reconcile"):
        run = JobRun.objects.get(job=job)
        assert f'blogpublish_job_last_run_rows_read{{job="{job}"}} {float(run.rows_read)}' in text
        assert f'blogpublish_job_last_run_timestamp_seconds{{job="{job}",outcome="ok"}}' in text
    assert 'blogpublish_job_last_run_wall_seconds{job="catch-up"}' in text


def _record_runs(runs: int) -> None:
    """`runs` more runs of two jobs, two minutes apart, all of them ok."""
    start = timezone.now() - timedelta(days=1)
    JobRun.objects.bulk_create(
        JobRun(
            job=job,
            outcome=JobOutcome.OK,
            started_at=start + timedelta(seconds=120 * i),
            finished_at=start + timedelta(seconds=120 * i + 1),
        )
        for job in ("catch-up", "reconcile")
        for i in range(runs)
    )


def _scrape_jobs() -> tuple[int, str]:
    """The statements that add the jobs' gauges, and the text they expose."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from prometheus_client import CollectorRegistry, generate_latest

    from work.metrics import add_job_gauges

    registry = CollectorRegistry()
    with CaptureQueriesContext(connection) as queries:
        add_job_gauges(registry)
    return len(queries), generate_latest(registry).decode()


def test_job_gauges__queries_do_not_grow_with_the_runs_recorded():
    _record_runs(5)
    few, _ = _scrape_jobs()
    _record_runs(45)
    many, text = _scrape_jobs()

    assert many == few
    for job in ("catch-up", "reconcile"):
        line = f'blogpublish_job_last_run_wall_seconds{{job="{job}"}}'
        assert text.count(line) == 1, text


@pytest.mark.skipif("connections['default'].vendor != 'postgresql'", reason="PostgreSQL's counts")
def test_job_gauges__rows_read_do_not_grow_with_the_runs_recorded():
    """Each statement finds its rows by an index, not by reading the history: a
    DISTINCT of the jobs read every run, and a job's last run of an outcome it never
    had (failed, skipped) walked all its runs (a year of catch-ups: half a second)."""
    from django.db import connection, transaction

    counted = """SELECT sum(pg_stat_get_xact_tuples_returned(oid)) FROM pg_class
        WHERE oid = 'clock_jobrun'::regclass OR oid IN (
            SELECT indexrelid FROM pg_index WHERE indrelid = 'clock_jobrun'::regclass)"""

    def entries_read() -> int:
        """Rows and index entries of clock_jobrun a scrape read (pg_stat_get_xact_*:
        this transaction's own counts), sequential scans off, as a long history makes
        the planner choose."""
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute(counted)
            before = cursor.fetchone()[0]
            _scrape_jobs()
            cursor.execute(counted)
            return cursor.fetchone()[0] - before

    _record_runs(5)
    few = entries_read()
    _record_runs(45)

    assert entries_read() == few
