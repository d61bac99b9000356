"""No stale page survives (issue 17, findings 5 and 10, items 2 and 4): an article's
page written by an attempt that was paused between its token check and its write, and
the checks that find a stale or missing page afterwards.

In-process, as the backup executor runs attempts (tests/integration/test_site_builder.py),
with the real database and the real storage: the test's own folder, or a bucket in
moto's S3 server. Writer A is paused inside the site publisher by holding its storage's
`commit` (after the token check, under the page guard) on an Event; its database session
is then ended as the server ends one idle for a lease (blogpublish.site.lock), which
lets B through the guard.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from celery.exceptions import SoftTimeLimitExceeded
from django.db import connection, connections

from blogpublish.site import documents, paths, selectors
from blogpublish.site.full_check import FULL_CHECK_CHECKPOINT
from blogpublish.site.lock import page_guard
from blogpublish.storage import site_storage
from blogpublish.storage.local import LocalStorage
from blogpublish.storage.s3 import S3SiteStorage
from publishing.models import Article
from publishing.services import Outcome, article_claim, article_complete
from tests.integration.test_site_builder import Site, site  # noqa: F401  (the fixture)
from tests.support.site import run_full_check
from tests.support.waiting import wait_for
from work.checkpoints import checkpoint_read

pytestmark = pytest.mark.django_db(transaction=True)

on_postgresql = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="a guard's locks gone while its writer still runs need a dropped session: on "
    "SQLite the guard is the database's write lock, held by the one host until it ends",
)


@pytest.fixture(params=["folder", "s3"])
def where(request, site, settings) -> str:  # noqa: F811
    """The site in the test's folder, or in a bucket of moto's S3 server."""
    if request.param == "s3":
        server = request.getfixturevalue("s3_server")
        for name, value in server.settings_for(f"s3://{server.new_bucket()}/site").items():
            setattr(settings, name, value)
    return request.param


def page_bytes(slug: str) -> bytes | None:
    return site_storage().read(paths.page_file(slug))


def page_version(slug: str) -> object:
    """Changes with every write of the page, even of the same bytes."""
    storage = site_storage()
    if isinstance(storage, LocalStorage):
        stat = (storage.root / paths.page_file(slug)).stat()
        return stat.st_ino, stat.st_mtime_ns
    head = storage.head(paths.page_file(slug))
    return head["ETag"], head["LastModified"]


class PausedWriter:
    """Writer A: `publisher.publish(article)` (or `publish_many(articles)`) in a thread,
    held just before the storage's `commit` (`commit_many`), after the token check,
    under the page guard, until `go()`."""

    def __init__(
        self,
        site: Site,  # noqa: F811
        articles: Article | list,
        monkeypatch,
        *,
        then: BaseException | None = None,
    ):
        """`then`: raised in A right after its write, as the soft time limit overdue
        after a pause is (Celery raises it the moment the process runs again)."""
        self.then = then
        self.at_write, self.resume = threading.Event(), threading.Event()
        self.error: BaseException | None = None
        self.result: object = None
        self.session = 0
        self.thread = threading.Thread(target=self._run, args=(site, articles), name="writer-a")
        cls = type(site_storage())
        for name in ("commit", "commit_many"):
            monkeypatch.setattr(cls, name, self._held(getattr(cls, name)))
        self.thread.start()
        wait_for(self.at_write.is_set, timeout=30, what="writer A to reach its write")

    def _held(self, original):
        def held(storage, staged) -> None:
            if threading.current_thread() is self.thread and not self.at_write.is_set():
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_backend_pid()")
                    self.session = cursor.fetchone()[0]
                self.at_write.set()
                self.resume.wait(timeout=60)
                original(storage, staged)
                if self.then is not None:
                    raise self.then
                return
            original(storage, staged)

        return held

    def _run(self, site: Site, articles: Article | list) -> None:  # noqa: F811
        try:
            if isinstance(articles, list):
                self.result = site.publisher.publish_many(articles)
            else:
                site.publisher.publish(articles)
        except BaseException as exc:  # reported by go()
            self.error = exc
        finally:
            connections.close_all()

    def drop_session(self) -> None:
        """A's session ended, as the server ends a guard's transaction idle for a lease."""
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [self.session])

    def go(self) -> None:
        self.resume.set()
        self.thread.join(timeout=60)
        assert not self.thread.is_alive(), "writer A did not finish"
        if self.error is not None:
            raise self.error


@on_postgresql
def test_writer_paused_after_its_check_never_leaves_its_page(site, where, monkeypatch):  # noqa: F811
    (article,) = site.add(1, body="Version one.")
    article.body = "Version two."
    article.save()
    stale = article_claim(article_id=article.pk)  # A claims version two
    writer = PausedWriter(site, stale.article, monkeypatch)
    writer.drop_session()  # A's guard holds nothing now; A itself does not know

    # A's lease runs out; B publishes version three through the guard A no longer holds.
    article.body = "Version three."
    article.save()
    Article.objects.filter(pk=article.pk).update(lease_expires_at=None)
    site.attempt(article)
    b_bytes, b_version = page_bytes(article.slug), page_version(article.slug)
    assert b"Version three." in b_bytes

    writer.go()  # A resumes: its write is refused (a bucket) or taken back (a folder)

    assert article_complete(claim=stale).outcome is Outcome.SKIPPED
    assert page_bytes(article.slug) == b_bytes
    assert page_version(article.slug) == b_version  # the very page B wrote, not a copy


@on_postgresql
@pytest.mark.parametrize("many", [False, True], ids=["one", "a batch"])
def test_writer_paused_past_its_lease_whose_time_limit_comes_after_its_write_takes_it_back(
    site,  # noqa: F811
    where,
    monkeypatch,
    many,
):
    """A worker paused (SIGSTOP, a VM frozen) after its check, under its guard: B
    publishes a newer version meanwhile. A runs again, its write goes in, and its soft
    time limit, long overdue, is raised the next moment: the write is taken back, as a
    broken guard's is (a review's finding: the older page stayed until the full check)."""
    (article,) = site.add(1, body="Version one.")
    article.body = "Version two."
    article.save()
    stale = article_claim(article_id=article.pk)
    late = SoftTimeLimitExceeded()
    writer = PausedWriter(site, [stale.article] if many else stale.article, monkeypatch, then=late)
    writer.drop_session()
    article.body = "Version three."
    article.save()
    Article.objects.filter(pk=article.pk).update(lease_expires_at=None)
    site.attempt(article)
    b_bytes = page_bytes(article.slug)

    raised = None
    try:
        writer.go()
    except SoftTimeLimitExceeded as exc:
        raised = exc

    assert page_bytes(article.slug) == b_bytes
    # On disk the write went in and the limit came after; a bucket refuses the PUT
    # itself (conditional on the page A checked), so A never reaches its limit there.
    assert raised is (late if where == "folder" else None)


@on_postgresql
def test_writer_whose_guard_broke_but_still_current_has_its_page_written_again(
    site,  # noqa: F811
    where,
    monkeypatch,
):
    (article,) = site.add(1, body="Version one.")
    article.body = "Version two."
    article.save()
    claim = article_claim(article_id=article.pk)
    writer = PausedWriter(site, claim.article, monkeypatch)
    writer.drop_session()  # nobody came first: A is still the current attempt

    with pytest.raises(Exception, match="page guard did not hold") as raised:
        writer.go()

    # Its write taken back (or, in a bucket, made: nothing changed it since the check),
    # and the attempt retried: the retry writes the page under a guard that holds.
    assert type(raised.value).__name__ == "TransientPublishError"
    site.publisher.publish(claim.article)
    assert article_complete(claim=claim).outcome is Outcome.PUBLISHED
    assert b"Version two." in page_bytes(article.slug)


@on_postgresql
def test_writer_paused_at_a_new_articles_first_page_leaves_none_when_it_is_deleted_meanwhile(
    site,  # noqa: F811
    where,
    monkeypatch,
):
    """A's first write of a new article's page (nothing there at its check: in a bucket
    an If-None-Match PUT, which nothing since can refuse); the article is deleted while
    A is paused. A's write lands, its guard is found broken, and the page it made is
    taken back: a deleted article's page is not left until the full check (a review's
    finding: in a bucket it was)."""
    article = site.save()  # saved, its attempt not run: no page yet
    claim = article_claim(article_id=article.pk)
    writer = PausedWriter(site, claim.article, monkeypatch)
    writer.drop_session()
    site.delete(Article.objects.get(pk=article.pk))
    assert page_bytes(article.slug) is None

    writer.go()  # its write lands, its guard found broken: overtaken (by the delete)

    assert page_bytes(article.slug) is None


@on_postgresql
def test_batch_paused_after_its_check__the_overtaken_page_stays_the_others_are_written(
    site,  # noqa: F811
    where,
    monkeypatch,
):
    overtaken, current = site.add(2, body="Version one.")
    claims = []
    for article in (overtaken, current):
        article.body = "Version two."
        article.save()
        claims.append(article_claim(article_id=article.pk))
    writer = PausedWriter(site, [claim.article for claim in claims], monkeypatch)
    writer.drop_session()

    overtaken.body = "Version three."
    overtaken.save()
    Article.objects.filter(pk=overtaken.pk).update(lease_expires_at=None)
    site.attempt(overtaken)  # B, for one of the two
    b_bytes, b_version = page_bytes(overtaken.slug), page_version(overtaken.slug)

    writer.go()  # A's batch resumes; its guard is gone: taken back, then one by one

    assert writer.result == {}
    assert article_complete(claim=claims[0]).outcome is Outcome.SKIPPED
    assert article_complete(claim=claims[1]).outcome is Outcome.PUBLISHED
    assert (page_bytes(overtaken.slug), page_version(overtaken.slug)) == (b_bytes, b_version)
    assert b"Version two." in page_bytes(current.slug)


@on_postgresql
def test_page_guard__a_transaction_left_idle_for_a_lease_is_ended(transactional_db, settings):
    settings.PUBLISH_LEASE_SECONDS = 2
    held, done = threading.Event(), threading.Event()
    pid: list[int] = []

    def stalled_writer() -> None:
        try:
            with page_guard(slugs=["stalled"]):
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_backend_pid()")
                    pid.append(cursor.fetchone()[0])
                held.set()
                done.wait(timeout=120)  # stalled until the test has seen the session end
        except Exception:  # its commit fails: the session is gone
            pass
        finally:
            connections.close_all()

    thread = threading.Thread(target=stalled_writer, daemon=True)
    thread.start()
    wait_for(held.is_set, timeout=30, what="the guard to be held")

    def session_ended() -> bool:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", pid)
            return cursor.fetchone()[0] == 0

    try:
        wait_for(session_ended, timeout=30, what="the server to end the idle guard's session")
        with page_guard(slugs=["stalled"]):  # the locks went with it
            pass
    finally:
        done.set()
        thread.join(timeout=30)


# --- finding what is wrong afterwards ----------------------------------------------------------


def stale_copy(article: Article, body: str) -> str:
    """The page as an older attempt of `article` with `body` wrote it."""
    live = next(selectors.live_versions_of([article.pk]))
    older = selectors.LiveVersion(
        id=live.id,
        slug=live.slug,
        title=live.title,
        body=body,
        publish_at=live.publish_at,
        published_hash="0" * 64,
    )
    return documents.article_page(older)


def live_page(article: Article) -> bytes:
    return documents.article_page(next(selectors.live_versions_of([article.pk]))).encode()


def test_full_check__rewrites_a_stale_page_not_only_a_missing_one(site, where):  # noqa: F811
    (article, other) = site.add(2, body="Version one.")
    site.edit(article, body="Version two.")
    # A write that landed after it was overtaken (a PUT its client gave up on, a
    # rename undone by a power loss): the page shows older content than the live one.
    site_storage().write(paths.page_file(article.slug), stale_copy(article, "Version one."))
    site_storage().delete(paths.page_file(other.slug))

    run_full_check(site.publisher)

    assert page_bytes(article.slug) == live_page(article)
    assert page_bytes(other.slug) == live_page(other)


def test_full_check__in_a_bucket_the_condition_is_the_etag_of_the_bytes_it_judged(
    site,  # noqa: F811
    s3_server,
    settings,
):
    """The full check judges a page by its first bytes under the guard; its PUT must be
    conditional on that very object. A page that lands after that read (a writer whose
    guard did not hold: what the condition is for) is not written over, as it would be
    if the condition were taken by a later HEAD."""
    bucket = s3_server.new_bucket()
    for name, value in s3_server.settings_for(f"s3://{bucket}/site").items():
        setattr(settings, name, value)
    (article,) = site.add(1)
    rel = paths.page_file(article.slug)
    site_storage().delete(rel)  # missing: the full check writes it
    other, seen = s3_server.client(), []

    def newer_after_the_guarded_read(request, **_):
        if request.url.endswith(f"/{bucket}/site/{rel}"):
            seen.append(request.method)
            if seen == ["GET", request.method] and request.method != "GET":  # next after it
                other.put_object(Bucket=bucket, Key=f"site/{rel}", Body=b"<p>newer</p>")

    site_storage().client.meta.events.register("before-send.s3.*", newer_after_the_guarded_read)

    run_full_check(site.publisher)  # its PUT refused: the page changed since it was read

    assert seen[0] == "GET" and len(seen) >= 2  # the read under the guard, then a write
    assert page_bytes(article.slug) == b"<p>newer</p>"
    # The refusal is that page's alone: the check went on to its end (it failed there,
    # and saved nothing, before).
    assert checkpoint_read(FULL_CHECK_CHECKPOINT) is not None


def test_full_check__leaves_the_page_of_an_attempt_under_way(site, where):  # noqa: F811
    (article,) = site.add(1, body="Version one.")
    article.body = "Version two."
    article.save()
    claim = article_claim(article_id=article.pk)
    site.publisher.publish(claim.article)  # written, not completed yet

    run_full_check(site.publisher)

    assert b"Version two." in page_bytes(article.slug)
    assert article_complete(claim=claim).outcome is Outcome.PUBLISHED


def test_next_pass__writes_the_missing_page_of_an_article_it_settles(site, where):  # noqa: F811
    (article,) = site.add(1, body="Version one.")
    article.body = "Version two."
    article.save()
    claim = article_claim(article_id=article.pk)
    site.publisher.publish(claim.article)
    # Lost after the write (a power loss before the rename reached the disk).
    site_storage().delete(paths.page_file(article.slug))
    assert article_complete(claim=claim).outcome is Outcome.PUBLISHED

    site.publisher.refresh()  # the pass that settles its note, not the hourly check

    assert page_bytes(article.slug) == live_page(article)


def test_page_content_hash__read_from_the_first_bytes_of_a_page(site):  # noqa: F811
    (article,) = site.add(1)
    head = site_storage().read_head(paths.page_file(article.slug), documents.CONTENT_MARK_WITHIN)

    assert documents.page_content_hash(head) == Article.objects.get(pk=article.pk).published_hash
    assert documents.page_content_hash(b"<!doctype html><p>no mark</p>") is None


def test_bucket__a_put_over_a_page_that_changed_since_the_check_is_refused(s3_server, settings):
    for name, value in s3_server.settings_for(f"s3://{s3_server.new_bucket()}/site").items():
        setattr(settings, name, value)
    storage = site_storage()
    assert isinstance(storage, S3SiteStorage)
    storage.write("slug/index.html", "<p>first</p>")
    a = storage.stage("slug/index.html", "<p>A, checked first</p>")
    storage.observe(a)
    storage.write("slug/index.html", "<p>B, newer</p>")  # B came between A's check and PUT

    from blogpublish.exceptions import PageChanged

    with pytest.raises(PageChanged):
        storage.commit(a)
    assert storage.read("slug/index.html") == b"<p>B, newer</p>"

    new = storage.stage("new/index.html", "<p>A</p>")
    storage.observe(new)  # missing at the check: the PUT is If-None-Match: *
    storage.write("new/index.html", "<p>B</p>")
    with pytest.raises(PageChanged):
        storage.commit(new)
    assert storage.read("new/index.html") == b"<p>B</p>"


def test_bucket__a_page_a_put_made_is_taken_back_and_nothing_else_is(s3_server, settings):
    """In a bucket a conditional PUT over a page replaced the very page its check saw:
    nothing to take back. One where there was none made the page: taken back (removed)
    while it is still the one written, and never once a newer write replaced it."""
    for name, value in s3_server.settings_for(f"s3://{s3_server.new_bucket()}/site").items():
        setattr(settings, name, value)
    storage = site_storage()
    storage.write("over/index.html", "<p>B</p>")
    over = storage.stage("over/index.html", "<p>A</p>")
    storage.observe(over)
    storage.commit(over)
    assert not storage.take_back(over)
    assert storage.read("over/index.html") == b"<p>A</p>"

    made = storage.stage("made/index.html", "<p>A</p>")
    storage.observe(made)
    storage.commit(made)
    assert storage.take_back(made)
    assert storage.read("made/index.html") is None

    newer = storage.stage("newer/index.html", "<p>A</p>")
    storage.observe(newer)
    storage.commit(newer)
    storage.write("newer/index.html", "<p>C, newer</p>")
    assert not storage.take_back(newer)
    assert storage.read("newer/index.html") == b"<p>C, newer</p>"

    # Another attempt's page of the very same bytes (the same ETag) is not this write.
    same = storage.stage("same/index.html", "<p>A</p>")
    storage.observe(same)
    storage.commit(same)
    other = storage.stage("same/index.html", "<p>A</p>")
    storage.observe(other)
    storage.commit(other)
    assert not storage.take_back(same)
    assert storage.read("same/index.html") == b"<p>A</p>"


def test_folder__a_write_taken_back_restores_the_very_page_it_replaced(tmp_path: Path):
    storage = LocalStorage(tmp_path)
    storage.write("slug/index.html", "<p>B</p>")
    before = (tmp_path / "slug" / "index.html").stat()
    a = storage.stage("slug/index.html", "<p>A</p>")
    storage.commit(a)
    assert (tmp_path / "slug" / "index.html").read_text() == "<p>A</p>"

    assert storage.take_back(a)

    after = (tmp_path / "slug" / "index.html").stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert (tmp_path / "slug" / "index.html").read_text() == "<p>B</p>"
    storage.discard(a)


def test_folder__a_newer_write_is_never_taken_back(tmp_path: Path):
    storage = LocalStorage(tmp_path)
    a = storage.stage("slug/index.html", "<p>A</p>")
    storage.commit(a)  # a new page: nothing was there
    storage.commit(storage.stage("slug/index.html", "<p>C, newer</p>"))

    assert not storage.take_back(a)
    assert (tmp_path / "slug" / "index.html").read_text() == "<p>C, newer</p>"

    b = storage.stage("other/index.html", "<p>B</p>")
    storage.commit(b)
    assert storage.take_back(b)  # there was no page: taken back is none
    assert not (tmp_path / "other" / "index.html").exists()
