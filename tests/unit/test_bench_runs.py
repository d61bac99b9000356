"""The benchmarks still run (they are not tests: this only keeps them from rotting)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.support.processes import ROOT


def test_site_benchmark_runs_on_a_small_site():
    result = subprocess.run(
        [sys.executable, "bench/run.py", "site", "--first", "20", "--then", "30", "--window", "25"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert result.returncode == 0, result.stderr[-2000:]
    assert "site size" in result.stdout and "reconcile" in result.stdout


@pytest.mark.skipif(
    os.environ.get("BLOGPUBLISH_TEST_DB") == "postgres", reason="once per suite: on SQLite"
)
def test_side_by_side_benchmark_runs_at_tiny_sizes(tmp_path):
    """Every code path of `make bench`'s pipeline part (bare Celery, blogpublish's idle,
    burst, shared pages, RSS, catch-up with synthetic rows, import → published by batches,
    with no worker and beside a running one), on SQLite, at tiny sizes."""
    tiny = ["--bare", "20", "--idle", "10", "--burst", "20", "--rss-total", "30"]
    tiny += ["--catchup-sizes", "50,120", "--catchup-runs", "1", "--databases", "sqlite"]
    tiny += ["--import-files", "30"]
    result = subprocess.run(
        [sys.executable, "bench/run.py", "pipeline", *tiny, "--results-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert result.returncode == 0, result.stderr[-3000:]
    assert "failed" not in result.stdout, result.stdout + result.stderr[-3000:]
    document = json.loads((tmp_path / "latest.json").read_text())
    assert set(document["ratios"]["sqlite"]) == {
        "burst_drain_per_bare_drain",
        "burst_from_ready_per_bare",
        "idle_p50_per_bare_p50",
        "idle_p99_per_bare_p99",
        "rss_last_per_first",
        "catch_up_largest_per_smallest",
        "import_publish_per_bare_drain",
        "import_end_to_end_per_bare_drain",
        "import_live_per_bare_drain",
    }
    imported = document["results"]["sqlite"]["import"]
    assert imported["import"]["counts"] == {"created": 30}
    assert imported["publish"]["n"] == 30
    live = document["results"]["sqlite"]["import_live"]
    assert live["import"]["counts"] == {"created": 30}
    assert live["publish"]["n"] == 30
    assert [s["articles"] for s in document["results"]["sqlite"]["catchup"]["catch_up"]] == [
        50,
        120,
    ]


@pytest.mark.each_database  # the benchmark's process uses the run's kind of database
def test_operator_benchmark_runs_at_tiny_sizes():
    """bench/operator_views.py (the dashboard and /metrics with many articles and attempts)
    on this run's kind of database, at tiny sizes."""
    database = "postgres" if os.environ.get("BLOGPUBLISH_TEST_DB") == "postgres" else "sqlite"
    tiny = ["--operator-articles", "300", "--operator-attempts", "1000"]
    result = subprocess.run(
        [sys.executable, "bench/run.py", "operator", *tiny, "--databases", database],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert result.returncode == 0, result.stderr[-3000:]
    assert f"Operator reads on {database}: 300 articles, 1,000 attempts" in result.stdout
    for row in ("dashboard page", "dashboard live fragment", "GET /metrics"):
        assert row in result.stdout, result.stdout


def test_rerender_benchmark_runs_on_a_tiny_site():
    """bench/rerender.py (issue 20, item 5) at 30 articles on disk and 20 in a bucket of
    moto's server: its own PostgreSQL database, the first run, the re-render in a new
    look, the bucket alone (the same requests), Hugo's build of the same Markdown."""
    # No workers (--rerender-saves 0): their part runs in `make bench`.
    args = ["rerender", "--rerender-articles", "30", "--rerender-bucket-articles", "20"]
    args += ["--rerender-saves", "0"]
    result = subprocess.run(
        [sys.executable, "bench/run.py", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert result.returncode == 0, result.stderr[-2000:]
    assert "re-render in a new look" in result.stdout
    for written in ("(30 written)", "(20 written)"):  # every page, in the new look
        assert written in result.stdout, result.stdout
    assert "hugo, full build" in result.stdout, result.stdout
    # The bucket's own floor, beside its re-render (once: the disk has none).
    assert result.stdout.count("the bucket alone, same requests") == 1, result.stdout
