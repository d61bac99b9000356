"""An imported blog published (issue 9): N Markdown files → `import_articles` → all live,
side by side with bare Celery's no-op drain of N tasks, in one run, one worker at a
time on the same private Redis, with the same worker flags (bench.support.WORKER_FLAGS).

bare Celery   N no-op tasks sent while no worker runs, then the worker started; tasks
              per second from the first to the last task's recorded run time.
import        N files (front matter + ~1 kB of Markdown) written to a folder, imported
              in this process while no worker runs (`articles_import`, what the command
              runs): files per second, wall clock. Its batch messages wait in the queue.
publish       the worker started: articles per second from the worker being ready to
              the last published_at.

Both rates are N / (last run or publish − the worker ready), the same measure on both
sides: a batch completes its rows in one statement, so its rows share one published_at
and a first-to-last rate would flatter it. The ratio is publish per second / bare drain
per second (issue 9: ≥ 1.0×, 1.3× stretch).
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from bench.support import progress, rate, wait_until, worker

BODY = (
    "Some *Markdown* with a [link](https://example.com/) and `code`.\n\n"
    + "A paragraph of ordinary prose, long enough to look like an article. " * 12
    + "\n\n- one\n- two\n- three\n"
)


def write_files(folder: Path, count: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(count):
        day = 1 + n % 28
        text = (
            f"---\ntitle: Imported article {n}\ndate: 2024-01-{day:02d} 10:00:00 +0100\n"
            f"tags: [bench]\n---\n\n# Imported article {n}\n\n{BODY}"
        )
        (folder / f"2024-01-{day:02d}-imported-{n}.md").write_text(text, encoding="utf-8")


def measure_import(workdir: Path, env: dict, params: dict) -> dict:
    import redis

    redis.Redis.from_url(env["CELERY_BROKER_URL"]).flushall()  # a private server
    count = params["import_files"]
    bare = bare_drain(workdir, env, count)

    folder = workdir / "posts"
    write_files(folder, count)
    progress(f"import: {count} files, no worker running")
    imported = run_import(folder)
    if imported["counts"].get("created") != count:
        raise SystemExit(f"the import created {imported['counts']} of {count} files")

    from publishing.models import Article

    ids = list(Article.objects.values_list("id", flat=True))
    with worker("config", workdir / "worker-import.log", env):
        ready = time.time()
        progress("import: worker started; publishing the imported articles")
        wait_until(lambda: published(ids) == len(ids), 3600, "the import to publish", every=0.1)
    times = [
        t.timestamp()
        for t in Article.objects.filter(pk__in=ids).values_list("published_at", flat=True)
    ]
    return {"bare": bare, "import": imported, "publish": since_ready(times, ready)}


def since_ready(times: list[float], ready: float) -> dict:
    return {
        "n": len(times),
        "per_second": len(times) / (max(times) - ready),
        "worker_ready_to_last_s": max(times) - ready,
        "first_to_last_per_second": rate(times),
    }


def bare_drain(workdir: Path, env: dict, count: int) -> dict:
    from bench.bare import client, noop

    key = f"bench:import-drain:{uuid.uuid4().hex}"
    progress(f"bare Celery: sending {count} no-op tasks, no worker running")
    with noop.app.producer_or_acquire() as producer:
        for _ in range(count):
            noop.apply_async((key,), producer=producer)
    with worker("bench.bare", workdir / "bare-import-worker.log", env):
        ready = time.time()
        wait_until(lambda: client().llen(key) >= count, 1800, "the bare drain")
        runs = [float(t) for t in client().lrange(key, 0, -1)]
    return since_ready(runs, ready)


def run_import(folder: Path) -> dict:
    from publishing.services.importing import articles_import

    started = time.perf_counter()
    report = articles_import([folder])
    wall = time.perf_counter() - started
    files = sum(report.counts.values())
    return {
        "files": files,
        "wall_s": wall,
        "files_per_second": files / wall,
        "counts": dict(report.counts),
    }


def published(ids: list[int]) -> int:
    from publishing.models import Article, ArticleStatus

    return Article.objects.filter(pk__in=ids, status=ArticleStatus.PUBLISHED).count()
