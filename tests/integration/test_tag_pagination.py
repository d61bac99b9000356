"""Tag and author pages paginated as the site's archive is (issue 21, item 3): a tag's
page shows its newest articles, `page/<n>/` in its folder holds its positions from the
oldest, each page with its canonical address and its newer and older links. Written by
the refresher's pass from the oldest date a request touched, so a publish at the top
of a tag rewrites no older page; once quiet the pages are exactly what the full check
writes. The real pipeline services, in-process, with pages of three."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.db.models import F
from django.utils import timezone

from blogpublish.site import build, check, pagination
from blogpublish.site import selectors as site_selectors
from blogpublish.site.fenced import FencedSite
from blogpublish.storage import site_storage
from publishing.models import Article, Refresher, Tag, TagRefresh, tags_refresh
from publishing.reader_fields import tag_slug
from publishing.services.refresh import FIELDS
from tests.integration.test_site_builder import Site, site  # noqa: F401  (the fixture)
from tests.support.site import read_listing, run_full_check
from work.lease import Fence, Overtaken

pytestmark = pytest.mark.django_db(transaction=True)

SIZE = 3
CANONICAL = re.compile(r'<link rel="canonical" href="https?://[^/]*(/[^"]*)">')
LINKS = re.compile(r'<a rel="(prev|next)" href="([^"]*)">')


@pytest.fixture
def small_pages(monkeypatch):
    monkeypatch.setattr(pagination, "PAGE_SIZE", SIZE)
    monkeypatch.setattr(build, "PAGE_SIZE", SIZE)


def folder(site: Site, name: str, kind: str = "tag") -> Path:  # noqa: F811
    return site.root / kind / tag_slug(name)


def pages(site: Site, name: str, kind: str = "tag") -> dict[str, list[str]]:  # noqa: F811
    """{"": the tag's page, "1": archive page 1, …}: the slugs each lists, newest first."""
    top = folder(site, name, kind)
    found = {"": read_listing(top / "index.html").slugs}
    for page in sorted((top / "page").glob("*/index.html")) if (top / "page").exists() else []:
        found[page.parent.name] = read_listing(page).slugs
    return found


def head(site: Site, name: str, number: int | None = None) -> tuple[str, dict]:  # noqa: F811
    """A page's canonical path and its newer (prev) and older (next) links."""
    top = folder(site, name)
    html = (top / (f"page/{number}/index.html" if number else "index.html")).read_text()
    return CANONICAL.search(html)[1], dict(LINKS.findall(html))


def snapshot(site: Site) -> dict[str, bytes]:  # noqa: F811
    return {
        str(p.relative_to(site.root)): p.read_bytes()
        for kind in ("tag", "author")
        for p in (site.root / kind).rglob("*")
        if p.is_file()
    }


def assert_as_the_full_check_writes_them(site: Site) -> None:  # noqa: F811
    before = snapshot(site)
    run_full_check(site.publisher)
    assert snapshot(site) == before


def test_a_tags_pages_from_the_oldest_with_links_and_canonical_addresses(site, small_pages):  # noqa: F811
    site.add(1)  # untagged: not on the tag's pages
    for _ in range(7):
        site.add(1, tags=["Python"])  # article-2 … article-8
    python = tag_slug("Python")

    assert pages(site, "Python") == {
        "": ["article-8", "article-7", "article-6"],
        "1": ["article-4", "article-3", "article-2"],
        "2": ["article-7", "article-6", "article-5"],
    }
    assert head(site, "Python") == (f"/tag/{python}/", {"next": f"/tag/{python}/page/2/"})
    assert head(site, "Python", 2) == (
        f"/tag/{python}/page/2/",
        {"prev": f"/tag/{python}/", "next": f"/tag/{python}/page/1/"},
    )
    assert head(site, "Python", 1) == (f"/tag/{python}/page/1/", {"prev": f"/tag/{python}/page/2/"})
    assert_as_the_full_check_writes_them(site)


def test_a_publish_at_the_top_rewrites_no_older_page(site, small_pages):  # noqa: F811
    site.add(7, tags=["python"])
    first = folder(site, "python") / "page" / "1" / "index.html"
    inode = first.stat().st_ino

    site.add(1, tags=["python"])  # 8: no new full page

    assert first.stat().st_ino == inode
    site.add(1, tags=["python"])  # 9: a third full page; page 2's newer link changes
    assert first.stat().st_ino == inode
    assert pages(site, "python")["3"] == ["article-9", "article-8", "article-7"]
    assert head(site, "python", 2)[1]["prev"].endswith("/page/3/")
    assert_as_the_full_check_writes_them(site)


def test_edits_backdates_retags_and_deletes_move_the_pages(site, small_pages):  # noqa: F811
    articles = site.add(7, tags=["python"])

    site.edit(articles[0], title="Renamed")  # the oldest: page 1 only
    assert "Renamed" in (folder(site, "python") / "page/1/index.html").read_text()
    site.edit(articles[6], publish_at=site.base - timedelta(days=1))  # the newest, now oldest
    assert pages(site, "python")["1"] == ["article-2", "article-1", "article-7"]
    site.edit(articles[3], tags=["other"])  # off this tag: every later position moves
    assert pages(site, "python") == {
        "": ["article-6", "article-5", "article-3"],
        "1": ["article-2", "article-1", "article-7"],
        "2": ["article-6", "article-5", "article-3"],
    }
    site.delete(articles[4])  # five left: one full page, page/2/ removed
    assert pages(site, "python") == {
        "": ["article-6", "article-3", "article-2"],
        "1": ["article-2", "article-1", "article-7"],
    }
    assert_as_the_full_check_writes_them(site)


def test_author_pages_are_paginated_too(site, small_pages):  # noqa: F811
    site.add(4, byline="Ann Writer")

    assert pages(site, "Ann Writer", "author") == {
        "": ["article-4", "article-3", "article-2"],
        "1": ["article-3", "article-2", "article-1"],
    }
    assert_as_the_full_check_writes_them(site)


def test_a_pass_writes_tags_pages_until_its_budget_and_leaves_the_rest(site):  # noqa: F811
    """A burst touching many tags never holds back the front page: the pass stops after
    a tag once its budget is spent and leaves the other requests to the next pass."""
    site.add(1, tags=["a", "b", "c"])
    tags_refresh(Tag.objects.values_list("id", flat=True))  # every page of the three
    passes = []

    while not passes or not passes[-1]:
        passes.append(
            build.write_tag_pages(site_storage(), write=build.atomic_write, time_left=lambda: 0)
        )

    assert passes == [False, False, True]  # one tag a pass
    assert not TagRefresh.objects.exists()


def test_requests_past_those_a_pass_reads_ask_for_the_next_pass(site, monkeypatch):  # noqa: F811
    """A pass reads TAG_REFRESH_BATCH requests; with more waiting it says so (False),
    and the refresher sends the next pass at once, instead of leaving them to whatever
    asks for a pass next (the seed of bench/tags.py left 4,000 of 5,000 so)."""
    site.add(1, tags=["a", "b", "c"])
    tags_refresh(Tag.objects.values_list("id", flat=True))
    monkeypatch.setattr(build, "TAG_REFRESH_BATCH", 2)
    passes = []

    while not passes or not passes[-1]:
        passes.append(build.write_tag_pages(site_storage(), write=build.atomic_write))

    assert passes == [False, True]
    assert not TagRefresh.objects.exists()


def test_a_pass_takes_every_request_of_the_tags_it_writes(site, monkeypatch):  # noqa: F811
    """Each group of a burst asks for the tags it touched: a tag with requests from
    several groups is written once for them all, not again for each group's (a pass
    that took only the oldest TAG_REFRESH_BATCH requests wrote every tag of a burst of
    5,000 on 1,000 tags about ten times, docs/performance.md)."""
    site.add(1, tags=["a", "b", "c"])
    ids = list(Tag.objects.values_list("id", flat=True))
    TagRefresh.objects.all().delete()
    for _group in range(3):  # three groups, each touching the three tags
        tags_refresh(ids)
    monkeypatch.setattr(build, "TAG_REFRESH_BATCH", 2)
    written: list[int] = []
    write_tag = build.write_tag
    monkeypatch.setattr(
        build,
        "write_tag",
        lambda site, tag, **kw: written.append(tag["id"]) or write_tag(site, tag, **kw),
    )
    passes = []

    while not passes or not passes[-1]:
        passes.append(build.write_tag_pages(site_storage(), write=build.atomic_write))

    assert sorted(written) == sorted(ids)  # each tag once
    assert passes == [False, True]  # two tags, then the third
    assert not TagRefresh.objects.exists()


def test_requests_of_tags_deleted_outside_the_orm_do_not_end_the_pass(site, monkeypatch):  # noqa: F811
    """A tag deleted by SQL leaves its requests (no constraint ties them to it). When
    every request a pass read was such a tag's, the pass reads on rather than end as if
    none were left: a live tag's request after them waited for the catch-up."""
    site.add(1, tags=["gone", "kept"])
    gone = Tag.objects.get(name="gone").pk
    kept = Tag.objects.get(name="kept").pk
    TagRefresh.objects.all().delete()
    tags_refresh([gone])  # the oldest request
    tags_refresh([kept])
    Tag.objects.filter(pk=gone)._raw_delete(Tag.objects.db)  # no cascade: SQL's DELETE
    monkeypatch.setattr(build, "TAG_REFRESH_BATCH", 1)

    done = build.write_tag_pages(site_storage(), write=build.atomic_write)

    assert not (done and TagRefresh.objects.exists())  # "done" leaves none behind
    assert not TagRefresh.objects.exists()
    assert pages(site, "kept")[""]  # the live tag's page was written


def test_a_pass_reads_a_bounded_number_of_requests(site, monkeypatch):  # noqa: F811
    """Every request of a tag, but at most REQUESTS_READ_PER_TAG a tag it may name, the
    oldest first (their ids go in one DELETE, bounded in parameters); the rest are
    written by the passes after it, and none is left."""
    site.add(1, tags=["a", "b", "c"])
    ids = sorted(Tag.objects.values_list("id", flat=True))
    TagRefresh.objects.all().delete()
    for _group in range(5):
        tags_refresh(ids)
    monkeypatch.setattr(site_selectors, "REQUESTS_READ_PER_TAG", 2)

    tags = site_selectors.tag_refresh_requests(2)

    assert [tag["id"] for tag in tags] == ids[:2]
    assert sum(len(tag["requests"]) for tag in tags) == 4  # of the 10 of these two tags
    monkeypatch.setattr(build, "TAG_REFRESH_BATCH", 2)
    for _pass in range(20):
        if build.write_tag_pages(site_storage(), write=build.atomic_write):
            break
    assert not TagRefresh.objects.exists()


def test_a_passs_tags_are_written_together_each_exactly(site, monkeypatch):  # noqa: F811
    """A pass reads its tags' listings a few tags at a time (one statement for their
    newest entries) and writes their documents together (SiteStorage.write_many): each
    tag's page, feed and archive pages are what the check of the installation expects
    of that tag alone, and the documents went out in one write per chunk of tags."""
    monkeypatch.setattr(build, "TAG_READ_CHUNK", 2)
    monkeypatch.setattr(build, "TAG_WRITE_CHUNK", 2)
    for n in range(5):
        site.add(2, tags=[f"topic {n}", f"topic {n + 1}", "common"])
    tags_refresh(Tag.objects.values_list("id", flat=True))  # every page of the 7 tags
    storage = site_storage()
    writes: list[int] = []
    write_many = type(storage).write_many
    monkeypatch.setattr(
        type(storage),
        "write_many",
        lambda self, items: writes.append(len(items)) or write_many(self, items),
    )

    assert build.write_tag_pages(storage, write=build.atomic_write)

    assert len(writes) == 4  # 7 tags, 2 a write: 2, 2, 2, 1
    assert sum(writes) == 2 * Tag.objects.count()  # each tag's page and feed
    assert check._view_problems(storage) == []
    assert not TagRefresh.objects.exists()


def test_tags_pages_wait_while_publishes_are_due_then_are_written(site, monkeypatch, settings):  # noqa: F811
    """While publish work is due (a burst draining: here a row another worker holds), a
    pass gives the tags' pages a short slice (BUSY_TAG_SECONDS; here one tag) and wants
    a pass within the backlog's interval for the rest, not one at once. Once nothing is
    due, the next pass writes every tag it put off, exactly: none is lost."""
    monkeypatch.setattr(build, "BUSY_TAG_SECONDS", 0)
    held = Article(title="Held", slug="held", body="Held.", publish_at=site.base)
    held.full_clean()
    held.save()
    Article.objects.filter(pk=held.pk).update(
        lease_expires_at=timezone.now() + timedelta(minutes=5)
    )

    site.add(1, tags=["a", "b", "c"])  # its pass runs while `held` is due

    assert [tagged_page(site, name) for name in "abc"] == [["article-1"], None, None]
    assert len(set(TagRefresh.objects.values_list("tag", flat=True))) == 2
    row = Refresher.objects.get(pk=1)
    later = timezone.now() + timedelta(seconds=settings.PUBLISH_REFRESH_BACKLOG_INTERVAL / 2)
    assert row.wanted and row.deferred_until > later  # the backlog's pass, not one at once

    Article.objects.filter(pk=held.pk).update(lease_expires_at=None)
    site.attempt(held)  # the burst's last publish: its pass finds nothing due

    assert [tagged_page(site, name) for name in "abc"] == [["article-1"]] * 3
    assert not TagRefresh.objects.exists()
    assert check._view_problems(site_storage()) == []


def tagged_page(site: Site, name: str) -> list[str] | None:  # noqa: F811
    page = folder(site, name) / "index.html"
    return read_listing(page).slugs if page.exists() else None


def test_a_pass_overtaken_before_its_tags_documents_writes_none_of_them(site):  # noqa: F811
    """The documents a pass writes together are fenced as one write: a pass whose lease
    a newer pass took writes none of them (blogpublish.site.fenced)."""
    site.add(1, tags=["a"])
    rows = Refresher.objects.filter(pk=1)
    rows.update(lease_expires_at=timezone.now() + timedelta(minutes=1))
    fence = Fence(rows, rows.get().passes, fields=FIELDS)
    rows.update(passes=F("passes") + 1)  # a newer pass's claim
    fenced = FencedSite(site_storage(), fence)
    page = folder(site, "a") / "index.html"
    before = page.read_bytes()

    try:
        with pytest.raises(Overtaken):
            fenced.write_many([("tag/a/index.html", "stale"), ("tag/b/index.html", "stale")])
    finally:
        fence.close()
        rows.update(lease_expires_at=None)  # as the newer pass lets go (a worker waits on it)

    assert page.read_bytes() == before and not folder(site, "b").exists()


def test_a_respelled_tag_is_named_so_on_every_page(site, small_pages):  # noqa: F811
    """A newer article spells the tag anew: every page of it, archive pages included,
    names it so (not only those from the publish's date), as the full check writes them."""
    site.add(7, tags=["javascript"])

    site.add(1, tags=["JavaScript"])

    for number in (None, 1, 2):
        html = folder(site, "javascript") / (f"page/{number}/" if number else "") / "index.html"
        assert '<span class="meta">JavaScript' in html.read_text(), number
    assert Tag.objects.get().name == "JavaScript"
    assert_as_the_full_check_writes_them(site)


def test_past_a_tags_end_every_page_is_removed_and_a_check_names_them(site, small_pages):  # noqa: F811
    """restore_check (no --repair) writes nothing: it removed a tag's archive pages past
    the end instead of naming them. And only the page right after the last full one was
    looked for, so one past a gap (a removal cut short, a bucket restored over) stayed
    served for good (a review's findings)."""
    site.add(4, tags=["python"])  # one full page
    past = [folder(site, "python") / "page" / n / "index.html" for n in ("3", "7")]
    for page in past:
        page.parent.mkdir(parents=True)
        page.write_text("<p>an archive page from when the tag was longer</p>")

    problems = check.installation_check(site_storage()).problems

    assert all(page.exists() for page in past)
    for n in ("3", "7"):
        assert f"the archive page tag/{tag_slug('python')}/page/{n}/ is past the end" in problems
    run_full_check(site.publisher)
    assert not any(page.exists() for page in past)
    assert pages(site, "python").keys() == {"", "1"}
