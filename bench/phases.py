"""The measurements of one database's pipeline run, bare Celery first, then blogpublish,
one worker at a time on the same private Redis, with the same worker flags.

bare Celery (bench/bare.py)
  drain: N no-op tasks sent while no worker runs, then the worker started; tasks per
         second from the first to the last task's recorded run time.
  round trip: sends one at a time to an idle worker; send → the task starts running.
blogpublish
  idle: saves one at a time, each waiting for its own publish; save start → published_at.
        Each body is a real post of 8 KB (bench.pathological.real_post: the Hugo corpus's
        posts end to end), as issue 18's target names.
  burst: N articles saved while the worker is stopped (the broker up, so their messages
         wait in the queue), then the worker started; articles per second from the first
         to the last published_at. Meanwhile the front page and the feed are polled every
         10 ms until both list the burst's newest articles: the shared-page lag is that
         moment minus the burst's last published_at (negative when the newest went live
         before the burst's older articles: groups take the newest first), and minus
         the newest's own last published_at.
  rss: the worker's RSS (main process + pool children, /proc VmRSS) after the burst,
       and after more publishes bring its count to rss_total (rows made by bulk_create,
       `publish_article` sent for each: the worker does what it does for saves, while
       this process stays off the two cores).

Every time is `time.time()` on this host; published_at is the database's clock, on the
same host.
"""

from __future__ import annotations

import statistics
import time
import uuid
from pathlib import Path

from bench.support import (
    percentile,
    progress,
    rate,
    tree_rss_bytes,
    wait_until,
    worker,
)

# How many of a burst's newest articles the front page and the feed must both list.
LISTED_NEWEST = 10
POLL_PAGES_EVERY = 0.01
POLL_PUBLISHED_EVERY = 0.003


def measure_pipeline(workdir: Path, env: dict, params: dict) -> dict:
    import redis

    redis.Redis.from_url(env["CELERY_BROKER_URL"]).flushall()  # a private server
    bare = measure_bare(workdir, env, params)
    blog = measure_blogpublish(workdir, env, params)
    return {"bare": bare, "blogpublish": blog}


def summary_ms(seconds: list[float]) -> dict:
    ms = [s * 1000 for s in seconds]
    return {
        "n": len(ms),
        "p50_ms": statistics.median(ms),
        "p99_ms": percentile(ms, 99),
        "max_ms": max(ms),
    }


# --- bare Celery ------------------------------------------------------------------------


def measure_bare(workdir: Path, env: dict, params: dict) -> dict:
    from bench.bare import client, noop

    drain_key, trip_key = f"bench:drain:{uuid.uuid4().hex}", f"bench:trip:{uuid.uuid4().hex}"
    count = params["bare"]
    progress(f"bare Celery: sending {count} no-op tasks, no worker running")
    with noop.app.producer_or_acquire() as producer:
        for _ in range(count):
            noop.apply_async((drain_key,), producer=producer)
    with worker("bench.bare", workdir / "bare-worker.log", env):
        ready = time.time()
        wait_until(lambda: client().llen(drain_key) >= count, 600, "the bare drain")
        runs = [float(t) for t in client().lrange(drain_key, 0, -1)]
        progress(f"bare Celery: {params['idle']} round trips to the idle worker")
        trips = round_trips(noop, trip_key, warmup=5, count=params["idle"])
    return {
        "drain": {
            "n": count,
            "per_second": rate(runs),
            "span_s": max(runs) - min(runs),
            # n / (worker ready → last run): the first run's wait counted too.
            "from_ready_per_second": count / (max(runs) - ready),
        },
        "round_trip": summary_ms(trips),
        "records": "RPUSH time.time() into a list on the broker's Redis",
    }


def round_trips(noop, key: str, *, warmup: int, count: int) -> list[float]:
    from bench.bare import client

    trips = []
    for n in range(warmup + count):
        sent = time.time()
        noop.delay(key)
        popped = client().blpop([key], timeout=30)
        if popped is None:
            raise SystemExit("a bare no-op task did not run within 30 s")
        if n >= warmup:
            trips.append(float(popped[1]) - sent)
    return trips


# --- blogpublish ------------------------------------------------------------------------


def measure_blogpublish(workdir: Path, env: dict, params: dict) -> dict:
    log = workdir / "worker.log"
    with worker("config", log, env):
        for n in range(4):  # both pool children import and connect once
            wait_published(save("warmup", n)[0].pk, timeout=60)
        progress(f"blogpublish: {params['idle']} saves, each waiting for its publish")
        idle = idle_saves(params["idle"])
    progress(f"blogpublish: {params['burst']} saves, no worker running")
    burst_ids = [save("burst", n)[0].pk for n in range(params["burst"])]
    site_root = Path(env["SITE_ROOT"])
    with worker("config", workdir / "worker-burst.log", env) as proc:
        ready = time.time()
        progress("blogpublish: worker started; draining the burst")
        burst = drain(burst_ids, site_root, ready=ready)
        rss = grow(proc.pid, done=len(burst_ids), total=params["rss_total"])
    return {"idle": idle, "burst": burst, "rss": rss}


def save(prefix: str, n: int, body: str = ""):
    from publishing.models import Article

    title = f"{prefix.capitalize()} article {n}"
    article = Article(
        title=title,
        slug=f"{prefix}-{n}",
        body=f"# {title}\n\n" + (body or "Some *Markdown* text. " * 50),
    )
    started = time.time()
    article.save()
    return article, started


def published_at(article_id: int) -> float | None:
    from publishing.models import Article, ArticleStatus

    row = (
        Article.objects.filter(pk=article_id, status=ArticleStatus.PUBLISHED)
        .values_list("published_at", flat=True)
        .first()
    )
    return row.timestamp() if row else None


def wait_published(article_id: int, *, timeout: float) -> float:
    found: list[float] = []

    def done() -> bool:
        when = published_at(article_id)
        if when is not None:
            found.append(when)
        return bool(found)

    wait_until(done, timeout, f"article {article_id} to be published", every=POLL_PUBLISHED_EVERY)
    return found[0]


def idle_saves(count: int) -> dict:
    from bench.pathological import real_post

    post = real_post()
    latencies, save_times = [], []
    for n in range(count):
        article, started = save("idle", n, post)
        save_times.append(time.time() - started)
        latencies.append(wait_published(article.pk, timeout=60) - started)
    return {**summary_ms(latencies), "save_p50_ms": statistics.median(save_times) * 1000}


def newest_slugs(ids: list[int], count: int) -> list[str]:
    """The slugs of the newest articles by (publish_at, id): the front page's order."""
    from publishing.models import Article

    rows = Article.objects.filter(pk__in=ids).order_by("-publish_at", "-id")
    return list(rows.values_list("slug", flat=True)[:count])


def pages_list(site_root: Path, slugs: list[str]) -> bool:
    """Do the front page and the feed both link to every one of these slugs?"""
    try:
        front = (site_root / "index.html").read_text(errors="replace")
        feed = (site_root / "feed.xml").read_text(errors="replace")
    except FileNotFoundError:
        return False
    return all(f"/{slug}/" in front and f"/{slug}/" in feed for slug in slugs)


def count_published(ids: list[int]) -> int:
    from publishing.models import Article, ArticleStatus

    return Article.objects.filter(pk__in=ids, status=ArticleStatus.PUBLISHED).count()


def drain(ids: list[int], site_root: Path, *, ready: float, timeout: float = 1800) -> dict:
    """Wait for the burst to be published, polling the shared pages meanwhile."""
    slugs = newest_slugs(ids, LISTED_NEWEST)
    listed_at: float | None = None
    done_at: float | None = None
    deadline = time.monotonic() + timeout
    next_count = 0.0
    while done_at is None or (listed_at is None and time.time() < done_at + 30):
        now = time.time()
        if listed_at is None and pages_list(site_root, slugs):
            listed_at = now
        if done_at is None and now >= next_count:
            done_at = now if count_published(ids) == len(ids) else None
            next_count = now + 0.1
        if time.monotonic() > deadline:
            raise SystemExit(f"the burst of {len(ids)} was not published in {timeout:.0f} s")
        time.sleep(POLL_PAGES_EVERY)
    return drain_result(ids, listed_at, ready=ready, newest=slugs)


def drain_result(
    ids: list[int], listed_at: float | None, *, ready: float, newest: list[str]
) -> dict:
    from publishing.models import Article

    rows = Article.objects.filter(pk__in=ids).values_list("slug", "published_at")
    times = [published.timestamp() for _, published in rows]
    last = max(times)
    # Groups take the newest first, so the newest can be live before the burst's older
    # articles are: the lag after the last publish is then negative. The lag after the
    # newest's own publish is how far the pages trail what they wait for.
    newest_last = max(published.timestamp() for slug, published in rows if slug in newest)
    return {
        "n": len(ids),
        "per_second": rate(times),
        "span_s": last - min(times),
        # n / (worker ready → last published_at): a group's rows share one published_at,
        # so the first-to-last rate leaves the first group's time out; this one not.
        "from_ready_per_second": len(ids) / (last - ready),
        # None: the pages did not list the newest articles within 30 s of the drain.
        "pages_lag_ms": (listed_at - last) * 1000 if listed_at is not None else None,
        "pages_lag_after_newest_ms": (
            (listed_at - newest_last) * 1000 if listed_at is not None else None
        ),
        "pages_checked": f"index.html and feed.xml link to the burst's {LISTED_NEWEST} newest",
    }


def grow(pid: int, *, done: int, total: int) -> dict:
    """RSS now (after `done` publishes), then after more publishes bring it to `total`."""
    first = tree_rss_bytes(pid)
    more = max(0, total - done)
    progress(f"blogpublish: RSS after {done} publishes; {more} more, worker running")
    ids = more_articles(more)
    wait_until(lambda: count_published(ids) == len(ids), 3600, "the extra publishes", every=0.2)
    return {
        "after": [done, done + more],
        "rss_bytes": [first, tree_rss_bytes(pid)],
        "processes": "worker main process + its pool children (VmRSS)",
        "extra_publishes": "bulk_create of pending rows, publish_article sent by name for each",
    }


def more_articles(count: int) -> list[int]:
    """`count` pending articles in one bulk_create, each sent as `publish_article` (by
    name, on one broker connection): the worker's work is that of `count` saves, without
    this process's saves competing with it for the two cores."""
    from django.utils import timezone

    from config.celery import app
    from publishing.models import Article, content_hash_of

    now = timezone.now().replace(microsecond=0)
    rows = []
    for n in range(count):
        title, slug = f"More article {n}", f"more-{n}"
        body = f"# {title}\n\n" + "Some *Markdown* text. " * 50
        digest = content_hash_of(title=title, slug=slug, body=body, publish_at=now)
        rows.append(Article(title=title, slug=slug, body=body, publish_at=now, content_hash=digest))
    ids = [a.pk for a in Article.objects.bulk_create(rows, batch_size=1000)]
    with app.producer_or_acquire() as producer:
        for article_id in ids:
            app.send_task("publishing.tasks.publish_article", args=(article_id,), producer=producer)
    return ids
