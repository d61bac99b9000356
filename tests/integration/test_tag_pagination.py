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

from blogpublish.site import build, pagination
from blogpublish.storage import site_storage
from publishing.models import Tag, TagRefresh, tags_refresh
from publishing.reader_fields import tag_slug
from tests.integration.test_site_builder import Site, site  # noqa: F401  (the fixture)
from tests.support.site import read_listing

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
    site.publisher.reconcile()
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
