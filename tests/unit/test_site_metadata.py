"""What a shared link, a search engine and a screen reader find on every page (issue 21,
item 1, in part): a description, OpenGraph and Twitter card tags, JSON-LD on articles,
canonical links on every page, a skip link, a heading on the front page, robots.txt."""

from __future__ import annotations

import json
import re
import uuid
from datetime import UTC, datetime
from html.parser import HTMLParser
from types import SimpleNamespace

import pytest

from blogpublish.site import documents, selectors

# No neighbours: an article page without the database (a unit test).
ALONE = selectors.Neighbours(None, None)

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

    head = head_of(documents.article_page(article(body=body), around=ALONE))

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
def test_article_page__the_shared_image_is_the_first_one_shown(settings):
    """Not the first `media/<sha256>` the Markdown's text names: one in a code span, a
    link's address, another site's file of that name (a review: og:image, JSON-LD and
    the JSON Feed named a file the site does not have)."""
    settings.SITE_URL = "https://blog.example.com/blog"
    other = "media/" + "b" * 64 + ".jpg"
    body = (
        f"Uploads live at `/{other}`; see [this](/blog/{other}) and "
        f"![elsewhere](https://cdn.example.net/{other}).\n\n![shown](/blog/{IMAGE})"
    )

    head = head_of(documents.article_page(article(body=body), around=ALONE))

    assert head.meta["og:image"] == f"https://blog.example.com/blog/{IMAGE}"
    plain = head_of(documents.article_page(article(body=f"`{IMAGE}` only"), around=ALONE))
    assert "og:image" not in plain.meta


# An article's page reads its images' copies (and neighbours) from the database.
@pytest.mark.django_db
def test_article_page__json_ld_is_a_blog_posting_no_title_can_break_out_of(settings):
    title = "</script><script>alert(1)</script> & more"

    page = documents.article_page(article(title=title), around=ALONE)
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
    page = documents.article_page(article(), around=ALONE)

    assert re.search(r'<a class="skip" href="#content">', page)
    assert '<main id="content" aria-label="Content">' in page


def test_robots_txt_announces_the_sitemap(settings):
    settings.SITE_URL = "https://blog.example.com/news/"

    robots = documents.robots_txt()

    assert "User-agent: *" in robots
    assert "Sitemap: https://blog.example.com/news/sitemap.xml" in robots.splitlines()


def test_article_page__lang_byline_tags_and_description_of_the_article(settings):
    settings.SITE_LANGUAGE = "en"
    page = documents.article_page(
        article(
            language="zh-Hans",
            byline="王小明",
            tags=["数据库", "python"],
            description="A description, not the excerpt.",
        ),
        around=ALONE,
        related=[],
    )
    head = head_of(page)
    [ld] = head.ld

    assert page.startswith('<!doctype html>\n<html lang="zh-Hans">')
    assert head.meta["description"] == "A description, not the excerpt."
    assert head.meta["author"] == "王小明"
    assert json.loads(ld)["author"] == {"@type": "Person", "name": "王小明"}
    assert json.loads(ld)["keywords"] == ["数据库", "python"]
    assert json.loads(ld)["inLanguage"] == "zh-Hans"
    assert 'rel="author" href="/author/%E7%8E%8B%E5%B0%8F%E6%98%8E/">王小明</a>' in page
    assert 'rel="tag" href="/tag/%E6%95%B0%E6%8D%AE%E5%BA%93/">数据库</a>' in page


def test_article_page__related_articles_in_an_aside_that_the_check_can_leave_out():
    at = datetime(2025, 3, 1, tzinfo=UTC)
    related = [
        selectors.Entry(7, uuid.UUID(int=7), "<Seven> & co", "seven", at, at),
        selectors.Entry(8, uuid.UUID(int=8), "你好", "你好", at, at),
    ]
    page = documents.article_page(article(tags=["python"]), around=ALONE, related=related)

    [section] = documents.RELATED_SECTION.findall(page)
    assert '<h2 id="related-heading">Related articles</h2>' in section
    assert '<a href="/seven/">&lt;Seven&gt; &amp; co</a>' in section
    assert '<a href="/%E4%BD%A0%E5%A5%BD/">你好</a>' in section
    alone = documents.article_page(article(tags=["python"]), around=ALONE, related=[])
    assert "<aside" not in alone
    assert documents.without_related(page) == alone


def test_article_page__site_language_when_the_article_names_none(settings):
    settings.SITE_LANGUAGE = "fr"

    page = documents.article_page(article(), around=ALONE)

    assert '<html lang="fr">' in page
    assert "author" not in head_of(page).meta


def test_article_page__its_content_mark_covers_the_reader_fields():
    plain = documents.page_content_hash(documents.article_page(article(), around=ALONE).encode())
    bylined = documents.page_content_hash(
        documents.article_page(article(byline="Ann"), around=ALONE).encode()
    )

    assert plain and bylined and plain != bylined


def test_not_found_page_and_favicon(settings):
    settings.SITE_TITLE = "Ünïcode blog"

    page = documents.not_found_page()

    assert "<h1>Not found</h1>" in page
    assert head_of(page).meta["robots"] == "noindex"
    assert head_of(page).links["icon"].endswith("/favicon.svg")
    assert ">Ü</text>" in documents.favicon()
