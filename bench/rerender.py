"""The whole site in a new look, against a full static build (issue 20, item 5).

On a PostgreSQL database of its own: `size` published articles made in one INSERT
(bench/catchup.py), each with the same realistic body (the Hugo corpus's posts,
tests/hugo_corpus, about 2.4 KB of GFM). Then, in this process, as `manage.py
rerender_site` runs it:

1. the first run: every page written (no page there yet: a full build of the pages);
2. a new look (SITE_TITLE changed): every page read (its first bytes), rendered and
   written again, the checkpoint committed per chunk;
3. Hugo (Debian's `hugo`) building the same Markdown, with the same titles and dates,
   as a minimal site (bench/hugo_site), timed from the command's start to its end;
4. publishing's idle latency (a save, then waiting for its publish, one at a time) with
   a `celery worker` alone, then while a worker of a new look re-renders the site.

Printed: the seconds and pages/s of each, the re-render's time over Hugo's, and the
idle p50 beside the re-render over the p50 alone.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HUGO_SITE = ROOT / "bench" / "hugo_site"
CORPUS = ROOT / "tests" / "hugo_corpus" / "content" / "posts"


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
    from publishing.services.rerender import RerenderOutcome, site_rerender

    started = time.perf_counter()
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


def live_hashes(body: str) -> None:
    """Each article's content and live hash as the pipeline leaves them (the hash of
    what its page shows: the re-render checks a page's content mark against it)."""
    from django.db import connection, transaction

    from publishing.models import Article, content_hash_of

    rows = Article.objects.values_list("id", "title", "slug", "publish_at").iterator(2000)
    values = [
        (content_hash_of(title=t, slug=s, body=body, publish_at=p),) * 2 + (pk,)
        for pk, t, s, p in rows
    ]
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.executemany(
            "UPDATE publishing_article SET content_hash = %s, published_hash = %s WHERE id = %s",
            values,
        )


def idle_beside_rerender(workdir: Path, *, saves: int) -> list[str]:
    """Publishing's idle latency (save → published, one at a time) with a worker alone,
    then while a worker of a new look re-renders the site (its passes on their own
    queue, sent as the catch-up sends them)."""
    from bench.phases import save, summary_ms, wait_published
    from bench.support import worker
    from blogpublish.site.rerender import progress_read
    from publishing.dispatch import dispatch_rerender

    def latency(prefix: str, n: int) -> float:
        article, started = save(prefix, n)
        return wait_published(article.pk, timeout=60) - started

    env = dict(os.environ)
    with worker("config", workdir / "worker-alone.log", env):
        for n in range(4):  # both pool children import and connect once
            latency("warmup", n)
        alone = summary_ms([latency("alone", n) for n in range(saves)])
    env["SITE_TITLE"] = "A third look"
    with worker("config", workdir / "worker-rerender.log", env):
        for n in range(4):
            latency("warmup-again", n)
        before = progress_read()
        dispatch_rerender()
        during, deadline = [], time.monotonic() + 1800
        while time.monotonic() < deadline:
            progress = progress_read()
            if progress.started_at != before.started_at and progress.finished_at:
                break
            during.append(latency("during", len(during)))
        progress = progress_read()
    if not during or progress.started_at == before.started_at:
        return ["  idle beside a re-render: the re-render did not run"]
    beside = summary_ms(during)
    return [
        f"  idle p50, a worker alone      {alone['p50_ms']:8.1f} ms  (n={alone['n']})",
        f"  idle p50 beside the re-render {beside['p50_ms']:8.1f} ms  (n={beside['n']}, "
        f"{progress.written:,} pages written meanwhile)",
        f"  beside / alone: {beside['p50_ms'] / alone['p50_ms']:.2f}× (target: within 2×)",
    ]


def rerender_report(size: int, workdir: Path) -> list[str]:
    from django.conf import settings
    from django.db import connection

    from bench.catchup import insert_published
    from blogpublish.site import look
    from blogpublish.site.rerender import progress_read
    from publishing.models import Article

    body = sample_body()
    insert_published(1, size)
    Article.objects.update(body=body, published_body=body)
    live_hashes(body)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE publishing_article")
    first = run_to_the_end()
    settings.SITE_TITLE = "The new look"  # a deploy that changes the look
    look.look.cache_clear()
    again = run_to_the_end()
    written = progress_read().written
    lines = [
        f"  body: {len(body.encode()):,} bytes of GFM per article; "
        f"SITE_RERENDER_CHUNK={settings.SITE_RERENDER_CHUNK}",
        f"  first run (no page yet)      {first:8.1f} s  {size / first:8.0f} pages/s",
        f"  re-render in a new look      {again:8.1f} s  {size / again:8.0f} pages/s"
        f"  ({written:,} written)",
    ]
    if shutil.which("hugo") is None:
        return [*lines, "  hugo: not installed (scripts/install-tools.sh)"]
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
