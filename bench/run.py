"""Benchmarks: measurements printed as tables, not tests; nothing here asserts a time.

    make bench                 every benchmark in BENCHMARKS
    make bench QUICK=1         the same with smaller sizes (under 10 minutes)
    .venv/bin/python bench/run.py site
    .venv/bin/python bench/run.py pipeline --quick --databases sqlite

Each benchmark is a function taking the parsed arguments; it sets up what it needs
(here: a temporary SQLite database and SITE_ROOT, Django with config.settings) and
prints its table. Add a benchmark by appending it to BENCHMARKS.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def django_env(workdir: Path) -> dict[str, str]:
    """The environment of config.settings on a SQLite database and SITE_ROOT in workdir."""
    from bench.support import SETTINGS_ENV

    return {
        **SETTINGS_ENV,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": f"sqlite:///{workdir / 'bench.sqlite3'}",
        "SITE_ROOT": str(workdir / "site"),
        "SITE_URL": "https://blog.example.com",
        "CELERY_BROKER_URL": "redis://127.0.0.1:1/0",  # never contacted
        # One process publishing in turn: every outcome's refresh runs at once, so each
        # row of the table costs what a publish and its refresh cost.
        "PUBLISH_REFRESH_INTERVAL": "0",
    }


@contextmanager
def django_in(workdir: Path):
    """Django with config.settings on a fresh SQLite database and SITE_ROOT in workdir.
    No broker is needed: articles are created without signals and published in-process.
    Once a process: Django's settings are read once, so a second call in the same
    process would use the first one's database (a bench needing its own runs this in a
    process of its own, as bench/preview.py does)."""
    from django.apps import apps

    if apps.ready:
        raise RuntimeError("django_in: Django is set up already in this process")
    os.environ.update(django_env(workdir))
    os.environ.pop("PUBLISH_WEBHOOK_URL", None)
    import django
    from django.core.management import call_command

    django.setup()
    logging.getLogger().setLevel(logging.ERROR)
    call_command("migrate", verbosity=0)
    yield


class Stopwatch:
    """Accumulated seconds per label, for wrapping a few functions while a loop runs."""

    def __init__(self) -> None:
        self.totals: dict[str, float] = {}

    def wrap(self, owner: object, name: str, label: str) -> None:
        original = getattr(owner, name)

        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.totals[label] = self.totals.get(label, 0.0) + time.perf_counter() - start

        setattr(owner, name, timed)

    def take(self) -> dict[str, float]:
        totals, self.totals = self.totals, {}
        return totals


# --- the static site --------------------------------------------------------------------


def create_articles(count: int, *, start: int) -> list[int]:
    from django.utils import timezone

    from publishing.models import Article, content_hash_of

    base = timezone.now().replace(microsecond=0) - timedelta(days=400)
    articles = []
    for n in range(start, start + count):
        title, slug = f"Article number {n}", f"article-{n}"
        body = f"# Heading {n}\n\nSome *Markdown* text for article {n}.\n\n" + "Lorem ipsum. " * 40
        # Oldest first, a minute apart, all due: each new article is the newest.
        publish_at = base + timedelta(minutes=n)
        content_hash = content_hash_of(title=title, slug=slug, body=body, publish_at=publish_at)
        articles.append(
            Article(
                title=title, slug=slug, body=body, publish_at=publish_at, content_hash=content_hash
            )
        )
    created = Article.objects.bulk_create(articles, batch_size=500)
    return [a.pk for a in created]


def bench_site(args: argparse.Namespace) -> None:
    """Time per published article (page write + refresh of index, feed, archive and
    sitemap, through the real pipeline: claim, publishers, complete) as the site grows."""
    workdir = Path(tempfile.mkdtemp(prefix="blogpublish-bench-"))
    try:
        with django_in(workdir):
            _bench_site(args, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _bench_site(args: argparse.Namespace, workdir: Path) -> None:
    from blogpublish.site import StaticSitePublisher, documents
    from publishing.models import Article, ArticleStatus
    from publishing.publishers import get_publishers
    from publishing.services import Outcome, article_publish, article_unpublish

    site = next(p for p in get_publishers() if isinstance(p, StaticSitePublisher))
    watch = Stopwatch()
    watch.wrap(site, "publish", "page")
    watch.wrap(site, "refresh", "refresh")
    watch.wrap(documents, "sitemap", "sitemap")
    window = args.window

    print(f"\nStatic site: publishing {args.first:,} then {args.then:,} more articles")
    print(f"(SQLite in {workdir}; each row is the last {window:,} articles published)\n")
    header = (
        f"{'site size':>10} {'ms/article':>11} {'p50':>7} {'p95':>7} {'max':>7}"
        f"  {'page':>6} {'refresh':>8} {'sitemap':>8}"
    )
    print(header)
    print("-" * len(header))
    published = 0
    for phase in (args.first, args.then):
        ids = create_articles(phase, start=published)
        for chunk_start in range(0, phase, window):
            times = []
            watch.take()
            for article_id in ids[chunk_start : chunk_start + window]:
                start = time.perf_counter()
                result = article_publish(article_id=article_id, retry_in=lambda n: 0)
                times.append(time.perf_counter() - start)
                assert result.outcome is Outcome.PUBLISHED, result  # a broken run, not timing
            published += len(times)
            parts = {k: v / len(times) * 1000 for k, v in watch.take().items()}
            ms = sorted(t * 1000 for t in times)
            print(
                f"{published:>10,} {statistics.mean(ms):>11.2f} {ms[len(ms) // 2]:>7.2f}"
                f" {ms[int(len(ms) * 0.95)]:>7.2f} {ms[-1]:>7.2f}"
                f"  {parts.get('page', 0):>6.2f} {parts.get('refresh', 0):>8.2f}"
                f" {parts.get('sitemap', 0):>8.2f}"
            )

    print(f"\nOther operations on the site of {published:,} articles")
    oldest = Article.objects.order_by("publish_at").first()
    oldest.body += "\n\nAn edit."
    oldest.save()  # signals: the dispatch fails fast (no broker); published in-process below
    timed(
        "republish the oldest article after an edit (its archive page)",
        lambda: article_publish(article_id=oldest.pk, retry_in=lambda n: 0),
    )
    victim = Article.objects.filter(status=ArticleStatus.PUBLISHED).order_by("publish_at")[10]
    snapshot = {
        "id": victim.pk,
        "uid": str(victim.uid),
        "slug": victim.slug,
        "published_slug": victim.published_slug,
        "title": victim.title,
    }
    Article.objects.filter(pk=victim.pk).delete()
    timed(
        "delete an old article (unpublish + full archive rebuild)",
        lambda: article_unpublish(snapshot=snapshot),
    )
    timed(
        "reconcile (scan SITE_ROOT, rebuild; unchanged files not rewritten)",
        lambda: (site.check(), site.reconcile()),
    )
    pages = len(list((workdir / "site" / "page").iterdir()))
    chunks = len(list((workdir / "site").glob("sitemap-*.xml")))
    print(f"  archive pages: {pages:,}; sitemap chunks: {chunks:,}")


def timed(label: str, action: Callable[[], object]) -> None:
    start = time.perf_counter()
    action()
    print(f"  {label}: {(time.perf_counter() - start) * 1000:,.1f} ms")


from bench.pipeline import add_arguments, bench_pipeline, run_child  # noqa: E402 (needs ROOT)


def bench_operator(args: argparse.Namespace) -> None:
    """The dashboard and the /metrics scrape at 1 M articles and 5 M attempts
    (bench/operator_views.py), per database, on a fresh one in a child process."""
    from bench.operator_views import FULL, QUICK, operator_report
    from bench.support import private_redis

    params = dict(QUICK if args.quick else FULL)
    for name in ("operator_articles", "operator_attempts"):
        if getattr(args, name) is not None:
            params[name] = getattr(args, name)
    workdir = Path(tempfile.mkdtemp(prefix="blogpublish-bench-operator-"))
    try:
        with private_redis(workdir) as redis_url:
            for database in args.databases.split(","):
                result = run_child("operator", database, {**params, "redis_url": redis_url})
                print(operator_report(database, result), flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def bench_render(args: argparse.Namespace) -> None:
    """The Markdown renderers (issue 20): an 8 KB post with each candidate, the
    pathological corpus (bench/pathological.py) with each at a small size, and with the
    site's renderer at the 1 MiB size limit (quick: 128 KiB), its worst case first."""
    from bench.pathological import SHAPES, best_of, real_post, render_times, renderers

    limit, small = (2**17, 2**12) if args.quick else (2**20, 2**13)
    from django.apps import apps

    workdir = Path(tempfile.mkdtemp(prefix="blogpublish-bench-render-"))
    try:
        # Rendering reads no database: after bench_site, its Django does.
        with contextlib.nullcontext() if apps.ready else django_in(workdir):
            candidates = renderers()
            post = real_post()
            print(f"\nRendering an {len(post):,}-character post (best of 50, CPU time)")
            for name, render in candidates.items():
                seconds = best_of(render, post, 50, clock=time.thread_time)
                print(f"  {name:40} {seconds * 1000:8.2f} ms")
            print(
                f"\n{len(SHAPES)} pathological shapes at {small // 1024} KiB (CPU time), and the "
                "steepest growth from 1/8 of it (n → 8n: linear 8×, quadratic 64×)"
            )
            for name, render in candidates.items():
                times = {shape: t for t, shape in render_times(render, small, runs=1)}
                eighth = {shape: t for t, shape in render_times(render, small // 8, runs=3)}
                worst = max(times, key=times.get)
                steepest = max(times, key=lambda shape: times[shape] / max(eighth[shape], 1e-5))
                growth = times[steepest] / max(eighth[steepest], 1e-5)
                print(
                    f"  {name:40} worst {times[worst] * 1000:9.1f} ms ({worst}); "
                    f"steepest {growth:4.0f}× ({steepest})"
                )
            site = candidates["the site: cmark-gfm + nesting + nh3"]
            print(f"\nThe site's renderer at {limit // 1024} KiB, slowest first (CPU time)")
            results = render_times(site, limit, runs=1)
            for seconds, shape in results[:8]:
                print(f"  {seconds * 1000:9.1f} ms  {shape}")
            print(f"  … {len(results) - 8} more, the fastest {results[-1][0] * 1000:.1f} ms")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


from bench.preview import bench_preview  # noqa: E402 (needs ROOT)


def bench_rebuild(args: argparse.Namespace) -> None:
    """A delete then a publish on a large site (bench/rebuild.py): the new article on the
    front page and in the feed, while the archive is rebuilt pass by pass (PostgreSQL;
    the site on disk, then in a bucket on moto's S3 server)."""
    from bench.rebuild import rebuild_report
    from bench.rerender import postgres_site
    from bench.support import moto_bucket

    sizes = {
        "disk": args.rebuild_articles or (10_000 if args.quick else 1_000_000),
        "bucket": args.rebuild_bucket_articles or (10_000 if args.quick else 100_000),
    }
    wheres = args.rebuild_sites.split(",")
    if len(wheres) > 1:  # Django's settings are read once: a process each
        for where in wheres:
            command = [sys.executable, __file__, "rebuild", "--rebuild-sites", where]
            command += [f"--rebuild-articles={sizes['disk']}"]
            command += [f"--rebuild-bucket-articles={sizes['bucket']}"]
            subprocess.run(command, cwd=ROOT, check=False)
        return
    for where in wheres:
        size = sizes[where]
        workdir = Path(tempfile.mkdtemp(prefix="blogpublish-bench-rebuild-"))
        try:
            with contextlib.ExitStack() as stack:
                env = stack.enter_context(moto_bucket(workdir)) if where == "bucket" else {}
                # Every outcome's pass runs at once, in this process.
                stack.enter_context(
                    postgres_site(workdir, name="rebuild", PUBLISH_REFRESH_INTERVAL="0", **env)
                )
                print(
                    f"\nA delete, then a publish, on a site of {size:,} articles "
                    f"(PostgreSQL, the site {'in a bucket (moto)' if env else 'on disk'})"
                )
                for line in rebuild_report(size, workdir):
                    print(line, flush=True)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)


def bench_full_check(args: argparse.Namespace) -> None:
    """The full check of a site in a bucket (moto's S3 server) on PostgreSQL: every
    page's content mark read, against only what changed since the last check
    (bench/full_check.py)."""
    from bench.full_check import full_check_report
    from bench.rerender import postgres_site
    from bench.support import moto_bucket

    size = args.full_check_pages or (2_000 if args.quick else 20_000)
    workdir = Path(tempfile.mkdtemp(prefix="blogpublish-bench-full-check-"))
    try:
        with contextlib.ExitStack() as stack:
            env = stack.enter_context(moto_bucket(workdir))
            stack.enter_context(
                postgres_site(workdir, name="full_check", PUBLISH_REFRESH_INTERVAL="0", **env)
            )
            print(f"\nThe full check of {size:,} pages in a bucket (moto; PostgreSQL)")
            for line in full_check_report(size):
                print(line, flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


QUIET = ("-q", "-p", "no:cacheprovider")


def bench_upgrade(args: argparse.Namespace) -> None:
    """An upgrade from the previous release on a large table (issue 23): the upgrade
    test (tests/system/test_upgrade.py: the previous release's writer and worker run
    while this release's migrate does) at 1 M articles (quick: 100 k), on PostgreSQL
    with this machine's Redis; its measured waits printed, never asserted here."""

    size = args.upgrade_articles or (100_000 if args.quick else 1_000_000)
    print(f"\nAn upgrade from the previous release, {size:,} articles (PostgreSQL)", flush=True)
    done = subprocess.run(
        [
            str(ROOT / "scripts" / "test.sh"),
            "postgres",
            "tests/system/test_upgrade.py",
            *QUIET,
            "--timeout=3600",  # the seeding alone is minutes at 1 M
        ],
        cwd=ROOT,
        env={**os.environ, "BLOGPUBLISH_UPGRADE_ARTICLES": str(size)},
        capture_output=True,
        text=True,
        check=False,
    )
    lines = [line for line in done.stdout.splitlines() if " s  upgrade, " in line]
    for line in lines or done.stdout.splitlines()[-40:]:
        print(line, flush=True)
    if done.returncode != 0:
        print(f"(the upgrade run failed: exit {done.returncode})", flush=True)


def bench_rerender(args: argparse.Namespace) -> None:
    """The whole site in a new look on PostgreSQL, on disk and in a bucket (moto's S3
    server), each beside Hugo's full build of the same Markdown (bench/rerender.py; issue
    20, item 5); each storage in a process of its own (a database and settings each)."""
    import subprocess

    runs = [
        ("disk", args.rerender_articles or (10_000 if args.quick else 100_000)),
        ("s3", args.rerender_bucket_articles or (2_000 if args.quick else 10_000)),
    ]
    saves = args.rerender_saves
    if saves is None:
        saves = 20 if args.quick else 50
    for storage, size in runs:
        where = "on disk" if storage == "disk" else "in a bucket of moto's S3 server"
        print(f"\nThe site of {size:,} articles in a new look (PostgreSQL, {where})", flush=True)
        command = [sys.executable, "-m", "bench.rerender", "--storage", storage]
        command += ["--size", str(size), "--saves", str(saves)]
        done = subprocess.run(command, cwd=ROOT, check=False)
        if done.returncode != 0:
            print(f"(the {storage} run failed: exit {done.returncode})", flush=True)


TAG_VARIANTS = ("none", "few", "tagged", "untagged")


def tag_variants(value: str) -> str:
    names = value.split(",")
    unknown = [name for name in names if name not in TAG_VARIANTS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"not variants: {', '.join(unknown)} (of {TAG_VARIANTS})")
    return value


def bench_tags(args: argparse.Namespace) -> None:
    """A burst drain with 1,000 tags in use against the same burst with none, on
    PostgreSQL, each run on a fresh database, the variants alternating (bench/tags.py)."""
    from bench.pipeline import run_child
    from bench.support import private_redis
    from bench.tags import FEW_TAGS, tags_report

    burst = args.tags_burst or (200 if args.quick else 1_000)
    background = args.tags_background or (2_000 if args.quick else 10_000)
    print(
        f"\nTags: bursts of {burst:,} on a site of {background:,} listed articles, variants"
        f" {args.tags_variants} (tagged: {args.tags:,} tags in use, few: {FEW_TAGS}; 3 an"
        f" article), {args.tags_runs} runs each"
    )
    every = {
        "none": (0, 0),
        "tagged": (args.tags, args.tags),
        "untagged": (args.tags, 0),
        "few": (FEW_TAGS, FEW_TAGS),
    }
    variants = [every[name] for name in args.tags_variants.split(",")]
    workdir = Path(tempfile.mkdtemp(prefix="blogpublish-bench-tags-"))
    runs = []
    try:
        with private_redis(workdir) as redis_url:
            for _ in range(args.tags_runs):
                for site_tags, burst_tags in variants:
                    params = {"redis_url": redis_url, "tags": site_tags, "burst_tags": burst_tags}
                    params |= {"burst": burst, "background": background}
                    runs.append(run_child("tags", args.tags_database, params))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"  ({args.tags_database}; load average now {os.getloadavg()[0]:.1f})")
    for line in tags_report(runs):
        print(line, flush=True)


BENCHMARKS: list[Callable[[argparse.Namespace], None]] = [
    bench_pipeline,
    bench_site,
    bench_operator,
    bench_preview,
    bench_render,
    bench_rebuild,
    bench_full_check,
    bench_upgrade,
    bench_rerender,
    bench_tags,
]
# Run only when named (`bench/run.py tags`): half an hour at full size, and `make bench
# QUICK=1` stays under ten minutes.
ON_REQUEST = {"tags"}
SITE_FULL = {"first": 1_000, "then": 10_000, "window": 1_000}
SITE_QUICK = {"first": 500, "then": 1_000, "window": 500}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="benchmarks to run (default: all)")
    parser.add_argument(
        "--quick",
        action="store_true",
        default=os.environ.get("QUICK", "") not in ("", "0"),
        help="smaller sizes (also QUICK=1 in the environment): under 10 minutes",
    )
    parser.add_argument("--first", type=int, help="site: first batch (1,000; quick: 500)")
    parser.add_argument("--then", type=int, help="site: second batch (10,000; quick: 1,000)")
    parser.add_argument("--window", type=int, help="site: articles per row (1,000; quick: 500)")
    parser.add_argument(
        "--rebuild-articles",
        type=int,
        help="rebuild: the site's size on disk (1,000,000; quick: 10,000)",
    )
    parser.add_argument(
        "--rebuild-bucket-articles",
        type=int,
        help="rebuild: the site's size in a bucket (100,000; quick: 10,000)",
    )
    parser.add_argument(
        "--full-check-pages",
        type=int,
        help="full_check: pages in the bucket (20,000; quick: 2,000)",
    )
    parser.add_argument(
        "--rebuild-sites", default="disk,bucket", help="rebuild: where the site is (disk,bucket)"
    )
    parser.add_argument(
        "--upgrade-articles", type=int, help="upgrade: the table's size (1 M; quick: 100 k)"
    )
    parser.add_argument(
        "--rerender-articles",
        type=int,
        help="rerender: the site's size (100,000; quick: 10,000)",
    )
    parser.add_argument(
        "--rerender-bucket-articles",
        type=int,
        help="rerender: the site's size in a bucket (10,000; quick: 2,000)",
    )
    parser.add_argument(
        "--rerender-saves",
        type=int,
        help="rerender: idle saves timed with a worker alone (50; quick: 20; 0: no workers)",
    )
    add_arguments(parser)
    tags = parser.add_argument_group("tags (burst 1,000 on 10,000; quick: 200 on 2,000)")
    tags.add_argument("--tags", type=int, default=1_000, help="tags in use in the tagged runs")
    tags.add_argument("--tags-burst", type=int, help="articles in each burst")
    tags.add_argument("--tags-background", type=int, help="listed articles before the burst")
    tags.add_argument("--tags-runs", type=int, default=2, help="runs of each variant")
    tags.add_argument("--tags-database", default="postgres", help="postgres or sqlite")
    tags.add_argument(
        "--tags-variants",
        default="none,few,tagged,untagged",
        type=tag_variants,
        help="the variants run, of none, few, tagged, untagged (bench/tags.py)",
    )
    operator = parser.add_argument_group("operator (1 M / 5 M; quick: 100 k / 500 k)")
    operator.add_argument("--operator-articles", type=int, help="articles in the table")
    operator.add_argument("--operator-attempts", type=int, help="attempt rows in the table")
    args = parser.parse_args()
    site = SITE_QUICK if args.quick else SITE_FULL
    for name, default in site.items():
        if getattr(args, name) is None:
            setattr(args, name, default)
    by_name = {bench.__name__.removeprefix("bench_"): bench for bench in BENCHMARKS}
    started = time.monotonic()
    for name in args.names or [name for name in by_name if name not in ON_REQUEST]:
        by_name[name](args)
    print(f"\nmake bench{' QUICK=1' if args.quick else ''}: {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
