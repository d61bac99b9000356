"""A delete followed by a publish on a large site (issue 17): how long until the new
article is on the front page and in the feed, while the archive is rebuilt.

On PostgreSQL (a database of its own), the site on disk or in a bucket (moto's S3
server, started as the tests start it). The site's articles are published rows made in
one INSERT (bench/catchup.py); the shared views are built once by the rebuild every
full check runs, without a budget; then an old article is deleted (every archive
position above it shifts: a rebuild is due) and a new article is published at once.
Each pass of the refresher runs in this process, as `publish_pending`'s do: the
publish's own pass writes the front page and the feed first, then works through the
archive for its budget (a second) and keeps a checkpoint; the next passes resume it
until the archive is whole. Printed: the time from the publish to the new article on
the front page and in the feed, and how many passes (and how long) the archive took to
converge.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

from bench.support import progress


def rebuild_report(size: int, workdir: Path) -> Iterator[str]:
    """The table's lines, each as soon as it is measured (the archive's convergence
    takes long at 1 M)."""
    from bench.catchup import insert_published

    started = time.perf_counter()
    progress(f"rebuild: inserting {size:,} published articles")
    insert_published(1, size)
    yield f"  {size:,} published rows inserted (one INSERT … SELECT): {_since(started)}"
    yield _first_build(size)
    yield _delete()
    yield from _publish_and_converge()


def _since(started: float) -> str:
    return f"{time.perf_counter() - started:,.1f} s"


def _first_build(size: int) -> str:
    """The shared views of the whole site, as the full check's rebuild writes them."""
    from blogpublish.site import build
    from blogpublish.site.lock import snapshot
    from blogpublish.site.publisher import StaticSitePublisher
    from blogpublish.site.state import SiteState

    progress(f"rebuild: building the shared views of {size:,} articles")
    started = time.perf_counter()
    site = StaticSitePublisher().site
    with snapshot():
        state = SiteState.load()
        build.rebuild(site, state, resume=False)
        state.save_pass()
    return f"  build the shared views of {size:,} articles (one rebuild): {_since(started)}"


def _delete() -> str:
    from publishing.models import Article
    from publishing.services import article_unpublish

    victim = Article.objects.order_by("publish_at", "id")[10]
    snapshot = {k: getattr(victim, k) for k in ("id", "slug", "published_slug", "title")}
    snapshot["uid"] = str(victim.uid)
    Article.objects.filter(pk=victim.pk).delete()
    started = time.perf_counter()
    article_unpublish(snapshot=snapshot)  # its pass: one budget of the rebuild
    return f"  the delete's pass (front page, feed, first archive pages): {_since(started)}"


def _publish_and_converge() -> Iterator[str]:
    from blogpublish.site import build
    from blogpublish.site.selectors import newest
    from blogpublish.storage import site_storage
    from publishing.models import Article
    from publishing.services import article_publish, shared_views_pass
    from work.checkpoints import checkpoint_read

    new = Article(title="Fresh news", slug="fresh-news", body="Just in.")
    new.save()  # its message waits in the private broker: published in-process below
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
        listed = f"{(fronted[0] - published) * 1000:,.0f} ms" if fronted else "not yet"
        yield f"  publish → on the front page and in the feed: {listed}"
        passes = 1
        while checkpoint_read(build.REBUILD_CHECKPOINT) is not None:
            shared_views_pass()
            passes += 1
            if passes % 100 == 0:
                mark = checkpoint_read(build.REBUILD_CHECKPOINT) or {}
                progress(f"rebuild: pass {passes}, archive page {mark.get('page')}")
        converged = time.perf_counter() - published
    finally:
        build.write_front_page = write_front_page
    site = site_storage()
    front, feed = site.read("index.html") or b"", site.read("feed.xml") or b""
    assert b"fresh-news" in front and b"fresh-news" in feed  # a broken run, not timing
    assert newest(1)[0].id == new.pk
    yield (
        f"  the archive whole again after {passes} pass(es): {converged:,.1f} s "
        f"({converged / passes:.2f} s a pass)"
    )
