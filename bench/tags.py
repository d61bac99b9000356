"""A burst drain with 1,000 tags in use against the same burst with none (issue 21,
item 3: a publish's cost must not grow with the number of tags; target within 10 %).

Each variant runs in a child process of its own (bench/child.py, mode `tags`), on a fresh
database and SITE_ROOT against the run's private Redis:

  seed:  `background` listed articles, made in the database (bulk_create and the live
         tags' rows as a completion writes them), then one refresher pass that writes the
         shared pages (and, with tags, every tag's page): the site the burst lands on.
         With tags, each article carries 3 of `tags` tags, spread evenly.
  burst: `burst` articles saved while no worker runs (each with 3 tags, or none), then
         the worker started; articles per second from its start to the last
         published_at, the front page and feed's lag (bench/phases.py's drain), and the
         tags' pages' lag: from the last published_at to when no request for a tag's
         pages is left (tag pages yield to publishes while a burst drains).

The variants (bench/run.py `--tags-variants`): none (no tag on the site or in the
burst), tagged (the burst tagged, on a site with `tags` tags in use), untagged (the same
untagged burst as none's on that site) and few (the burst tagged the same way, on a site
with FEW_TAGS tags in use: the number of tags alone changes between few and tagged).
They alternate, run after run, so that the load of a shared machine, which moves,
falls on each alike.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from pathlib import Path

from bench.phases import drain, wait_published
from bench.support import progress, worker

TAGS_PER_ARTICLE = 3


def tags_of(n: int, tags: int) -> list[str]:
    """Three distinct tags of `tags` for article n, so that every tag is in use."""
    if not tags:
        return []
    picked = {(n * TAGS_PER_ARTICLE + k) % tags for k in range(TAGS_PER_ARTICLE)}
    return [f"topic {t}" for t in sorted(picked)]


def measure_tags(workdir: Path, env: dict, params: dict) -> dict:
    import redis

    redis.Redis.from_url(env["CELERY_BROKER_URL"]).flushall()  # a private server
    tags, burst_tags = params["tags"], params["burst_tags"]
    started = time.monotonic()
    seed(params["background"], tags)
    seeded_s = time.monotonic() - started
    site_root = Path(env["SITE_ROOT"])
    with worker("config", workdir / "worker-warmup.log", env):
        for n in range(4):  # both pool children import and connect once
            wait_published(save("warmup", n, burst_tags)[0], timeout=60)
    progress(f"tags ({tags}): {params['burst']} saves, no worker running")
    ids = [save("burst", n, burst_tags)[0] for n in range(params["burst"])]
    with worker("config", workdir / "worker-burst.log", env):
        ready = time.time()
        progress(f"tags ({tags}): worker started; draining the burst")
        burst = drain(ids, site_root, ready=ready)
        tags_current = wait_tags_current()
    # From the worker's start to the last publish: a batch completes its group at one
    # moment, so the spread of published_at alone says little of a small burst.
    last = last_published(ids)
    burst["drain_s"] = last - ready
    burst["tag_pages_lag_ms"] = (tags_current - last) * 1000 if burst_tags else None
    from publishing.models import Tag

    return {
        "tags": tags,
        "burst_tags": burst_tags,
        "tags_in_use": Tag.objects.filter(kind="tag").count(),
        "background": params["background"],
        "seed_s": seeded_s,
        "burst": burst,
    }


def wait_tags_current(timeout: float = 600) -> float:
    """When no request for a tag's pages was left (time.time()): the pass that took the
    last one has committed, so every page the burst touched is written (bench/phases.py
    polls as often)."""
    from publishing.models import TagRefresh

    deadline = time.monotonic() + timeout
    while TagRefresh.objects.exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"tags' pages still asked for {timeout:.0f} s after the burst")
        time.sleep(0.05)
    return time.time()


def last_published(ids: list[int]) -> float:
    from django.db.models import Max

    from publishing.models import Article

    return (
        Article.objects.filter(pk__in=ids).aggregate(last=Max("published_at"))["last"].timestamp()
    )


def seed(count: int, tags: int) -> None:
    """`count` listed articles with their live tags, then one pass that writes the site."""
    from django.utils import timezone

    from blogpublish.site import StaticSitePublisher
    from publishing.models import Article
    from publishing.services.live_tags import live_tags_write

    base = timezone.now().replace(microsecond=0) - timedelta(days=30)
    rows = [
        listed_article(f"background-{n}", base + timedelta(minutes=n), tags_of(n, tags))
        for n in range(count)
    ]
    made = Article.objects.bulk_create(rows, batch_size=1000)
    for start in range(0, len(made), 500):
        live_tags_write(made[start : start + 500])
    publisher = StaticSitePublisher()
    while not publisher.refresh():  # a rebuild resumed until done, every tag written
        pass
    settle_database()
    progress(f"tags ({tags}): seeded {count} listed articles")


def listed_article(slug: str, at: datetime, tags: list[str]):
    """An Article as its publish leaves it (live at `at`, with `tags`), not saved."""
    from publishing.models import Article, ArticleStatus

    title, body = slug.replace("-", " ").capitalize(), "Some *Markdown* text. " * 50
    article = Article(title=title, slug=slug, body=body, publish_at=at, tags=tags)
    article.status = ArticleStatus.PUBLISHED
    article.published_title, article.published_slug = title, slug
    article.published_body, article.published_tags = body, article.tags
    article.published_publish_at = article.published_at = at
    article.fill_slug_keys()
    article.content_hash = article.published_hash = article._content_hash()
    return article


def settle_database() -> None:
    """As autovacuum would, soon after a seed (this machine's server runs with it off):
    the statistics and the visibility map of the tables just filled, so that the burst's
    queries are planned on a table the size it is, in every variant alike."""
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("VACUUM (ANALYZE)")


def save(prefix: str, n: int, tags: int) -> tuple[int, float]:
    from publishing.models import Article

    title = f"{prefix.capitalize()} article {n}"
    article = Article(
        title=title,
        slug=f"{prefix}-{n}",
        body=f"# {title}\n\n" + "Some *Markdown* text. " * 50,
        tags=tags_of(n + 7, tags),
    )
    started = time.time()
    article.save()
    return article.pk, started


# A small blog's taxonomy: the `few` variant's tags in use.
FEW_TAGS = 10


def variant_name(tags: int, burst_tags: int) -> str:
    if not tags:
        return "none: no tag on the site or the burst"
    if not burst_tags:
        return f"the same untagged burst as none, on a site with {tags:,} tags in use"
    return f"the burst tagged, 3 of the {tags:,} tags in use each"


def tags_report(runs: list[dict]) -> list[str]:
    """The table: each run's drain, the front page and feed's lag and the tags' pages'
    (last publish -> no tag page left to write), then each variant's median rate and its
    ratio to the variant without tags."""
    import statistics

    lines = [
        "",
        "Burst drain with tags in use (issue 21): the same site and burst with and without tags",
        f"{'run':>4} {'site tags':>10} {'burst tagged':>13} {'site':>6} {'burst':>6} "
        f"{'drain s':>8} {'articles/s':>11} {'pages lag ms':>13} {'tag pages lag ms':>17}",
    ]
    by_variant: dict[tuple[int, int], list[float]] = {}
    for number, run in enumerate(runs, 1):
        if "burst" not in run:
            lines.append(f"{number:>4} {run}")
            continue
        burst, lag = run["burst"], run["burst"]["pages_lag_ms"]
        tag_lag = burst.get("tag_pages_lag_ms")
        per_second = burst["n"] / burst["drain_s"]
        lines.append(
            f"{number:>4} {run['tags_in_use']:>10,} {'yes' if run['burst_tags'] else 'no':>13} "
            f"{run['background']:>6,} {burst['n']:>6,} {burst['drain_s']:>8.1f} "
            f"{per_second:>11.1f} {'-' if lag is None else f'{lag:.0f}':>13} "
            f"{'-' if tag_lag is None else f'{tag_lag:.0f}':>17}"
        )
        variant = (run["tags"], run["burst_tags"])
        by_variant.setdefault(variant, []).append(per_second)
    medians = {variant: statistics.median(rates) for variant, rates in by_variant.items()}
    none = medians.get((0, 0))
    # The same tagged burst on the site with the fewest tags in use, for the others.
    fewest = min((v for v in medians if v[1]), default=None)
    for variant, rate in medians.items():
        ratio = f": ratio {rate / none:.2f} to none (target ≥ 0.90)" if none else ""
        if variant[1] and fewest and variant != fewest:
            ratio += f", {rate / medians[fewest]:.2f} to {fewest[0]:,} tags in use"
        lines.append(f"median {rate:.1f} articles/s, {variant_name(*variant)}{ratio}")
    return lines
