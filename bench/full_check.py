"""The full check in a bucket (issue 17): what it costs to read every page's content
mark, against reading only the pages that changed since the last check and a slice.

On PostgreSQL (a database of its own) with the site in a bucket on moto's S3 server (as
the tests start it): `size` published rows made in one INSERT (bench/catchup.py), and
each article's page rendered and PUT directly (16 at a time), as its attempt would have
left it. Then, in this process:

1. the first full check (no checkpoint: it reads every page; it also builds the
   archive); then the clocks' margin set to nothing (the pages were put a moment ago:
   an hour later they are outside it);
2. `changed` articles republished (their attempts in this process), then the next full
   check: it reads their pages, their neighbours' and a slice (1/24) of the rest;
3. the checkpoint forgotten, the full check again: every page read, as before this
   change; the archive is unchanged, so this is what step 2 saved.

Printed: each check's seconds and the pages it read.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from itertools import islice

from bench.support import progress


def full_check_report(size: int, *, changed: int = 20) -> list[str]:
    from bench.catchup import insert_published

    progress(f"full check: inserting {size:,} articles and putting their pages")
    insert_published(1, size)
    started = time.perf_counter()
    _put_pages()
    lines = [
        f"  {size:,} pages rendered and put (16 at a time): {time.perf_counter() - started:,.1f} s"
    ]
    lines.append(_timed_check("the first full check (every page read; the archive built)"))
    # The pages were put a moment ago: with the margin for the storage's clock, the next
    # check would read them all. As an hour later: no margin, the clock a second on.
    from blogpublish.site import full_check
    from work.lease import db_now

    full_check.CLOCK_MARGIN = 0.0
    began = db_now()
    while db_now() < began.replace(microsecond=0) + timedelta(seconds=1):
        time.sleep(0.05)
    _republish(changed)
    lines.append(_timed_check(f"the next, after {changed} articles were republished"))
    from blogpublish.site.full_check import FULL_CHECK_CHECKPOINT
    from work.checkpoints import checkpoint_clear

    checkpoint_clear(FULL_CHECK_CHECKPOINT)
    lines.append(_timed_check("the same check reading every page (as before)"))
    return lines


def _put_pages() -> None:
    """Each page as its attempt would have written it; the rows' hashes made the real
    hash of their content (bench/catchup.py's are stand-ins), which the page's mark is."""
    from blogpublish.site import documents, paths, selectors
    from blogpublish.storage import site_storage
    from publishing.models import Article

    site = site_storage()
    pages = selectors.listed_pages()
    with ThreadPoolExecutor(max_workers=16) as pool:
        while chunk := list(islice(pages, 1000)):
            lives = {live.id: live for live in selectors.live_versions_of([p.id for p in chunk])}
            docs = [
                (paths.page_file(p.slug), documents.article_page(lives[p.id], around=p.neighbours))
                for p in chunk
            ]
            rows = []
            for page, (_, html) in zip(chunk, docs, strict=True):
                mark = documents.page_content_hash(html.encode())
                rows.append(Article(pk=page.id, content_hash=mark, published_hash=mark))
            Article.objects.bulk_update(rows, ["content_hash", "published_hash"])
            list(pool.map(lambda doc: site.write(*doc), docs))


def _republish(count: int) -> None:
    from publishing.models import Article
    from publishing.services import article_publish

    for article in Article.objects.order_by("?")[:count]:
        article.body += "\n\nAn update."
        article.save()
        article_publish(article_id=article.pk, retry_in=lambda n: 0)


class _Reads(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.message = ""

    def emit(self, record: logging.LogRecord) -> None:
        self.message = record.getMessage()


def _timed_check(what: str) -> str:
    from blogpublish.site.publisher import StaticSitePublisher

    progress(f"full check: {what}")
    handler = _Reads()
    log = logging.getLogger("blogpublish.site.full_check")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    started = time.perf_counter()
    try:
        publisher = StaticSitePublisher()
        publisher.check()  # the reading, beside the passes
        publisher.reconcile()  # its pass over the shared views, here unbudgeted
    finally:
        log.removeHandler(handler)
    read = handler.message.removeprefix("full check: ")
    return f"  {what}: {time.perf_counter() - started:,.1f} s ({read})"
