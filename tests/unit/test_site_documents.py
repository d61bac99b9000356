"""The shared documents survive an entry they cannot carry (issue 8, item 1): pure
functions, fed Entry objects directly as the refresher reads them."""

from __future__ import annotations

import dataclasses
import uuid
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import feedparser
import pytest

from blogpublish.rendering import MarkdownTooLargeError
from blogpublish.site import build, documents
from blogpublish.site.selectors import Entry, Neighbours

MOMENT = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
# An article page's neighbours, given: no database read.
ALONE = Neighbours(None, None)


def entry(n: int, *, title: str = "", head: str = "", slug: str = "") -> Entry:
    return Entry(
        id=n,
        uid=uuid.UUID(int=n),
        title=title or f"Article {n}",
        slug=slug or f"article-{n}",
        publish_at=MOMENT - timedelta(days=n),
        published_at=MOMENT,
        head=head or f"Body of article {n}.",
    )


def parsed_feed(data: bytes):
    feed = feedparser.parse(data)
    assert feed.bozo == 0, feed.get("bozo_exception")
    return feed


# Characters XML 1.0 cannot carry, as a row written past validation may hold them.
UNSERIALISABLE = [
    pytest.param("Hello\x01 world", id="C0 control"),
    pytest.param("Hello\x00 world", id="NUL"),
    pytest.param("Hello\ufffe world", id="U+FFFE"),
    pytest.param("Hello\uffff world", id="U+FFFF"),
    pytest.param("Hello\ud800 world", id="lone surrogate"),
]


@pytest.mark.parametrize("bad", UNSERIALISABLE)
def test_feed__bad_characters_are_stripped_and_every_entry_stays(bad):
    problems: list[documents.EntryProblem] = []
    entries = [entry(1), entry(2, title=bad, head=bad), entry(3)]

    feed = parsed_feed(documents.atom_feed(entries, report=problems.append))

    assert [e.title for e in feed.entries] == ["Article 1", "Hello world", "Article 3"]
    assert feed.entries[1].summary == "Hello world"
    assert {(p.entry.id, p.left_out) for p in problems} == {(2, False)}
    assert "at position 6" in problems[0].reason


@pytest.mark.parametrize("bad", UNSERIALISABLE)
def test_listing_and_sitemap__bad_characters_are_stripped(bad):
    problems: list[documents.EntryProblem] = []
    entries = [entry(1), entry(2, title=bad, head=bad)]

    front = documents.listing_page(
        entries, page=None, newer_href="", older_href="", report=problems.append
    )
    chunk = documents.sitemap(entries, report=problems.append)

    assert "Hello world" in front and bad not in front
    assert len(ET.fromstring(chunk.encode("utf-8"))) == 2
    assert {p.entry.id for p in problems} == {2}


def test_feed__an_entry_that_cannot_be_built_is_left_out_and_the_rest_is_written(monkeypatch):
    """No Markdown fails to render any more (issue 20), so the renderer's failure is
    made for one head; the rest is the real thing."""
    real = documents.plain_excerpt

    def excerpt(text: str) -> str:
        if text == "UNRENDERABLE":
            raise MarkdownTooLargeError("Not rendered: made to fail by the test.")
        return real(text)

    monkeypatch.setattr(documents, "plain_excerpt", excerpt)
    problems: list[documents.EntryProblem] = []
    entries = [entry(1), entry(2, head="UNRENDERABLE"), entry(3)]

    feed = parsed_feed(documents.atom_feed(entries, report=problems.append))
    front = documents.listing_page(
        entries, page=None, newer_href="", older_href="", report=problems.append
    )

    assert [e.title for e in feed.entries] == ["Article 1", "Article 3"]
    assert "Article 1" in front and "Article 2" not in front and "Article 3" in front
    assert [(p.entry.id, p.document, p.left_out) for p in problems] == [
        (2, "the feed", True),
        (2, "the front page", True),
    ]
    assert "made to fail by the test" in problems[0].reason


def test_article_page__control_characters_are_stripped():
    article = SimpleNamespace(
        title="Bad\x01 title", slug="bad", body="Hello\x01 world\x0b.", publish_at=MOMENT
    )

    page = documents.article_page(article, around=ALONE)

    assert "Hello world." in page and "Bad title" in page
    assert not any(ord(ch) < 32 and ch not in "\t\n\r" for ch in page)


def test_pages_leave_out_what_html_forbids_from_rows_saved_before_it_was_refused():
    """DEL, C1 controls and noncharacters are XML 1.0 characters but HTML parse errors
    (the Nu checker's "forbidden code point"): a row saved before validation refused
    them still makes valid pages, the article's and the front page (a review's)."""
    forbidden = "\x7f\x85\x92\x9f\ufdd0\ufdef\U0001fffe\U0010ffff"
    article = SimpleNamespace(
        title=f"Old{forbidden} title",
        slug="old",
        body=f"It{forbidden}s a body.",
        publish_at=MOMENT,
        description=f"Said{forbidden} so.",
    )
    listed = entry(2, title=f"Listed{forbidden}", head=f"Its{forbidden} head.")

    pages = [
        documents.article_page(article, around=ALONE),
        documents.listing_page([listed], page=None, newer_href="", older_href=""),
        documents.listing_page([listed], page=2, newer_href="", older_href=""),
    ]

    for page in pages:
        assert not set(forbidden) & set(page)
    assert "Its a body." in pages[0] and "Old title" in pages[0]
    assert "Listed</a>" in pages[1] or ">Listed<" in pages[1]


def test_article_page__two_spellings_of_one_tag_are_one_link():
    """An article saved before "Machine learning" and "machine-learning" were one tag
    (migration 0026) may carry both: its page names the tag once."""
    article = SimpleNamespace(
        title="Tagged",
        slug="tagged",
        body="Text.",
        publish_at=MOMENT,
        tags=["Machine learning", "machine-learning", "Go"],
    )

    page = documents.article_page(article, around=ALONE, related=[])

    assert page.count('rel="tag" href="/tag/machine-learning/"') == 1
    assert page.count('property="article:tag"') == 2
    assert ">Machine learning</a>" in page and 'href="/tag/go/">Go</a>' in page


def test_article_page__the_sites_own_words_say_their_language_on_a_page_in_another():
    """An article in French on an English site: the page is French (`<html lang>`), and
    the site's words around it (the skip link, header, footer, the date, the reading
    time, "Tags:", the related heading, the previous/next labels) say they are English;
    the byline, a name, is the page's."""
    french = SimpleNamespace(
        title="Bonjour",
        slug="bonjour",
        body="Texte.",
        publish_at=MOMENT,
        language="fr",
        tags=["voyage"],
        byline="Zoé",
    )
    related = [entry(2, title="Autre")]
    around = Neighbours(entry(3), entry(4))

    page = documents.article_page(french, around=around, related=related)

    assert '<html lang="fr">' in page
    for part in (
        '<a class="skip" lang="en"',
        '<header class="site" aria-label="Site" lang="en">',
        '<footer class="site" aria-label="Site links" lang="en">',
        '<time datetime="2025-03-01T12:00:00+00:00" lang="en">',
        '<span lang="en">1 min read</span>',
        '<span lang="en">Tags:</span>',
        '<h2 id="related-heading" lang="en">Related articles</h2>',
        '<span class="meta" lang="en">← Previous</span>',
        '<span class="meta" lang="en">Next →</span>',
    ):
        assert part in page, part
    assert '<p class="meta"><time' in page and ">Zoé</a>" in page
    english = documents.article_page(
        SimpleNamespace(**{**vars(french), "language": "EN"}), around=around, related=related
    )
    assert '<html lang="EN">' in english and ' lang="en"' not in english


def test_article_page__a_language_written_right_to_left_turns_the_page():
    """Arabic on an English site: the page is right to left, the site's words left to
    right; titles of other articles take their own direction (dir="auto", <bdi>)."""
    arabic = SimpleNamespace(
        title="مرحبا", slug="marhaba", body="نص عربي.", publish_at=MOMENT, language="ar"
    )
    around = Neighbours(entry(3, title="عنوان"), None)

    page = documents.article_page(arabic, around=around, related=[entry(2)])

    assert '<html lang="ar" dir="rtl">' in page
    assert '<header class="site" aria-label="Site" lang="en" dir="ltr">' in page
    assert "<bdi>عنوان</bdi>" in page and '<li dir="auto"><a href="/article-2/">' in page
    tags = ("he-IL", "az-Arab", "ku", "ur", "zh-Hant", "ar-EG-u-nu-latn", "en-u-nu-arab", "sdh")
    assert [documents.text_direction(t) for t in tags] == [
        "rtl",
        "rtl",
        "ltr",
        "rtl",
        "ltr",
        "rtl",
        "ltr",
        "rtl",
    ]
    # The individual languages of the macrolanguages (BCP 47 prefers `arz` to `ar-arz`):
    # Egyptian and Moroccan Arabic, Iranian Persian, Eastern Yiddish, Southern Pashto.
    assert {documents.text_direction(t) for t in ("arz", "ary", "pes", "ydd", "pbt")} == {"rtl"}


def test_tag_feed__a_name_saved_past_validation_is_stripped_not_fatal():
    """A tag's spelling with a control character (a row written past validation): its
    feed is written, the character stripped; it used to fail the whole pass."""
    feed = documents.tag_feed(documents.Term("tag", "zz\x01", "zz"), [entry(1)])

    assert parsed_feed(feed).feed.title.endswith(": zz")


def test_shown_name__a_spelling_longer_than_the_tags_row_is_not_taken():
    """A spelling saved past validation whose key is the tag's (runs of spaces fold)
    but longer than Tag.name's column became the tag's shown name, and every pass's
    rename of the row failed on PostgreSQL (a review's finding): the row's is kept."""
    long = "machine" + " " * 300 + "learning"
    newest = dataclasses.replace(entry(1), tags=(long,))
    tag = {"kind": "tag", "name": "machine learning"}

    assert build.shown_name(tag, [newest]) == "machine learning"
    respelled = dataclasses.replace(entry(1), tags=("Machine  Learning",))
    assert build.shown_name(tag, [respelled]) == "Machine  Learning"


def test_sanitised_html__a_link_without_its_address_keeps_no_rel_and_an_image_has_alt():
    """What the Nu checker refuses: `rel` on an `<a>` the sanitiser took the `href` of
    (javascript:), and an `<img>` without `alt` (raw HTML)."""
    page = documents.article_page(
        SimpleNamespace(
            title="Links",
            slug="links",
            body='[bad](javascript:alert(1)) [good](https://example.com/)\n\n<img src="x.png">',
            publish_at=MOMENT,
        ),
        around=ALONE,
        related=[],
    )

    assert "<a>bad</a>" in page
    assert '<a href="https://example.com/" rel="noopener noreferrer">good</a>' in page
    assert '<img src="x.png" alt="" loading="lazy" decoding="async">' in page


def test_excerpt__a_paragraphs_direction_override_stays_in_it():
    from blogpublish.rendering import plain_excerpt

    assert plain_excerpt("\u202eFirst para\n\nSecond para.") == "First para Second para."


def test_character_references_to_controls_in_valid_markdown_are_stripped_silently():
    # Found by the fuzz test: "&#1;" is valid Markdown (nothing XML refuses is stored),
    # and the HTML sanitiser decodes it to U+0001 in the excerpt and the page.
    problems: list[documents.EntryProblem] = []
    entries = [entry(1, head="Hello &#1; world &#xFFFE; &#1")]

    feed = parsed_feed(documents.atom_feed(entries, report=problems.append))
    page = documents.article_page(
        SimpleNamespace(title="T", slug="t", body=entries[0].head, publish_at=MOMENT),
        around=ALONE,
    )

    assert feed.entries[0].summary.startswith("Hello")
    assert problems == []  # not the writer's doing: no "saved past validation" alert
    assert "\x01" not in page


def test_a_moved_pages_address_is_read_back_and_only_a_path_of_this_site():
    from blogpublish.site.documents import moved_href

    def page(href: str) -> bytes:
        return f'<!doctype html>\n<meta name="blogpublish-moved" content="{href}">'.encode()

    assert moved_href(page("/new-address/")) == "/new-address/"
    assert moved_href(page("/%E4%BD%A0%E5%A5%BD/")) == "/%E4%BD%A0%E5%A5%BD/"
    assert moved_href(page("/a/?x=1&amp;y=2")) == "/a/?x=1&y=2"
    for elsewhere in ("//evil.example/", "https://evil.example/", "/\\evil.example/", ""):
        assert moved_href(page(elsewhere)) is None, elsewhere
    assert moved_href(b"<!doctype html><title>A live page</title>") is None
    assert moved_href(b" " * 600 + page("/late/")) is None  # past the head: not a moved page


def test_an_empty_feed_says_a_fixed_time():
    """Django's `updated` of a feed without entries is now: a site with no live article
    (or a tag whose last went) had a feed that changed every second, rewritten by every
    pass, and restore_check never called the site whole (a review's finding)."""
    updated = parsed_feed(documents.atom_feed([])).feed.updated

    assert updated.startswith("1970-01-01T00:00:00")
    assert parsed_feed(documents.atom_feed([entry(1)])).feed.updated.startswith("2025-03-01")


def test_article_page__its_mark_is_the_stored_contents_also_for_a_language_it_does_not_show():
    """A language stored before LANGUAGE_RE was narrowed ("english" passed it then) is
    shown as none; the page's content mark is still the hash of what is stored, the
    article's own, or the full check takes the page for stale and writes it for ever."""
    from publishing.models import content_hash_of

    old = SimpleNamespace(
        title="Old", slug="old", body="Text.", publish_at=MOMENT, language="english"
    )
    page = documents.article_page(old, around=ALONE, related=[])

    assert '<html lang="en">' in page  # the site's language shown
    stored = content_hash_of(
        title="Old", slug="old", body="Text.", publish_at=MOMENT, language="english"
    )
    assert documents.page_content_hash(page.encode()[: documents.CONTENT_MARK_WITHIN]) == stored
