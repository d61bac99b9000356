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
end to end    (mode "import_live", on a database of its own) the worker running first,
              then the import run beside it: N / (the import's start → the last
              published_at), what "an import, then all live" takes on a running site,
              against the same bare drain (issue 18: ≥ 1.3×). The "import" mode's
              end-to-end figure adds the import's wall time to its drain instead.

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
    bare, folder = bare_then_files(workdir, env, params["import_files"])
    imported = checked_import(folder, params["import_files"], "no worker running")
    ids = imported_ids()
    with worker("config", workdir / "worker-import.log", env):
        ready = time.time()
        progress("import: worker started; publishing the imported articles")
        wait_published(ids)
    publish = since_ready(published_times(ids), ready)
    end_to_end = imported["wall_s"] + publish["worker_ready_to_last_s"]
    publish["end_to_end_s"] = end_to_end
    publish["end_to_end_per_second"] = len(ids) / end_to_end
    return {"bare": bare, "import": imported, "publish": publish}


def measure_import_live(workdir: Path, env: dict, params: dict) -> dict:
    """The import run while a worker already runs: its batches publish as it goes."""
    bare, folder = bare_then_files(workdir, env, params["import_files"])
    with worker("config", workdir / "worker-import-live.log", env):
        started = time.time()
        imported = checked_import(folder, params["import_files"], "the worker running")
        ids = imported_ids()
        wait_published(ids)
    return {"bare": bare, "import": imported, "publish": since_ready(published_times(ids), started)}


def bare_then_files(workdir: Path, env: dict, count: int) -> tuple[dict, Path]:
    import redis

    redis.Redis.from_url(env["CELERY_BROKER_URL"]).flushall()  # a private server
    bare = bare_drain(workdir, env, count)
    folder = workdir / "posts"
    write_files(folder, count)
    return bare, folder


def checked_import(folder: Path, count: int, how: str) -> dict:
    progress(f"import: {count} files, {how}")
    imported = run_import(folder)
    if imported["counts"].get("created") != count:
        raise SystemExit(f"the import created {imported['counts']} of {count} files")
    return imported


def imported_ids() -> list[int]:
    from publishing.models import Article

    return list(Article.objects.values_list("id", flat=True))


def wait_published(ids: list[int]) -> None:
    wait_until(lambda: published(ids) == len(ids), 3600, "the import to publish", every=0.1)


def published_times(ids: list[int]) -> list[float]:
    from publishing.models import Article

    rows = Article.objects.filter(pk__in=ids).values_list("published_at", flat=True)
    return [t.timestamp() for t in rows]


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
