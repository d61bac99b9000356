"""The operator's reads on a large table: the admin dashboard and the /metrics scrape.

    .venv/bin/python bench/run.py operator [--quick] [--databases postgres,sqlite]
        [--operator-articles N] [--operator-attempts M]

Per database (a fresh one, in a child process: bench/child.py operator …): N published
articles made by one set-based INSERT (bench/catchup.py), a few hundred of them then
made dead and pending-with-failed-attempts, M PublishAttempt rows by one more INSERT, and
26 hours of metrics rollup as busy workers would leave it (publishing.rollup: every hour
and the last 70 minutes, on every shard, compacted as the catch-up does). Then,
in this process through Django's test client (server time: the view, its queries, the
template, and the broker's queue lengths from the private Redis), after one warm-up
each: the dashboard page, its live fragment (what the page fetches every 5 s), and
GET /metrics with the bearer token. The target (issue 11): the dashboard under 200 ms
and a scrape under 100 ms at 1 M articles and 5 M attempts. A measurement, not a test.
"""

from __future__ import annotations

import statistics
import time
from datetime import timedelta
from pathlib import Path

from bench.catchup import insert_published
from bench.support import progress

TOKEN = "bench-metrics-token"
FULL = {"operator_articles": 1_000_000, "operator_attempts": 5_000_000, "operator_runs": 20}
QUICK = {"operator_articles": 100_000, "operator_attempts": 500_000, "operator_runs": 10}


def insert_attempts(count: int, articles: int) -> None:
    """`count` finished attempts spread over the articles, in one statement."""
    from django.db import connection, transaction

    table = connection.ops.quote_name("publishing_publishattempt")
    columns = (
        "article_id, number, content_hash, started_at, finished_at, outcome, error, worker, "
        "task_id, duration"
    )
    if connection.vendor == "postgresql":
        sql = (
            f"INSERT INTO {table} ({columns}) SELECT 1 + mod(n, %s), 1 + n / %s, "
            "md5(n::text) || md5(n::text), now() - make_interval(secs => n), "
            "now() - make_interval(secs => n), 'ok', '', 'bench@host', md5('t' || n), "
            "interval '20 milliseconds' FROM generate_series(1, %s) AS g(n)"
        )
        args = [articles, articles, count]
    else:
        stamp = "strftime('%%Y-%%m-%%d %%H:%%M:%%S', 'now', '-' || n || ' seconds')"
        sql = (
            "WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < %s) "
            f"INSERT INTO {table} ({columns}) SELECT 1 + (n % %s), 1 + n / %s, "
            f"printf('%%064d', n), {stamp}, {stamp}, 'ok', '', 'bench@host', "
            "printf('%%032x', n), 20000 FROM g"
        )
        args = [count, articles, articles]
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, args)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {table}")


def unfinished_work(articles: int) -> dict:
    """Some dead articles (with an error) and some pending ones that failed before."""
    from django.db.models import F

    from publishing.models import Article, ArticleStatus

    step = max(articles // 200, 2)
    ids = Article.objects.annotate(m=F("id") % step)
    dead = ids.filter(m=0).update(
        status=ArticleStatus.DEAD, attempts=5, last_error="TransientPublishError: 503 " * 20
    )
    retried = ids.filter(m=1).update(status=ArticleStatus.PENDING, attempts=2, last_error="slow")
    return {"dead": dead, "pending_retried": retried}


def busy_rollup() -> int:
    """26 hours of a busy site's rollup, on every shard: every hour's outcomes and both
    histograms, and the last 70 minutes' outcomes per minute (what publishing.rollup
    keeps), then compacted as the catch-up does."""
    from django.db import connection
    from django.utils import timezone

    from publishing import rollup
    from publishing.models import MetricsBucket

    now = timezone.now().replace(second=0, microsecond=0)
    shards = range(1 if connection.vendor == "sqlite" else rollup.SHARDS)
    rows = []
    for hours_ago in range(27):
        start = now.replace(minute=0) - timedelta(hours=hours_ago)
        for shard in shards:
            for outcome, n in (("ok", 2400), ("retry", 120), ("dead", 1)):
                rows.append(
                    MetricsBucket(
                        span="h", start=start, metric="attempts", label=outcome, shard=shard, n=n
                    )
                )
            for metric, bounds in (
                ("duration", rollup.DURATION_BUCKETS),
                ("latency", rollup.LATENCY_BUCKETS),
            ):
                for bound in bounds:
                    label = rollup.format_bound(bound)
                    rows.append(
                        MetricsBucket(
                            span="h",
                            start=start,
                            metric=metric,
                            label=label,
                            shard=shard,
                            n=200,
                            total=160 * bound,
                        )
                    )
    for minutes_ago in range(70):
        start = now - timedelta(minutes=minutes_ago)
        for shard in shards:
            for outcome, n in (("ok", 40), ("retry", 2)):
                rows.append(
                    MetricsBucket(
                        span="m", start=start, metric="attempts", label=outcome, shard=shard, n=n
                    )
                )
    MetricsBucket.objects.bulk_create(rows, batch_size=2000)
    rollup.compact(now=now)
    return MetricsBucket.objects.count()


def timed_get(client, path: str, runs: int, **headers) -> dict:
    response = client.get(path, headers=headers)  # warm-up
    assert response.status_code == 200, (path, response.status_code)
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        response = client.get(path, headers=headers)
        times.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, (path, response.status_code)
    times.sort()
    return {
        "median_ms": statistics.median(times),
        "p95_ms": times[min(len(times) - 1, int(len(times) * 0.95))],
        "max_ms": times[-1],
        "bytes": len(response.content),
    }


def measure_operator(workdir: Path, env: dict, params: dict) -> dict:
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.test import Client

    from publishing.models import Article, MetricsBucket, PublishAttempt

    articles, attempts = params["operator_articles"], params["operator_attempts"]
    progress(f"operator: inserting {articles:,} articles")
    started = time.perf_counter()
    insert_published(1, articles)
    progress(f"operator: inserting {attempts:,} attempts")
    insert_attempts(attempts, articles)
    work = unfinished_work(articles)
    rollup_rows = busy_rollup()
    setup_s = time.perf_counter() - started
    settings.METRICS_TOKEN = TOKEN
    settings.ALLOWED_HOSTS = ["testserver"]
    client = Client()
    client.force_login(User.objects.create_superuser("bench-operator"))
    runs = params["operator_runs"]
    progress(f"operator: timing the dashboard, its fragment and /metrics ({runs} each)")
    return {
        "operator": {
            "articles": Article.objects.count(),
            "attempts": PublishAttempt.objects.count(),
            "rollup_rows": rollup_rows or MetricsBucket.objects.count(),
            **work,
            "setup_s": setup_s,
            "dashboard": timed_get(client, "/admin/publishing/dashboard/", runs),
            "fragment": timed_get(client, "/admin/publishing/dashboard/?fragment=1", runs),
            "metrics": timed_get(client, "/metrics", runs, Authorization=f"Bearer {TOKEN}"),
        }
    }


def operator_report(database: str, result: dict) -> str:
    if "skipped" in result or "failed" in result:
        return f"\n{database}: {result.get('skipped') or result.get('failed')}"
    r = result["operator"]
    lines = [
        f"\nOperator reads on {database}: {r['articles']:,} articles, {r['attempts']:,} "
        f"attempts, {r['dead']:,} dead, {r['pending_retried']:,} pending retried, "
        f"{r['rollup_rows']:,} rollup rows (setup {r['setup_s']:.0f} s)",
        f"  {'server time, ms':<34} {'median':>8} {'p95':>8} {'max':>8} {'target':>8}",
    ]
    for key, label, target in (
        ("dashboard", "dashboard page", 200),
        ("fragment", "dashboard live fragment (every 5 s)", 200),
        ("metrics", "GET /metrics (scrape)", 100),
    ):
        t = r[key]
        lines.append(
            f"  {label:<34} {t['median_ms']:>8.1f} {t['p95_ms']:>8.1f} {t['max_ms']:>8.1f}"
            f" {'< ' + str(target):>8}"
        )
    return "\n".join(lines)
