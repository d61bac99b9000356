"""The static site builder with the real database and the real pipeline services, run
in-process as the backup executor runs them (no broker here: the worker paths are in
test_site.py). Each test has a SITE_ROOT of its own."""

from __future__ import annotations

import logging
import shutil
import sqlite3
import threading
import xml.etree.ElementTree as ET
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import OperationalError, connection
from django.db.models.signals import post_delete, post_save
from django.test import Client
from django.utils import timezone
from psycopg import errors as pg_errors

from blogpublish.models import SiteState as SiteStateRow
from blogpublish.site import StaticSitePublisher, selectors
from blogpublish.site.check import installation_check
from blogpublish.site.lock import advisory_key, page_guard
from blogpublish.site.state import CHECKS_CHECKPOINT, SiteState
from blogpublish.storage.local import LocalStorage
from publishing.models import Article, ArticleStatus, FormerAddress, Refresher
from publishing.publishers import get_publishers
from publishing.services import (
    Outcome,
    article_claim,
    article_complete,
    article_publish,
    article_unpublish,
    unpublish_snapshot,
)
from publishing.services.refresh import shared_views_pass, shared_views_request
from publishing.signals import article_deleted, article_saved
from tests.support.site import (
    archive_pages,
    assert_lists_exactly,
    moved_pages,
    read_listing,
    run_full_check,
    stale_page,
)
from tests.support.waiting import wait_for
from work.checkpoints import checkpoint_read

pytestmark = pytest.mark.django_db(transaction=True)


class Site:
    """Writes articles and runs their attempts in-process, like `publish_pending`."""

    def __init__(self, root: Path):
        self.root = root
        self.base = timezone.now() - timedelta(days=30)
        self.made = 0

    @property
    def publisher(self) -> StaticSitePublisher:
        return next(p for p in get_publishers() if isinstance(p, StaticSitePublisher))

    def add(self, count: int = 1, expect: Outcome = Outcome.PUBLISHED, **fields) -> list[Article]:
        articles = []
        for _ in range(count):
            article = self.save(**fields)
            self.attempt(article, expect)
            articles.append(article)
        return articles

    def save(self, **fields) -> Article:
        """A new article saved (`add`'s next one, or as `fields` say), its attempt not run."""
        self.made += 1
        article = Article(
            title=f"Article {self.made}",
            slug=f"article-{self.made}",
            body=f"Body of article {self.made}.",
            publish_at=self.base + timedelta(minutes=self.made),
        )
        for name, value in fields.items():
            setattr(article, name, value)
        article.full_clean()
        article.save()
        return article

    def attempt(self, article: Article, expect: Outcome = Outcome.PUBLISHED) -> None:
        result = article_publish(article_id=article.pk, retry_in=lambda n: 0)
        assert result.outcome is expect, result
        article.refresh_from_db()

    def edit(self, article: Article, expect: Outcome = Outcome.PUBLISHED, **fields) -> None:
        for name, value in fields.items():
            setattr(article, name, value)
        article.full_clean()
        article.save()
        self.attempt(article, expect)

    def delete(self, article: Article) -> None:
        snapshot = unpublish_snapshot(article)
        article.delete()
        article_unpublish(snapshot=snapshot)

    def settled(self) -> None:
        """Passes run here while one is wanted: a pass that stopped at its budget (a
        second; a rebuild of a hundred articles' archive on a loaded host) leaves the
        rest to the next, which the tests' broker-less site never runs by itself (the
        final rehearsal of 2026-12-07 read a sitemap halfway through such a rebuild)."""
        wait_for(
            lambda: (
                not Refresher.objects.filter(wanted=True).exists()
                or (shared_views_pass() and False)
            ),
            what="the shared views' passes to be done",
        )

    def newest_first(self) -> list[str]:
        return list(
            Article.objects.exclude(published_hash="")
            .order_by("-published_publish_at", "-id")
            .values_list("published_slug", flat=True)
        )

    def inode(self, page: int) -> int:
        return (self.root / "page" / str(page) / "index.html").stat().st_ino


@pytest.fixture
def site(tmp_path, settings):
    """A SITE_ROOT of the test's own; the site first, then the chaos publisher (standing
    in for a later target such as the webhook). Saves and deletes do not dispatch: the
    test runs each attempt itself, so no worker of the session can take them; and every
    outcome's refresh runs at once, in this thread (no interval to fold requests into)."""
    settings.SITE_ROOT = tmp_path / "site"
    settings.PUBLISH_REFRESH_INTERVAL = 0
    settings.PUBLISH_PUBLISHERS = [
        "blogpublish.site.StaticSitePublisher",
        "tests.support.chaos.ChaosPublisher",
    ]
    post_save.disconnect(sender=Article, dispatch_uid="publishing.article_saved")
    post_delete.disconnect(sender=Article, dispatch_uid="publishing.article_deleted")
    try:
        yield Site(settings.SITE_ROOT)
    finally:
        post_save.connect(article_saved, sender=Article, dispatch_uid="publishing.article_saved")
        post_delete.connect(
            article_deleted, sender=Article, dispatch_uid="publishing.article_deleted"
        )


def serialization_failure() -> OperationalError:
    """What Django raises for PostgreSQL's serialization failure: its OperationalError,
    from psycopg's error (SQLSTATE 40001)."""
    try:
        raise pg_errors.SerializationFailure("could not serialize access")
    except pg_errors.SerializationFailure as exc:
        wrapped = OperationalError(*exc.args)
        wrapped.__cause__ = exc
        return wrapped


@pytest.mark.parametrize("wrapped", [False, True], ids=["the conflict", "a failure from one"])
def test_a_pass_that_meets_a_concurrent_write_logs_no_error(site, monkeypatch, caplog, wrapped):
    """A serialization failure is what a pass meets while writers work, and it is tried
    again: a WARNING without a traceback, not an ERROR with one (a review's finding: four
    ERRORs in a minute of concurrent PATCHes, the site whole after). An error of the
    pass's own raised from one is still an ERROR with its traceback (another review's)."""

    def refresh(self, **kwargs):
        if wrapped:
            raise RuntimeError("the tag pages' writer crashed") from serialization_failure()
        raise serialization_failure()

    site.add(1)
    monkeypatch.setattr(StaticSitePublisher, "refresh", refresh)
    caplog.set_level(logging.INFO)

    shared_views_request()

    said = [r for r in caplog.records if "another is wanted" in r.getMessage()]
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert said
    if wrapped:
        assert "pass failed" in said[0].getMessage()
        assert errors and errors[0].exc_info
    else:
        assert "met a concurrent write" in said[0].getMessage()
        assert not errors and not [r for r in caplog.records if r.exc_info]


def test_archive_is_numbered_from_the_oldest_and_new_articles_leave_old_pages_alone(site):
    site.add(120)
    site.settled()
    assert_lists_exactly(site.root, site.newest_first())
    # 120 articles: the front page shows 71-120, its "Older" link opens page 2 (51-100).
    assert read_listing(site.root / "index.html").older_href == "/page/2/"
    before = {page: site.inode(page) for page in (1, 2)}

    site.add(1)

    site.settled()
    assert_lists_exactly(site.root, site.newest_first())
    assert {page: site.inode(page) for page in (1, 2)} == before

    site.add(29)  # the 150th fills page 3; page 2's "Newer" link now opens page 3

    site.settled()
    assert_lists_exactly(site.root, site.newest_first())
    assert site.inode(1) == before[1]
    assert site.inode(2) != before[2]
    assert "/page/3/" in (site.root / "page" / "2" / "index.html").read_text()


def test_republishing_an_old_article_rewrites_only_its_archive_page(site):
    articles = site.add(110)
    site.settled()
    before = {page: site.inode(page) for page in (1, 2)}

    site.edit(articles[0], title="The oldest, renamed")
    site.settled()

    assert site.inode(1) != before[1]
    assert site.inode(2) == before[2]
    assert archive_pages(site.root)[1].titles[-1] == "The oldest, renamed"
    site.settled()
    assert_lists_exactly(site.root, site.newest_first())


def test_backdated_article_and_delete_shift_the_archive_correctly(site):
    site.add(105)
    site.add(1, publish_at=site.base - timedelta(days=1))  # the oldest of all: position 0
    site.settled()
    assert_lists_exactly(site.root, site.newest_first())

    middle = Article.objects.get(slug="article-40")
    site.delete(middle)

    site.settled()
    assert_lists_exactly(site.root, site.newest_first())
    assert not (site.root / "article-40").exists()


def test_new_date_moves_the_article_in_the_archive(site):
    articles = site.add(120)

    site.edit(articles[0], publish_at=timezone.now() - timedelta(seconds=5))  # now the newest

    site.settled()
    assert_lists_exactly(site.root, site.newest_first())
    assert site.newest_first()[0] == articles[0].slug


def test_edit_waiting_for_its_time_shows_nothing_of_itself_before_then(site):
    [article] = site.add(1)
    tomorrow = timezone.now() + timedelta(days=1)
    # Published, then edited to go out tomorrow: the old version stays live until then.
    site.edit(
        article, expect=Outcome.SKIPPED, title="Embargoed", body="Secret", publish_at=tomorrow
    )

    site.add(1)  # another article's publish refreshes the front page and the feed

    front = read_listing(site.root / "index.html")
    assert "Article 1" in front.titles and "Embargoed" not in front.titles
    feed = (site.root / "feed.xml").read_text(encoding="utf-8")
    assert "Embargoed" not in feed and "Secret" not in feed
    page = (site.root / article.slug / "index.html").read_text(encoding="utf-8")
    assert "Body of article 1." in page and "Secret" not in page


def test_slug_edit_moves_the_page_and_the_old_address_sends_readers_on(site):
    (article,) = site.add(1, slug="old-address")

    site.edit(article, slug="new-address", body="Moved.")

    assert "Moved." in (site.root / "new-address" / "index.html").read_text()
    assert moved_pages(site.root) == {"old-address": "new-address"}
    moved = (site.root / "old-address" / "index.html").read_text()
    assert '<link rel="canonical" href="http' in moved and "Moved." not in moved
    assert_lists_exactly(site.root, site.newest_first())
    # Where the app serves the site, the old address is a permanent redirect.
    client = Client()
    response = client.get("/old-address/")
    assert (response.status_code, response["Location"]) == (301, "/new-address/")
    assert "Content-Security-Policy" in response
    assert response["Cache-Control"] == "max-age=300"  # not for ever: it may move back
    assert client.get("/new-address/").status_code == 200
    assert client.get("/old-address/index.html").status_code == 200  # the file itself


def test_with_a_path_in_site_url_the_app_serves_the_site_under_it(site, settings):
    """SITE_URL https://…/blog: the pages link to /blog/…, and where the app serves the
    site (make run) it serves it there; it served it at / only, so every link was a 404."""
    settings.SITE_URL = "http://testserver/blog"
    (article,) = site.add(1, slug="under-blog")
    site.edit(article, slug="moved-under-blog", body="Moved.")
    client = Client()

    front = client.get("/blog/")
    assert front.status_code == 200
    assert b'href="/blog/moved-under-blog/"' in front.content
    assert client.get("/blog/moved-under-blog/").status_code == 200
    assert client.get("/blog/feed.xml").status_code == 200
    assert (client.get("/").status_code, client.get("/")["Location"]) == (302, "/blog/")
    assert client.get("/blog")["Location"] == "/blog/"
    assert client.get("/moved-under-blog/").status_code == 404  # outside SITE_URL's path
    # The query kept on the way in; a bad path answered with the site's own 404 page, as
    # any other page it does not have (a review's: Django's bare 404 for these).
    assert client.get("/blog?utm_source=feed")["Location"] == "/blog/?utm_source=feed"
    not_found = (settings.SITE_ROOT / "404.html").read_bytes()
    for bad in ("/blog/../x", "/blog//moved-under-blog/", "/blog/.staging/x"):
        response = client.get(bad)
        assert (response.status_code, response.content) == (404, not_found), bad
    old = client.get("/blog/under-blog/")
    assert (old.status_code, old["Location"]) == (301, "/blog/moved-under-blog/")
    assert client.get("/blog/moved-under-blog")["Location"] == "/blog/moved-under-blog/"


def test_former_addresses_follow_the_article_and_give_way_to_another(site):
    """Moved twice, each former address sends readers to where it is now (no chain);
    an article that takes a former address has its page there, and the page that sends
    readers on comes back when that article goes; a delete takes them all."""
    (article,) = site.add(1, slug="first-home")
    site.edit(article, slug="second-home")
    site.edit(article, slug="third-home")
    assert moved_pages(site.root) == {"first-home": "third-home", "second-home": "third-home"}

    (other,) = site.add(1, slug="first-home", title="Squatter")
    assert moved_pages(site.root) == {"second-home": "third-home"}
    assert "Squatter" in (site.root / "first-home" / "index.html").read_text()
    assert_lists_exactly(site.root, site.newest_first())

    site.delete(other)
    assert moved_pages(site.root) == {"first-home": "third-home", "second-home": "third-home"}

    site.edit(article, slug="first-home")  # back home: that address is its page again
    assert moved_pages(site.root) == {"second-home": "first-home", "third-home": "first-home"}
    assert_lists_exactly(site.root, site.newest_first())

    site.delete(article)
    assert moved_pages(site.root) == {}
    assert not (site.root / "second-home").exists()
    assert_lists_exactly(site.root, site.newest_first())


def test_article_dying_after_an_edit_stays_listed_with_its_last_live_page(site, chaos):
    (article,) = site.add(1, slug="kept", body="The good version.")
    chaos("moved-away", fail="permanent")  # a later target refuses the new content

    site.edit(article, expect=Outcome.DEAD, slug="moved-away", body="Refused.")
    # The death asks for a pass itself (here, at once), which settles what it wrote.

    assert Article.objects.get(pk=article.pk).status == ArticleStatus.DEAD
    assert not (site.root / "moved-away").exists()
    assert "The good version." in (site.root / "kept" / "index.html").read_text()
    assert "kept" in read_listing(site.root / "index.html").slugs
    assert_lists_exactly(site.root, site.newest_first())


def test_article_dying_before_it_was_ever_listed_leaves_no_page(site, chaos, monkeypatch):
    """The site wrote its page before the refusal; the death asks for a pass, which
    takes it off (a review's finding: it was served until the catch-up's pass)."""
    chaos("never-live", fail="permanent")
    written = []
    publish_many = StaticSitePublisher.publish_many

    def spied(self, articles, **kwargs):  # the group's write: a page each
        failures = publish_many(self, articles, **kwargs)
        written.extend((site.root / a.slug).exists() for a in articles)
        return failures

    monkeypatch.setattr(StaticSitePublisher, "publish_many", spied)

    site.add(1, expect=Outcome.DEAD, slug="never-live")

    assert written == [True]  # the site wrote it before the refusal
    assert not (site.root / "never-live").exists()
    assert_lists_exactly(site.root, site.newest_first())


# --- attempts overtaken after the page was written ----------------------------------------


def write_page(site: Site, article: Article):
    """The first half of an attempt: claimed, and the site's page written."""
    claim = article_claim(article_id=article.pk)
    assert claim is not None
    site.publisher.publish(claim.article)
    return claim


def test_stale_attempt_never_writes_over_newer_content(site):
    (article,) = site.add(1, body="Version one.")
    page = site.root / article.slug / "index.html"
    # Worker A claims version two and stalls; its lease runs out; B publishes version three.
    article.body = "Version two."
    article.save()
    stale = article_claim(article_id=article.pk)
    article.body = "Version three."
    article.save()
    Article.objects.filter(pk=article.pk).update(lease_expires_at=None)
    site.attempt(article)
    assert "Version three." in page.read_text()

    site.publisher.publish(stale.article)  # A wakes up
    assert article_complete(claim=stale).outcome is Outcome.SKIPPED

    assert "Version three." in page.read_text()


def test_stale_attempt_of_the_same_content_does_not_count_the_article_twice(site):
    article = Article(title="Once", slug="once", body="x", publish_at=site.base)
    article.full_clean()
    article.save()
    stale = article_claim(article_id=article.pk)  # A claims, stalls; its lease runs out
    Article.objects.filter(pk=article.pk).update(lease_expires_at=None)
    site.attempt(article)  # B publishes; the refresh after it counts the article
    page = site.root / "once" / "index.html"
    b_page = page.stat()

    site.publisher.publish(stale.article)  # A wakes up: the same content, overtaken
    assert article_complete(claim=stale).outcome is Outcome.SKIPPED
    site.publisher.refresh()

    assert SiteState.load().count == 1
    # A's token no longer matches: B's page was not written again (a rename would give
    # the file a new inode).
    assert (page.stat().st_ino, page.stat().st_mtime_ns) == (b_page.st_ino, b_page.st_mtime_ns)


def test_page_of_an_article_deleted_during_its_attempt_is_removed(site):
    article = Article(title="Doomed", slug="doomed", body="x", publish_at=site.base)
    article.full_clean()
    article.save()
    claim = write_page(site, article)
    assert (site.root / "doomed" / "index.html").exists()

    site.delete(article)  # never completed: published_slug is still empty
    assert article_complete(claim=claim).outcome is Outcome.SKIPPED

    assert not (site.root / "doomed").exists()
    assert_lists_exactly(site.root, [])


def test_a_removal_the_storage_refused_is_tried_again_by_the_next_pass(site, monkeypatch, caplog):
    [gone] = site.add(1)
    page = site.root / gone.slug / "index.html"
    assert page.exists()
    refused = []
    real = LocalStorage.delete_tree

    def refuse_once(self, rel):
        if not refused:
            refused.append(rel)
            raise OSError(5, "Input/output error")
        return real(self, rel)

    monkeypatch.setattr(LocalStorage, "delete_tree", refuse_once)
    with caplog.at_level(logging.ERROR, logger="blogpublish.site.publisher"):
        site.delete(gone)  # its pass runs here, and its removal is refused

    assert refused == [gone.slug]
    assert page.exists() and f"{gone.slug}/ was not removed" in caplog.text

    shared_views_request()  # the next pass, whatever asks for it: no full check

    assert not page.parent.exists()
    assert_lists_exactly(site.root, [])


def test_a_folder_refused_for_good_fails_no_pass_and_no_full_check(site, monkeypatch, caplog):
    """A review of the mend above: a folder the storage refused every time made every
    pass fail (and want the next, 5.5 s later, for ever), and the articles each settled
    piled up in the checks due; the full check stopped at it before its repairs."""
    [gone, kept] = site.add(2)
    real = LocalStorage.delete_tree

    def refuse_gone(self, rel):
        if rel == gone.slug:
            raise OSError(13, "Permission denied")
        return real(self, rel)

    monkeypatch.setattr(LocalStorage, "delete_tree", refuse_gone)
    with caplog.at_level(logging.WARNING):
        site.delete(gone)
        site.add(2)  # more passes, each trying the folder again

    assert "pass failed" not in caplog.text
    due = checkpoint_read(CHECKS_CHECKPOINT)
    assert (due["ids"], due["removals"]) == ([], [gone.slug])  # only what is left to do
    assert (site.root / gone.slug).exists()

    (site.root / kept.slug / "index.html").unlink()  # and a page the full check must write
    run_full_check(site.publisher)

    assert (site.root / kept.slug / "index.html").exists()
    assert f"{gone.slug}/ was not removed" in caplog.text


def test_slug_edited_after_the_page_was_written_leaves_no_old_directory(site):
    article = Article(title="Draft", slug="first-name", body="x", publish_at=site.base)
    article.full_clean()
    article.save()
    claim = write_page(site, article)
    article.slug = "second-name"
    article.save()
    assert article_complete(claim=claim).outcome is Outcome.CHANGED

    site.attempt(article)

    assert not (site.root / "first-name").exists()
    assert_lists_exactly(site.root, ["second-name"])


def test_reconcile_removes_pages_no_article_needs_and_keeps_the_sites_own_files(site):
    site.add(3)
    (site.root / "ghost").mkdir()
    (site.root / "ghost" / "index.html").write_text(stale_page("deleted while the broker was down"))
    (site.root / ".ghost.removed-0123").mkdir()  # trash of a removal cut short
    SiteStateRow.objects.all().delete()  # a lost state costs a rebuild, nothing else

    run_full_check(site.publisher)

    assert not (site.root / "ghost").exists()
    assert not (site.root / ".ghost.removed-0123").exists()
    for own in ("index.html", "feed.xml", "sitemap.xml", "sitemap-1.xml"):
        assert (site.root / own).exists(), own
    assert_lists_exactly(site.root, site.newest_first())


def test_a_former_address_goes_to_the_article_that_left_it_last_while_it_is_listed(site):
    """A left it, B took it and left it too: it sends readers to B; once B is gone, to A
    again (a review's finding: B's move took A's record of it)."""
    (a,) = site.add(1, slug="shared-home")
    site.edit(a, slug="a-new-home")
    (b,) = site.add(1, slug="shared-home", title="Taker")
    site.edit(b, slug="b-new-home")
    assert moved_pages(site.root) == {"shared-home": "b-new-home"}

    site.delete(b)

    assert moved_pages(site.root) == {"shared-home": "a-new-home"}
    assert installation_check(site.publisher.site).problems == []
    assert_lists_exactly(site.root, site.newest_first())


def test_an_article_back_at_its_former_address_keeps_the_page_its_attempt_wrote(site):
    """The pass that settles a move removes the folder it left after its snapshot; by
    then the article may have been edited back to it, and its attempt may have written
    its page there (a review's finding: the page that sends readers on was written over
    it, and sent them round in a loop once the article was live there again)."""
    (article,) = site.add(1, slug="there-and")
    site.edit(article, slug="back-again")
    article.slug = "there-and"
    article.full_clean()
    article.save()
    claim = write_page(site, article)  # its attempt wrote the page, not completed yet

    # The pass's late removal of the folder the move left (its note's, settled before
    # the edit back): what `_pass` runs once its snapshot's transaction commits.
    assert site.publisher._remove(["there-and"]) == []

    assert "blogpublish-moved" not in (site.root / "there-and" / "index.html").read_text()
    assert article_complete(claim=claim).outcome == "published"
    site.publisher.refresh()
    assert moved_pages(site.root) == {"back-again": "there-and"}
    assert_lists_exactly(site.root, site.newest_first())


def test_full_check_writes_the_live_page_over_a_former_addresss_page_in_its_folder(site):
    (article,) = site.add(1, slug="live-here")
    site.edit(article, slug="moved-here")
    page = site.root / "moved-here" / "index.html"
    live = page.read_text()
    page.write_text((site.root / "live-here" / "index.html").read_text())  # what a race left

    run_full_check(site.publisher)

    assert page.read_text() == live
    assert moved_pages(site.root) == {"live-here": "moved-here"}


def test_the_full_check_leaves_what_the_site_did_not_write(site, caplog):
    """SITE_ROOT=/var/www/html (or a home, or a folder another site shares): the full
    check removed every folder in it no article needed, backups/ and uploads/ with
    everything in them (a review's finding). It removes only folders whose index.html
    carries the site's mark; others are left, with a warning, and restore_check names
    them."""
    site.add(1)
    (site.root / "backups").mkdir()
    (site.root / "backups" / "2026-12-01.sql").write_text("precious")
    (site.root / "uploads").mkdir()
    (site.root / "uploads" / "index.html").write_text("<p>someone else's page</p>")

    run_full_check(site.publisher)

    assert (site.root / "backups" / "2026-12-01.sql").read_text() == "precious"
    assert (site.root / "uploads" / "index.html").exists()
    assert "uploads/ in the site's folder is not a page of this site" in caplog.text
    problems = installation_check(site.publisher.site).problems
    assert "the page backups/ is served and no article has it" in problems


def test_the_full_check_writes_again_an_article_page_without_its_mark(site):
    """A page emptied, cut short or written over by something else: restore_check said
    so, and its repair left it (a page without a mark was not judged)."""
    site.add(1, slug="emptied")
    page = site.root / "emptied" / "index.html"
    live = page.read_text()
    page.write_text("")

    run_full_check(site.publisher)

    assert page.read_text() == live


def test_full_check_writes_a_missing_former_address_and_drops_those_of_articles_gone(site):
    (article,) = site.add(1, slug="was-here")
    site.edit(article, slug="is-here")
    shutil.rmtree(site.root / "was-here")  # a site restored from before the move
    FormerAddress.objects.create(slug="gone-article", article_id=article.pk + 1000)
    (site.root / "gone-article").mkdir()
    (site.root / "gone-article" / "index.html").write_text(
        stale_page("sent on to a deleted article")
    )

    problems = installation_check(site.publisher.site).problems
    assert "the former address was-here/ does not send readers on to is-here/" in problems
    assert "the page gone-article/ is served and no article has it" in problems, problems

    run_full_check(site.publisher)

    assert moved_pages(site.root) == {"was-here": "is-here"}
    assert not (site.root / "gone-article").exists()
    assert list(FormerAddress.objects.values_list("slug", flat=True)) == ["was-here"]
    assert installation_check(site.publisher.site).problems == []
    assert_lists_exactly(site.root, site.newest_first())


def test_what_articles_need_is_read_in_one_statement(site, chaos, django_assert_num_queries):
    site.add(1, slug="live")
    chaos("refused", fail="permanent")
    site.add(1, expect=Outcome.DEAD, slug="refused")
    waiting = Article(title="Waiting", slug="waiting", body="x", publish_at=site.base)
    waiting.full_clean()
    waiting.save()

    # One statement, one snapshot: an article completing between two queries would be
    # in neither and its page removed (seen in test_redis_restarted_while_publishing).
    with django_assert_num_queries(1):
        needed = selectors.owned_slugs()

    assert needed == {"live", "waiting"}


def test_page_guard_excludes_other_processes_and_hosts(site):
    with page_guard(slugs=["guarded"], article_id=7):
        assert guard_free_elsewhere("slug", "guarded") is False
        assert guard_free_elsewhere("article", 7) is False
    assert guard_free_elsewhere("slug", "guarded") is True
    assert guard_free_elsewhere("article", 7) is True


def guard_free_elsewhere(kind: str, name: object) -> bool:
    """Could a connection of another thread (another host, as far as PostgreSQL can
    tell; another process, as far as SQLite can) take that guard now?"""
    got: list[bool] = []

    def attempt() -> None:
        if connection.vendor == "postgresql":
            from django.db import connection as thread_connection

            try:
                with thread_connection.cursor() as cursor:
                    cursor.execute("SELECT pg_try_advisory_lock(%s)", [advisory_key(kind, name)])
                    got.append(cursor.fetchone()[0])
                    if got[0]:
                        cursor.execute("SELECT pg_advisory_unlock(%s)", [advisory_key(kind, name)])
            finally:
                thread_connection.close()
            return
        # SQLite: the guard is the database's write lock.
        other = sqlite3.connect(connection.settings_dict["NAME"], timeout=0)
        try:
            other.execute("BEGIN IMMEDIATE")
            other.rollback()
            got.append(True)
        except sqlite3.OperationalError:
            got.append(False)
        finally:
            other.close()

    thread = threading.Thread(target=attempt)
    thread.start()
    thread.join()
    return got[0]


def test_pages_of_different_articles_are_written_while_another_is_guarded(site):
    """No site-wide lock: an attempt writing one page does not wait for another's."""
    if connection.vendor != "postgresql":
        pytest.skip("SQLite has one writer at a time: there the guard is its write lock")
    held, done = threading.Event(), threading.Event()

    def another_attempt() -> None:
        from django.db import connection as thread_connection

        try:
            with page_guard(slugs=["elsewhere"], article_id=10**9):
                held.set()
                done.wait(timeout=60)
        finally:
            thread_connection.close()

    thread = threading.Thread(target=another_attempt)
    thread.start()
    try:
        assert held.wait(timeout=30)
        site.add(1, slug="meanwhile")  # published in full while the other guard is held
        assert (site.root / "meanwhile" / "index.html").exists()
        assert thread.is_alive()  # the other guard was still held throughout
    finally:
        done.set()
        thread.join()


def test_a_group_that_moves_one_article_to_a_slug_another_left_keeps_that_ones_record(site):
    """One completion for both: B moves on (it left `b-before` earlier), C moves onto
    `b-before`. B's record of `b-before` stays (C's page holds the folder; when C
    leaves it, it sends readers to B again): only an article back at a slug it had
    left drops that slug's row of its own."""
    from publishing.services.publish import _record_moves

    b, c = site.add(2)
    FormerAddress.objects.create(slug="b-before", article_id=b.pk)
    b.published_slug, b.slug = b.slug, "b-next"
    c.published_slug, c.slug = c.slug, "b-before"

    _record_moves([b, c])

    assert sorted(FormerAddress.objects.values_list("slug", "article_id")) == sorted(
        [("b-before", b.pk), (b.published_slug, b.pk), (c.published_slug, c.pk)]
    )


def test_an_empty_sites_sitemap_names_a_chunk_listing_its_front_page(site, settings):
    """sitemaps.org's schema wants a sitemap in an index and a url in a urlset: an empty
    site's index named none (invalid; a review's finding). Its one chunk now lists the
    front page, until the first article takes its place."""
    settings.SITE_URL = "https://blog.example/博客"
    ns = {"sm": "http://www.sitemaps.org/schemas/sitemap/0.9"}

    def locs(name: str, path: str) -> list[str]:
        root = ET.parse(site.root / name).getroot()
        return [loc.text for loc in root.findall(f"{path}/sm:loc", ns)]

    home = "https://blog.example/%E5%8D%9A%E5%AE%A2/"
    chunk = f"{home}sitemap-1.xml"
    run_full_check(site.publisher)
    assert locs("sitemap.xml", "sm:sitemap") == [chunk]
    assert locs("sitemap-1.xml", "sm:url") == [home]

    [article] = site.add(1)
    site.settled()
    assert locs("sitemap.xml", "sm:sitemap") == [chunk]
    assert locs("sitemap-1.xml", "sm:url") == [f"{home}article-1/"]

    site.delete(article)
    site.settled()
    assert locs("sitemap-1.xml", "sm:url") == [home]
    assert run_full_check(site.publisher)  # nothing to mend
    assert locs("sitemap.xml", "sm:sitemap") == [chunk]
