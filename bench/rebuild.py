"""A delete followed by a publish on a large site (issue 17): how long until the new
article is on the front page and in the feed, while the archive is rebuilt.

The site's articles are published rows made in one INSERT (bench/catchup.py); the
shared views are built once, then an old article is deleted (every archive position
above it shifts: a rebuild is due) and a new article is published at once. Each pass
of the refresher runs in this process, as `publish_pending`'s do: the publish's own
pass writes the front page and the feed first, then works through the archive for its
budget (a second) and keeps a checkpoint; the next passes resume it until the archive
is whole. Printed: the time from the publish to the new article on the front page and
in the feed, and how many passes (and how long) the archive took to converge.
"""

from __future__ import annotations

import time
from pathlib import Path


def rebuild_report(size: int, workdir: Path) -> list[str]:
    from bench.catchup import insert_published
    from blogpublish.site import StaticSitePublisher, build
    from blogpublish.site.selectors import newest
    from publishing.models import Article
    from publishing.services import article_publish, article_unpublish, shared_views_pass
    from work.checkpoints import checkpoint_read

    insert_published(1, size)
    root = workdir / "site"
    started = time.perf_counter()
    StaticSitePublisher().refresh()  # the first build, whole, no budget
    lines = [
        f"  build the shared views of {size:,} articles: {time.perf_counter() - started:,.1f} s"
    ]

    victim = Article.objects.order_by("publish_at")[10]
    snapshot = {k: getattr(victim, k) for k in ("id", "slug", "published_slug", "title")}
    snapshot["uid"] = str(victim.uid)
    Article.objects.filter(pk=victim.pk).delete()
    started = time.perf_counter()
    article_unpublish(snapshot=snapshot)  # its pass: one budget of the rebuild
    lines.append(
        f"  the delete's pass (front page, feed, first archive pages): "
        f"{time.perf_counter() - started:,.2f} s"
    )

    new = Article(title="Fresh news", slug="fresh-news", body="Just in.")
    new.save()  # the dispatch fails fast (no broker): published in-process below
    fronted: list[float] = []
    write_front_page = build.write_front_page

    def noting(site, entries, **kwargs):
        write_front_page(site, entries, **kwargs)
        if not fronted and entries and entries[0].id == new.pk:
            fronted.append(time.perf_counter())

    build.write_front_page = noting
    try:
        published = time.perf_counter()
        article_publish(article_id=new.pk, retry_in=lambda n: 0)
        passes = 1
        while checkpoint_read(build.REBUILD_CHECKPOINT) is not None:
            shared_views_pass()
            passes += 1
        converged = time.perf_counter() - published
    finally:
        build.write_front_page = write_front_page
    front = (root / "index.html").read_text()
    feed = (root / "feed.xml").read_text()
    assert "fresh-news" in front and "fresh-news" in feed  # a broken run, not timing
    assert newest(1)[0].id == new.pk
    lines.append(
        f"  publish → on the front page and in the feed: {(fronted[0] - published) * 1000:,.0f} ms"
    )
    lines.append(f"  the archive whole again after {passes} pass(es): {converged:,.1f} s")
    return lines
