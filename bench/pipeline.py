"""The pipeline end to end: save → on_commit → Redis → worker → page on disk.

A private redis-server, a real `celery worker` (prefork, concurrency 2) and a fresh
database (SQLite, and PostgreSQL when one answers at TEST_POSTGRES_URL). Two numbers:

- latency: articles saved one at a time at a steady pace; for each, the time from its
  save to its completion (`published_at - created_at`, both on this host's clock);
- throughput: a burst of saves as fast as the ORM goes; articles per second from the
  first save until the last one is published.

Run as `python bench/run.py pipeline` (it re-executes itself per database, because
Django is set up once per process).
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PG_URL = os.environ.get("TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres")


def bench_pipeline(args) -> None:
    print("\nPipeline: save -> published, real worker (prefork, concurrency 2), private Redis")
    print(
        f"(latency: {args.paced} saves {1000 / args.rate:.0f} ms apart; "
        f"throughput: a burst of {args.burst} saves)\n"
    )
    header = (
        f"{'database':<10} {'save p50':>9} {'latency p50':>12} {'p95':>8} {'max':>8}"
        f" {'burst':>7} {'articles/s':>11}"
    )
    print(header)
    print("-" * len(header))
    for database in ("sqlite", "postgres"):
        out = subprocess.run(
            [sys.executable, __file__, database, str(args.paced), str(args.rate), str(args.burst)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=900,
        )
        if out.returncode != 0:
            print(f"{database:<10} failed: {out.stderr.strip().splitlines()[-1:]}")
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        if "skipped" in r:
            print(f"{database:<10} skipped: {r['skipped']}")
            continue
        print(
            f"{database:<10} {r['save_p50_ms']:>7.1f}ms {r['latency_p50_ms']:>10.0f}ms"
            f" {r['latency_p95_ms']:>6.0f}ms {r['latency_max_ms']:>6.0f}ms"
            f" {r['burst']:>7} {r['per_second']:>11.1f}"
        )


# --- one database, in a process of its own ----------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.05)


@contextmanager
def running(cmd: list[str], log: Path, env: dict):
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def postgres_database(name: str, action: str) -> str | None:
    import psycopg

    try:
        with psycopg.connect(PG_URL, autocommit=True, connect_timeout=3) as conn:
            conn.execute(f'{action} DATABASE "{name}"')
    except psycopg.Error as exc:
        return str(exc).strip()
    return None


def run_one(database: str, paced: int, rate: float, burst: int) -> dict:
    workdir = Path(tempfile.mkdtemp(prefix="blogpublish-bench-pipeline-"))
    port = free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "SITE_ROOT": str(workdir / "site"),
        "CELERY_BROKER_URL": f"redis://127.0.0.1:{port}/0",
        "PUBLISH_WEBHOOK_URL": "",
        "DEBUG": "0",
        "SECRET_KEY": "bench",
        "PYTHONUNBUFFERED": "1",
    }
    pg_name = f"bp_bench_{uuid.uuid4().hex[:8]}"
    if database == "postgres":
        problem = postgres_database(pg_name, "CREATE")
        if problem:
            return {"skipped": f"no PostgreSQL at {PG_URL}: {problem}"}
        env["DATABASE_URL"] = f"{PG_URL.rsplit('/', 1)[0]}/{pg_name}"
    else:
        env["DATABASE_URL"] = f"sqlite:///{workdir / 'bench.sqlite3'}"
    os.environ.update(env)
    try:
        redis_cmd = [
            "redis-server",
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ]
        with running(redis_cmd, workdir / "redis.log", env):
            return measure(workdir, env, paced, rate, burst)
    finally:
        if database == "postgres":
            from django.db import connections

            connections.close_all()
            postgres_database(pg_name, "DROP")


def measure(workdir: Path, env: dict, paced: int, rate: float, burst: int) -> dict:
    import django

    django.setup()
    import logging

    from django.core.management import call_command

    logging.disable(logging.WARNING)
    call_command("migrate", verbosity=0)
    from publishing.models import Article, ArticleStatus

    log = workdir / "worker.log"
    worker_cmd = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "config",
        "worker",
        "-l",
        "info",
        "-P",
        "prefork",
        "-c",
        "2",
        "--without-gossip",
        "--without-mingle",
    ]
    with running(worker_cmd, log, env):
        wait_until(lambda: " ready." in log.read_text(errors="replace"), 60, "the worker")

        def save(prefix: str, n: int) -> tuple[int, float]:
            article = Article(
                title=f"{prefix} {n}",
                slug=f"{prefix}-{n}",
                body=f"# {prefix} {n}\n\n" + "Some *Markdown* text. " * 50,
            )
            started = time.perf_counter()
            article.save()
            return article.pk, time.perf_counter() - started

        def all_published(ids: list[int]) -> bool:
            done = Article.objects.filter(pk__in=ids, status=ArticleStatus.PUBLISHED).count()
            return done == len(ids)

        save("warmup", 0)  # first connections, first import of the task in the children
        paced_ids, save_times = [], []
        for n in range(paced):
            pk, seconds = save("paced", n)
            paced_ids.append(pk)
            save_times.append(seconds)
            time.sleep(1 / rate)  # the pace of the writers, not a wait for a result
        wait_until(lambda: all_published(paced_ids), 300, "the paced articles")
        latencies = sorted(
            (a.published_at - a.created_at).total_seconds() * 1000
            for a in Article.objects.filter(pk__in=paced_ids)
        )

        started = time.perf_counter()
        burst_ids = [save("burst", n)[0] for n in range(burst)]
        wait_until(lambda: all_published(burst_ids), 600, "the burst")
        elapsed = time.perf_counter() - started

    return {
        "save_p50_ms": statistics.median(save_times) * 1000,
        "latency_p50_ms": latencies[len(latencies) // 2],
        "latency_p95_ms": latencies[int(len(latencies) * 0.95)],
        "latency_max_ms": latencies[-1],
        "burst": burst,
        "per_second": burst / elapsed,
    }


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    db, n_paced, pace, n_burst = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
    print(json.dumps(run_one(db, n_paced, pace, n_burst)))
