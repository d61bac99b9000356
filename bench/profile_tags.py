"""Profile the refresher writing the pages of a burst's tags, in-process, with
pyinstrument: where a tag's time goes (its queries, its templates, its files).

    .venv/bin/python bench/profile_tags.py [BURST] [sqlite|postgres] [BACKGROUND] [TAGS] [MODE]

On a fresh database and SITE_ROOT: BACKGROUND listed articles (2,000) with TAGS tags
in use (1,000; 3 an article, bench/tags.py's seed, every tag's pages written), then

- MODE `pages` (the default): BURST articles (500) made live as a burst's completions
  leave them (their live tags and the TagRefresh rows asking for their tags' pages),
  then the tags' pages written as the refresher's passes write them
  (`build.write_tag_pages`, no budget), timed and profiled;
- MODE `publish` / `publish-untagged`: BURST pending articles with 3 tags each (or
  none), published in-process by groups (`publish_group`, as a worker child runs
  them, the refresher's passes included), timed and profiled.

A measurement, not a test.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    from bench.support import profiled

    burst = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    database = sys.argv[2] if len(sys.argv) > 2 else "postgres"
    background = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
    tags = int(sys.argv[4]) if len(sys.argv) > 4 else 1000
    mode = sys.argv[5] if len(sys.argv) > 5 else "pages"
    with profiled(
        database, prefix="blogpublish-profile-tags-", SITE_URL="https://blog.example.com"
    ):
        run(burst, background, tags, mode)


def run(burst: int, background: int, tags: int, mode: str) -> None:
    import logging

    import django
    from django.core.management import call_command

    django.setup()
    logging.disable(logging.WARNING)
    call_command("migrate", verbosity=0)
    from datetime import timedelta

    from django.db import transaction
    from django.utils import timezone
    from pyinstrument import Profiler

    from bench.tags import listed_article, seed, tags_of
    from blogpublish.site import build
    from blogpublish.storage import site_storage
    from publishing.models import Article, TagRefresh
    from publishing.services.live_tags import live_tags_write

    seed(background, tags)
    if mode != "pages":
        publish(burst, tags if mode == "publish" else 0)
        return
    now = timezone.now().replace(microsecond=0)
    rows = [
        listed_article(f"burst-{n}", now + timedelta(seconds=n), tags_of(n + 7, tags))
        for n in range(burst)
    ]
    for article in Article.objects.bulk_create(rows, batch_size=1000):
        live_tags_write([article])  # a completion's requests, one article at a time
    requested = TagRefresh.objects.values("tag_id").distinct().count()
    site = site_storage()
    profiler = Profiler(interval=0.0005)
    started = time.perf_counter()
    with profiler:
        done = False
        while not done:
            with transaction.atomic():
                done = build.write_tag_pages(site, write=build.atomic_write)
    elapsed = time.perf_counter() - started
    print(f"{requested} tags' pages in {elapsed:.2f} s: {elapsed / requested * 1000:.2f} ms each\n")
    print(profiler.output_text(unicode=False, color=False, show_all=False))


def publish(burst: int, tags: int) -> None:
    from django.db.models.signals import post_save
    from pyinstrument import Profiler

    from bench.tags import save
    from publishing.models import Article
    from publishing.services import publish_group

    post_save.disconnect(sender=Article, dispatch_uid="publishing.article_saved")
    for n in range(burst):
        save("burst", n, tags)
    profiler = Profiler(interval=0.0005)
    started = time.perf_counter()
    with profiler:
        while publish_group(retry_in=lambda n: 0).claimed:
            pass
    elapsed = time.perf_counter() - started
    each = elapsed / burst * 1000
    print(f"{burst} publishes ({tags} tags) in {elapsed:.2f} s: {each:.2f} ms each\n")
    print(profiler.output_text(unicode=False, color=False, show_all=False))


if __name__ == "__main__":
    main()
