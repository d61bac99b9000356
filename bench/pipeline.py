"""blogpublish side by side with bare Celery, in one run, on PostgreSQL and SQLite.

One private redis-server for the whole run (started on a free port, stopped by PID);
per database, two child processes (bench/child.py), each on a fresh database:

- pipeline: bare Celery's no-op drain and idle round trip (bench/bare.py), then
  blogpublish's idle save→published, burst drain, shared-page lag and worker RSS
  (bench/phases.py). Both workers: `celery -A <app>` + bench.support.WORKER_FLAGS.
- import: N Markdown files imported (files/s), then published by batch tasks, beside
  bare Celery's no-op drain of N tasks measured in the same child (bench/importing.py).
- catchup: catch-up + reconcile time with 10 k, 100 k (and 1 M) articles in the table
  (bench/catchup.py).

Prints one table per database with every ratio, and writes the whole run as JSON to
bench/results/<UTC timestamp>-<host>.json and bench/results/latest.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from bench.report import database_report, ratios, write_results
from bench.support import PG_URL, ROOT, WORKER_FLAGS, private_redis

FULL = {
    "bare": 1_000,
    "idle": 300,
    "burst": 1_000,
    "rss_total": 20_000,
    "catchup_sizes": [10_000, 100_000, 1_000_000],
    "catchup_runs": 3,
    "import_files": 10_000,
}
MODES = (
    "pipeline",
    "import",
    "import_live",
    "catchup",
)  # bench/child.py's, each on a fresh database
QUICK = {**FULL, "rss_total": 5_000, "catchup_sizes": [10_000, 100_000], "import_files": 2_000}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("pipeline (sizes default to the full or --quick set)")
    group.add_argument("--databases", default="postgres,sqlite", help="comma-separated")
    group.add_argument("--bare", type=int, help="bare Celery: no-op tasks in the drain")
    group.add_argument("--idle", type=int, help="idle saves and idle round trips (each)")
    group.add_argument("--burst", type=int, help="articles saved while the worker is stopped")
    group.add_argument("--rss-total", type=int, help="publishes before the second RSS reading")
    group.add_argument("--catchup-sizes", help="comma-separated article counts")
    group.add_argument("--catchup-runs", type=int, help="timed catch-ups per size")
    group.add_argument(
        "--import-files", type=int, help="Markdown files imported, then published (issue 9)"
    )
    group.add_argument(
        "--only",
        help=f"comma-separated scenarios of {', '.join(MODES)} (default: all), e.g."
        " `bench/run.py pipeline --only import --databases postgres`",
    )
    group.add_argument("--results-dir", type=Path, default=ROOT / "bench" / "results")


def sizes(args: argparse.Namespace) -> dict:
    params = dict(QUICK if args.quick else FULL)
    for name in ("bare", "idle", "burst", "rss_total", "catchup_runs", "import_files"):
        if getattr(args, name) is not None:
            params[name] = getattr(args, name)
    if args.catchup_sizes:
        params["catchup_sizes"] = [int(n) for n in args.catchup_sizes.split(",")]
    return params


def run_child(mode: str, database: str, params: dict) -> dict:
    cmd = [sys.executable, str(ROOT / "bench" / "child.py"), mode, database, json.dumps(params)]
    out = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True, timeout=3 * 3600)
    lines = out.stdout.strip().splitlines()
    if out.returncode != 0 or not lines:
        return {"failed": f"bench/child.py {mode} {database} exited {out.returncode} (see above)"}
    return json.loads(lines[-1])


def describe(params: dict) -> None:
    print("\nblogpublish side by side with bare Celery: same private Redis, same worker flags")
    print(f"  worker: celery -A <config | bench.bare> {' '.join(WORKER_FLAGS)}")
    print("  Celery configuration of both: config.settings' CELERY_* (acks_late, prefetch 1, …)")
    print("  bare no-op task: RPUSH time.time() into a list on the same Redis (its run time)")
    print("  drain rate: (n - 1) / (last - first) run time (bare) or published_at (blogpublish)")
    print(
        f"  sizes: drain {params['bare']:,} tasks / {params['burst']:,} articles; idle"
        f" {params['idle']} each; RSS after {params['burst']:,} and {params['rss_total']:,}"
        f" publishes; catch-up at {', '.join(f'{n:,}' for n in params['catchup_sizes'])}"
        f" articles, median of {params['catchup_runs']} after a warm-up;"
        f" import {params['import_files']:,} Markdown files (bare drain of as many no-ops)"
    )


def git(*args: str) -> str:
    out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
    return out.stdout.strip()


def environment_facts() -> dict:
    import celery
    import django
    import kombu

    return {
        "host": socket.gethostname(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "django": django.get_version(),
        "celery": celery.__version__,
        "kombu": kombu.__version__,
        "git_commit": git("rev-parse", "HEAD"),
        "git_branch": git("rev-parse", "--abbrev-ref", "HEAD"),
        "git_dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
        "postgres_url": PG_URL,
    }


def bench_pipeline(args: argparse.Namespace) -> None:
    params = sizes(args)
    modes = MODES
    if args.only:
        modes = tuple(mode.strip() for mode in args.only.split(",") if mode.strip())
        unknown = set(modes) - set(MODES)
        if unknown:
            raise SystemExit(f"--only: no scenario {', '.join(sorted(unknown))} ({MODES})")
    describe(params)
    load_before = os.getloadavg()
    started_utc, started = datetime.now(UTC).isoformat(), time.monotonic()
    workdir = Path(tempfile.mkdtemp(prefix="blogpublish-bench-"))
    results: dict[str, dict] = {}
    try:
        with private_redis(workdir) as redis_url:
            for database in args.databases.split(","):
                child_params = {**params, "redis_url": redis_url}
                results[database] = {
                    mode: run_child(mode, database, child_params) for mode in modes
                }
                print(database_report(database, results[database]), flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    document = {
        "started_utc": started_utc,
        "wall_s": time.monotonic() - started,
        "quick": args.quick,
        "scenarios": list(modes),
        # The machine's 1/5/15-minute load averages as the run began and ended: on a
        # shared machine, the figures are comparable only within one run.
        "load_average": {"before": load_before, "after": os.getloadavg()},
        "params": params,
        "worker_flags": WORKER_FLAGS,
        "environment": environment_facts(),
        "results": results,
        "ratios": {database: ratios(result) for database, result in results.items()},
    }
    path = write_results(args.results_dir, document)
    print(f"\n(pipeline: {document['wall_s']:.0f} s; results in {path})")
