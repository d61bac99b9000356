"""The whole site in a new look, against a full static build (issue 20, item 5).

On a PostgreSQL database of its own: `size` published articles made in one INSERT …
SELECT (bench/catchup.py), each with the same realistic body (the Hugo corpus's posts,
tests/hugo_corpus, about 2.2 KB of GFM) and its real content hash, computed by the
database. The site in a folder (`disk`) or in a bucket of moto's S3 server (`s3`, a
subprocess on a free port, as the tests start it). Then, in this process, as `manage.py
rerender_site` runs it:

1. the first run: every page written (no page there yet: a full build of the pages);
2. a new look (SITE_TITLE changed): every page read (its first bytes), rendered and
   written again, the checkpoint committed per chunk;
3. in a bucket, the bucket alone: the same requests (a ranged GET and a conditional
   PUT a page), as many in flight, nothing rendered (`bucket_floor`);
   Hugo (Debian's `hugo`) building the same Markdown, with the same titles and dates,
   as a minimal site (bench/hugo_site), timed from the command's start to its end;
4. publishing's idle latency (a save, then waiting for its publish, one at a time) with
   a `celery worker` alone, then while a worker of a new look re-renders the site.

Printed: the seconds and pages/s of each, the re-render's time over Hugo's, and the
idle p50 beside the re-render over the p50 alone. Each storage runs in a process of its
own (`python -m bench.rerender`, started by bench/run.py), so each has its own database
and settings.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HUGO_SITE = ROOT / "bench" / "hugo_site"
CORPUS = ROOT / "tests" / "hugo_corpus" / "content" / "posts"
# The re-render's own worker: Linux's SCHED_IDLE, CPU only when no other process wants it
# (`nice -n 10` left publishing's p50 at 3.8-4.2× of a worker alone's here).
IDLE_PRIORITY = ("chrt", "--idle", "0")


def sample_body() -> str:
    """The Hugo corpus's posts without their front matter, one after the other."""
    bodies = []
    for path in sorted(CORPUS.glob("*.md")):
        text = path.read_text(encoding="utf-8")
        if text.startswith("---"):
            text = text.split("---", 2)[2]
        bodies.append(text.strip())
    return "\n\n".join(bodies) + "\n"


@contextmanager
def postgres_site(workdir: Path, *, name: str = "rerender", **env: str) -> Iterator[None]:
    """Django with config.settings on a fresh PostgreSQL database, SITE_ROOT in workdir
    and a private redis-server as the broker; the database dropped after. `env`: more
    settings (a bucket's SITE_ROOT and AWS_* variables)."""
    from bench.support import SETTINGS_ENV, postgres_database, postgres_url, private_redis

    name = f"bp_bench_{name}_{os.getpid()}"
    problem = postgres_database(name, "CREATE")
    if problem:
        raise SystemExit(f"bench {name}: no PostgreSQL database ({problem})")
    broker = private_redis(workdir)
    os.environ.update(
        CELERY_BROKER_URL=broker.__enter__(),
        **SETTINGS_ENV,
        DJANGO_SETTINGS_MODULE="config.settings",
        DATABASE_URL=postgres_url(name),
        SITE_ROOT=str(workdir / "site"),
        SITE_URL="https://blog.example.com",
        SITE_TITLE="The old look",
    )
    os.environ.update(env)
    try:
        import django
        from django.core.management import call_command

        django.setup()
        logging.getLogger().setLevel(logging.ERROR)  # the table, not each pass's lines
        call_command("migrate", verbosity=0)
        yield
    finally:
        from django.db import connections

        connections.close_all()
        postgres_database(name, "DROP")
        broker.__exit__(None, None, None)


def run_to_the_end() -> float:
    """As `manage.py rerender_site` runs it: its pages rendered by as many processes as
    this one may use CPUs (forked here, after the look's change)."""
    from publishing.renderers import render_processes
    from publishing.services.rerender import RerenderOutcome, site_rerender

    started = time.perf_counter()
    with render_processes(len(os.sched_getaffinity(0))):
        while site_rerender(force=True) is not RerenderOutcome.DONE:
            pass
    return time.perf_counter() - started


def hugo_build(workdir: Path, size: int, body: str) -> float:
    """Hugo's full build of the same articles (titles, dates, body), timed."""
    site = workdir / "hugo"
    shutil.copytree(HUGO_SITE, site)
    posts = site / "content" / "posts"
    posts.mkdir(parents=True)
    for n in range(1, size + 1):
        date = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(1_577_836_800 + n))
        front = f'---\ntitle: "Synthetic article {n}"\ndate: {date}\nslug: synthetic-{n}\n---\n'
        (posts / f"synthetic-{n}.md").write_text(front + body, encoding="utf-8")
    started = time.perf_counter()
    subprocess.run(
        ["hugo", "--quiet", "-s", str(site), "-d", str(workdir / "hugo-out")],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - started


def seed(size: int, body: str) -> float:
    """`size` published articles with `body`, in one INSERT … SELECT; seconds taken. The
    database's content hash is checked against `content_hash_of` on the last row."""
    from django.db import connection

    from bench.catchup import insert_published
    from publishing.models import Article, content_hash_of

    started = time.perf_counter()
    insert_published(1, size, body=body)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE publishing_article")
    last = Article.objects.order_by("-pk").first()
    expected = content_hash_of(
        title=last.title, slug=last.slug, body=last.body, publish_at=last.publish_at
    )
    if (last.content_hash, last.published_hash) != (expected, expected):
        raise SystemExit(f"bench rerender: the seeded hash {last.content_hash} is not {expected}")
    return time.perf_counter() - started


def idle_beside_rerender(workdir: Path, *, saves: int) -> list[str]:
    """Publishing's idle latency (save → published, one at a time) with a worker alone,
    then while a worker of a new look re-renders the site (its passes on their own
    queue, sent as the catch-up sends them), and again (a look more) with the passes
    taken by a worker of their own at the idle CPU priority (IDLE_PRIORITY; `-Q <the
    re-render's queue> -c 1`, the publishing worker with `-Q` of the other two;
    docs/operations.md, "A new look"): each time at most twice `saves` saves, or until
    the re-render ends, whichever comes first (the whole re-render of a large site
    beside one save at a time would double the benchmark's time and tell nothing
    more)."""
    from bench.phases import summary_ms
    from bench.support import worker

    env = dict(os.environ)
    with worker("config", workdir / "worker-alone.log", env):
        for n in range(4):  # both pool children import and connect once
            _latency("warmup", n)
        alone = summary_ms([_latency("alone", n) for n in range(saves)])
    lines = [f"  idle p50, a worker alone      {alone['p50_ms']:8.1f} ms  (n={alone['n']})"]
    for title, split in (("A third look", False), ("A fourth look", True)):
        lines += _idle_during_rerender(workdir, {**env, "SITE_TITLE": title}, saves, split, alone)
    return lines


def _latency(prefix: str, n: int) -> float:
    from bench.phases import save, wait_published

    article, started = save(prefix, n)
    return wait_published(article.pk, timeout=60) - started


def _idle_during_rerender(
    workdir: Path, env: dict[str, str], saves: int, split: bool, alone: dict
) -> list[str]:
    from django.conf import settings

    from bench.phases import summary_ms
    from bench.support import wait_until, worker
    from blogpublish.site.rerender import progress_read
    from config.queues import catch_up_queue, rerender_queue
    from publishing.dispatch import dispatch_rerender
    from publishing.services.rerender import rerender_budget

    default = settings.CELERY_TASK_DEFAULT_QUEUE
    name = "split" if split else "one"
    # The worker running a pass stops at its end (a warm shutdown), not killed in it:
    # a killed pass would hold the re-render's lease past the next phase's start.
    patience = 3 * rerender_budget() + 60
    # Read before the workers start: a pass the last phase sent and did not run begins
    # the run as soon as a worker of this one starts.
    before = progress_read()
    with ExitStack() as workers:
        flags = ["-Q", f"{default},{catch_up_queue(default)}"] if split else []
        log = workdir / f"worker-{name}.log"
        workers.enter_context(worker("config", log, env, flags=flags, patience=patience))
        if split:
            rerender = ["-Q", rerender_queue(default), "-c", "1"]
            log = workdir / "worker-rerender.log"
            workers.enter_context(
                worker("config", log, env, flags=rerender, prefix=IDLE_PRIORITY, patience=patience)
            )
        for n in range(4):
            _latency(f"warmup-{name}", n)
        dispatch_rerender()
        wait_until(
            lambda: progress_read().started_at != before.started_at,
            120,
            "the worker's re-render to begin",
        )
        during, deadline = [], time.monotonic() + 1800
        while time.monotonic() < deadline:
            progress = progress_read()
            if progress.started_at != before.started_at and progress.finished_at:
                break
            if len(during) >= 2 * saves:
                break
            during.append(_latency(f"during-{name}", len(during)))
        progress = progress_read()
    where = "its own SCHED_IDLE worker" if split else "the same worker"
    if not during or progress.started_at == before.started_at:
        return [f"  idle beside a re-render on {where}: the re-render did not run"]
    beside = summary_ms(during)
    # The first half beside the shared views' rebuild too (a new look rebuilds them
    # all, front page and feeds first, in the publishing worker); the second after it.
    halves = [summary_ms(part)["p50_ms"] for part in (during[: saves or 1], during[saves:]) if part]
    return [
        f"  idle p50 beside the re-render on {where} {beside['p50_ms']:8.1f} ms  "
        f"(n={beside['n']}, {progress.done:,} pages re-rendered meanwhile)",
        f"    beside / alone: {beside['p50_ms'] / alone['p50_ms']:.2f}× (target: within 2×); "
        f"p50 of the first {saves} saves, then of the rest: "
        + ", ".join(f"{p50:.1f} ms ({p50 / alone['p50_ms']:.2f}×)" for p50 in halves),
    ]


def bucket_floor(size: int) -> float:
    """What the re-render asks of a bucket, with nothing else: for each page, a ranged
    GET of its first bytes, then a PUT of a page's bytes conditional on the ETag it
    answered with (over a copy of its own, under `bench-floor/`, removed after),
    through the site's own client, as many in flight as the re-render has
    (s3.READ_THREADS). Seconds taken: the floor of a re-render in this bucket."""
    from concurrent.futures import ThreadPoolExecutor

    from blogpublish.site import documents, paths
    from blogpublish.storage import site_storage
    from blogpublish.storage.s3 import READ_THREADS
    from publishing.models import Article

    site = site_storage()
    slugs = list(Article.objects.order_by("pk").values_list("slug", flat=True)[:size])
    body = site.read(paths.page_file(slugs[0])) or b""
    client = site.client
    with ThreadPoolExecutor(max_workers=READ_THREADS) as pool:  # the copies, not timed
        list(
            pool.map(
                lambda n: site._put(f"bench-floor/{n}.html", body, client=client), range(len(slugs))
            )
        )

    def one(n: int) -> None:
        rel = f"bench-floor/{n}.html"
        _, etag = site._ranged_get(rel, documents.CONTENT_MARK_WITHIN, client=client)
        client.put_object(Bucket=site.bucket, Key=site.key(rel), Body=body, IfMatch=etag)

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=READ_THREADS) as pool:
        list(pool.map(one, range(len(slugs))))
    taken = time.perf_counter() - started
    site.delete_tree("bench-floor")
    return taken


def rerender_report(size: int, workdir: Path) -> list[str]:
    from django.conf import settings

    from bench.support import progress
    from blogpublish.site import look
    from blogpublish.site.rerender import progress_read

    body = sample_body()
    progress(f"rerender: seeding {size:,} published articles")
    seeded = seed(size, body)
    progress(f"rerender: seeded in {seeded:.1f} s; the first run (every page new)")
    first = run_to_the_end()
    progress(f"rerender: first run {first:.1f} s; the re-render in a new look")
    settings.SITE_TITLE = "The new look"  # a deploy that changes the look
    look.look.cache_clear()
    again = run_to_the_end()
    written = progress_read().written
    lines = [
        f"  body: {len(body.encode()):,} bytes of GFM per article; "
        f"SITE_RERENDER_CHUNK={settings.SITE_RERENDER_CHUNK}; seeded in {seeded:.1f} s",
        f"  first run (no page yet)      {first:8.1f} s  {size / first:8.0f} pages/s",
        f"  re-render in a new look      {again:8.1f} s  {size / again:8.0f} pages/s"
        f"  ({written:,} written)",
    ]
    if str(settings.SITE_ROOT).startswith("s3://"):
        progress("rerender: the bucket's floor")
        floor = bucket_floor(size)
        lines.append(
            f"  the bucket alone, same requests {floor:6.1f} s  {size / floor:8.0f} pages/s"
            f"  (re-render / it: {again / floor:.2f}×)"
        )
    if shutil.which("hugo") is None:
        return [*lines, "  hugo: not installed (scripts/install-tools.sh)"]
    progress(f"rerender: re-render {again:.1f} s; Hugo's full build")
    hugo = hugo_build(workdir, size, body)
    return [
        *lines,
        f"  hugo, full build              {hugo:8.1f} s  {size / hugo:8.0f} pages/s",
        f"  re-render / hugo: {again / hugo:.2f}× (target: within 2×)",
    ]


def rerender_report_with_workers(size: int, workdir: Path, *, saves: int) -> list[str]:
    """`rerender_report`, then (unless `saves` is 0) `idle_beside_rerender`."""
    lines = rerender_report(size, workdir)
    return [*lines, *idle_beside_rerender(workdir, saves=saves)] if saves else lines


def main() -> None:
    """One storage's run in this process (bench/run.py starts one per storage)."""
    from bench.support import moto_bucket

    parser = argparse.ArgumentParser(description="the re-render beside Hugo, one storage")
    parser.add_argument("--storage", choices=("disk", "s3"), default="disk")
    parser.add_argument("--size", type=int, required=True)
    parser.add_argument("--saves", type=int, default=50)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix=f"blogpublish-bench-rerender-{args.storage}-"))
    try:
        with ExitStack() as stack:
            env = stack.enter_context(moto_bucket(workdir)) if args.storage == "s3" else {}
            stack.enter_context(postgres_site(workdir, **env))
            for line in rerender_report_with_workers(args.size, workdir, saves=args.saves):
                print(line, flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
