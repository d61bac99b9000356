"""The whole site in a new look (issue 20, "Done when"): a deploy changes the look's
fingerprint on a site of a few hundred articles; the re-render starts by itself (the
catch-up of a Beat), its worker is SIGKILLed twice mid-way, and it ends with every
page in the new look, none missing or half-written at any moment a reader polled, and
an edit made meanwhile published with its own content.

Real processes: `celery worker` and `celery beat` subprocesses on a private
redis-server (the system `pipeline` fixture), PostgreSQL. A reader thread reads every
page again and again from the start of the deploy to the end.
"""

from __future__ import annotations

import signal
import threading
import time
import uuid

import pytest

from blogpublish.site import documents, look, paths
from blogpublish.site.rerender import progress_read
from blogpublish.storage import site_storage
from publishing.models import Article, ArticleStatus, PublishAttempt
from publishing.services import publish_pending
from publishing.services.rerender import rerender_status
from tests.integration.test_batches import backlog
from tests.support.waiting import wait_for
from tests.system.conftest import record_timing, since
from tests.system.helpers import wait_all_published

pytestmark = [pytest.mark.system, pytest.mark.django_db(transaction=True)]

ARTICLES = 200
# Small chunks: the run takes long enough to be killed twice mid-way.
CHUNK = 4


class Reader(threading.Thread):
    """Reads every page until stopped: each must be there, whole (its end), with its
    content mark. Needs no database: the slugs are known."""

    def __init__(self, slugs: list[str]):
        super().__init__(name="reader", daemon=True)
        self.slugs, self.problems, self.rounds = slugs, [], 0
        self.halt = threading.Event()

    def run(self) -> None:
        site = site_storage()
        while not self.halt.is_set():
            for slug in self.slugs:
                data = site.read(paths.page_file(slug))
                if data is None:
                    self.problems.append(f"{slug}: missing")
                elif not data.rstrip().endswith(b"</html>") or not documents.page_content_hash(
                    data[: documents.CONTENT_MARK_WITHIN]
                ):
                    self.problems.append(f"{slug}: not whole ({len(data)} bytes)")
            self.rounds += 1

    def stop(self) -> None:
        self.halt.set()
        self.join(10)


def done_so_far() -> int:
    progress = progress_read()
    if progress is None or progress.look != look.look():
        return 0
    return ARTICLES if progress.finished_at else progress.done


def finished() -> bool:
    """The run in this look has ended: its last pass wrote the checkpoint's end. Its
    count of pages reaches the whole site a pass before that when a pass stops at its
    budget right after the last full chunk (CI saw `current` still False then)."""
    progress = progress_read()
    return progress is not None and progress.look == look.look() and bool(progress.finished_at)


def kill_when(worker, done: int) -> None:
    """SIGKILL the whole worker once the run has handled `done` pages, not finished."""
    wait_for(lambda: done_so_far() >= done, timeout=60, interval=0.02, what=f"{done} pages")
    worker.signal(signal.SIGKILL)
    worker.popen.wait(10)
    progress = progress_read()
    assert progress.finished_at is None, "the run ended before the kill: not mid-way"


def test_a_new_look_reaches_every_page_through_two_kills_and_an_edit_wins(pipeline, settings):
    prefix = f"rr-{uuid.uuid4().hex[:6]}"
    pipeline.env["SITE_RERENDER_CHUNK"] = str(CHUNK)
    # The site in the old look, published in this process by the backup executor (the
    # same services as a worker's; no worker start to pay for).
    settings.SITE_TITLE = "The old look"
    old_look = look.look()
    articles = backlog(prefix, ARTICLES)
    began = time.monotonic()
    publish_pending(limit=ARTICLES, retry_in=lambda attempt: 0.0)
    record_timing(f"{ARTICLES} articles published in-process (the old look)", since(began))
    wait_all_published(articles, timeout=5)
    assert look.page_look(site_storage().read_head(paths.page_file(articles[0].slug), 512)) == (
        old_look
    )
    attempts = PublishAttempt.objects.filter(article__in=articles).count()

    # The deploy: a new setting a page shows, so a new look; Beat's catch-up starts it.
    pipeline.env["SITE_TITLE"] = "The new look"
    settings.SITE_TITLE = "The new look"
    new_look = look.look()
    assert new_look != old_look
    reader = Reader([a.slug for a in articles])
    reader.start()
    try:
        started = time.monotonic()
        first = pipeline.worker(name="new-1")
        pipeline.beat()
        kill_when(first, ARTICLES // 5)
        second = pipeline.worker(name="new-2")
        # An edit while it runs, of the article with the last key: the re-render reaches
        # it after the edit's attempt, or before; the edit wins either way.
        edited = Article.objects.get(pk=articles[-1].pk)
        edited.body = "Edited while the site changed its look: 新的内容."
        edited.full_clean()
        edited.save()
        kill_when(second, ARTICLES // 2)
        pipeline.worker(name="new-3")
        wait_for(finished, timeout=90, what="the re-render's end")
        record_timing(f"re-render of {ARTICLES} pages through two kills", since(started))
        wait_all_published([edited], timeout=30)
    finally:
        reader.stop()

    assert reader.problems == [], reader.problems[:10]
    assert reader.rounds >= 3
    site = site_storage()
    pages = {a.slug: site.read(paths.page_file(a.slug)) for a in articles}
    wrong = [s for s, p in pages.items() if look.page_look(p[:512]) != new_look]
    assert wrong == [], f"{len(wrong)} page(s) not in the new look: {wrong[:5]}"
    assert all(b"The new look" in page for page in pages.values())
    assert "新的内容" in pages[edited.slug].decode()
    # The re-render changed no article: each published once, the edit twice.
    statuses = set(Article.objects.filter(pk__in=[a.pk for a in articles]).values_list("status"))
    assert statuses == {(ArticleStatus.PUBLISHED,)}
    assert PublishAttempt.objects.filter(article__in=articles).count() == attempts + 1
    (status,) = rerender_status().values()  # the site's (the other targets have no look)
    assert status["current"] and status["run"]["rate"] > 0
