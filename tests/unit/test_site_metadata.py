"""What a shared link, a search engine and a screen reader find on every page (issue 21,
item 1, in part): a description, OpenGraph and Twitter card tags, JSON-LD on articles,
canonical links on every page, a skip link, a heading on the front page, robots.txt."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from html.parser import HTMLParser
from types import SimpleNamespace

import pytest

from blogpublish.site import documents, selectors

MOMENT = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
IMAGE = "media/" + "a" * 64 + ".png"


class Head(HTMLParser):
    """The <meta>, <link> and ld+json blocks of a page."""

    def __init__(self):
        super().__init__()
        self.meta: dict[str, str] = {}
        self.links: dict[str, str] = {}
        self.ld: list[str] = []
        self._in_ld = False
        self.h1 = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "meta" and ("property" in a or "name" in a):
            self.meta[a.get("property") or a["name"]] = a.get("content", "")
        elif tag == "link":
            self.links[a["rel"]] = a.get("href", "")
        elif tag == "script" and a.get("type") == "application/ld+json":
            self._in_ld = True
        self.h1 += tag == "h1"

    def handle_endtag(self, tag):
        self._in_ld = self._in_ld and tag != "script"

    def handle_data(self, data):
        if self._in_ld:
            self.ld.append(data)


def head_of(html: str) -> Head:
    head = Head()
    head.feed(html)
    return head


def article(**fields):
    return SimpleNamespace(
        **{"title": "你好，世界", "slug": "hello", "publish_at": MOMENT, "body": "Hi.", **fields}
    )


# An article's page reads its images' copies (and neighbours) from the database.
@pytest.mark.django_db
def test_article_page__description_opengraph_twitter_and_canonical(settings):
    settings.SITE_URL = "https://blog.example.com/"
    body = f"First **paragraph** of the post.\n\n![a picture](/{IMAGE})"

    head = head_of(documents.article_page(article(body=body)))

    url = "https://blog.example.com/hello/"
    assert head.meta["description"] == "First paragraph of the post."
    assert head.meta["og:title"] == "你好，世界"
    assert head.meta["og:description"] == "First paragraph of the post."
    assert head.meta["og:url"] == head.links["canonical"] == url
    assert head.meta["og:type"] == "article"
    assert head.meta["og:image"] == f"https://blog.example.com/{IMAGE}"
    assert head.meta["twitter:card"] == "summary_large_image"
    assert head.meta["article:published_time"].startswith("2025-03-01")


# An article's page reads its images' copies (and neighbours) from the database.
@pytest.mark.django_db
def test_article_page__json_ld_is_a_blog_posting_no_title_can_break_out_of(settings):
    title = "</script><script>alert(1)</script> & more"

    page = documents.article_page(article(title=title))
    [ld] = head_of(page).ld

    data = json.loads(ld)
    assert data["@type"] == "BlogPosting" and data["headline"] == title
    assert "</script><script>" not in page
    assert "image" not in data  # no image in the body


def test_listing_pages__canonical_description_and_a_heading(settings):
    settings.SITE_URL = "https://blog.example.com/"
    front = documents.listing_page([], page=None, newer_href="", older_href="/page/1/")
    archive = documents.listing_page([], page=3, newer_href="/", older_href="/page/2/")

    assert head_of(front).links["canonical"] == "https://blog.example.com/"
    assert head_of(archive).links["canonical"] == "https://blog.example.com/page/3/"
    assert head_of(archive).meta["og:type"] == "website"
    assert head_of(front).meta["description"]
    assert head_of(front).h1 == 1 and head_of(archive).h1 == 1


def test_every_page_has_a_skip_link_to_its_content():
    page = documents.article_page(article(), around=selectors.Neighbours(None, None))

    assert re.search(r'<a class="skip" href="#content">', page)
    assert '<main id="content" aria-label="Content">' in page


def test_robots_txt_announces_the_sitemap(settings):
    settings.SITE_URL = "https://blog.example.com/news/"

    robots = documents.robots_txt()

    assert "User-agent: *" in robots
    assert "Sitemap: https://blog.example.com/news/sitemap.xml" in robots.splitlines()
