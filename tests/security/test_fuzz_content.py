"""Fuzz (issue 8): arbitrary Unicode and Markdown-shaped text through validation →
rendering → the shared documents. Whatever validation accepts renders within a bound
and is carried whole by every document; whatever it refuses (a row written past
validation) still never breaks a document: the feed and the sitemap stay well-formed.

Pure functions and Entry objects built from the text: no database."""

from __future__ import annotations

import time
import uuid
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from types import SimpleNamespace

import feedparser
from django.core.exceptions import ValidationError
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from blogpublish.site import documents
from blogpublish.site.selectors import EXCERPT_SOURCE_CHARS, Entry, Neighbours
from publishing.models import Article
from publishing.text_limits import amplification_problem, first_xml_illegal
from tests.support.site import without_json_ld

MOMENT = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
# A generous bound for one accepted article's page (the slowest near-limit inputs
# measured render in 0.35 s); a correctness bound, not a benchmark.
RENDER_BOUND_S = 2.0

TOKENS = [
    "[", "]", "(", ")", "](", "![", "[^1]", "[^1]: note", "*", "_", "**", "__", "*_",
    ">", "> ", "* ", "- ", "1. ", "#", "# ", "`", "```", "~~~", "    ", "\t", " ", "\n",
    "\n\n", "|", "---", "\\", "<", ">", "&", "&amp;", "&#1;", "&#xFFFE;", "<script>",
    "</script>", '<div markdown="1">', "</div>", "<!--", "-->", "http://example.com",
    "<http://example.com>", "word", "\x00", "\x01", "\x0b", "\x1f", "\x7f", "\x85",
    "\ufffe", "\uffff", "\ud800", "\udfff", "\ufdd0", "😀", "👩‍👩‍👧", "你好", "日本語",
    "\u202e", "\u200b", "\r", "\r\n",
]  # fmt: skip


def markdown_of(tokens: list[str]) -> st.SearchStrategy[str]:
    token = st.sampled_from(tokens)
    # Long runs of one token reach the limits: nesting, emphasis runs, open brackets.
    run = st.tuples(token, st.integers(1, 3000)).map(lambda pair: pair[0] * pair[1])
    pieces = st.one_of(token, token, run, st.text(max_size=8))
    return st.lists(pieces, min_size=1, max_size=60).map("".join)


markdown_like = markdown_of(TOKENS)
# Half the bodies without the characters XML refuses, so that most examples get past
# validation and go all the way.
xml_markdown_like = markdown_of([t for t in TOKENS if first_xml_illegal(t) is None])
any_text = st.one_of(st.text(max_size=300), markdown_like)
body_text = st.one_of(any_text, xml_markdown_like, xml_markdown_like, xml_markdown_like)
# Titles mostly of the kind validation accepts, so that most examples go all the way.
plain_title = st.text(
    st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=120
).filter(str.strip)


def validated(title: str, body: str) -> Article | None:
    """The article as validation leaves it, or None if it refuses it (no DB: the
    slug's uniqueness is another matter)."""
    article = Article(title=title, slug="fuzz", body=body, publish_at=MOMENT)
    try:
        article.clean_fields(exclude={"slug"})
    except ValidationError as exc:
        event(f"refused: {sorted(exc.message_dict)}")
        return None
    # What Article.clean() refuses besides the slug's checks (which read the database):
    # a body that would render many times its size (a rehearsal's example: 5,001
    # footnote references passed clean_fields, and the render refused them).
    if body and amplification_problem(body):
        event("refused: ['body'] (amplification)")
        return None
    return article


def entries_with(title: str, body: str) -> list[Entry]:
    def entry(n: int, title: str, head: str) -> Entry:
        return Entry(
            id=n,
            uid=uuid.UUID(int=n),
            title=title,
            slug=f"article-{n}",
            publish_at=MOMENT,
            published_at=MOMENT,
            head=head,
        )

    return [
        entry(1, "Before", "A *normal* article."),
        entry(2, title, body[:EXCERPT_SOURCE_CHARS]),
        entry(3, "After", "Another [one](https://example.com)."),
    ]


def shared_documents(entries: list[Entry]) -> tuple[list[documents.EntryProblem], list[int]]:
    """Every shared document of these entries; the problems reported, and the ids
    of the feed's entries. Asserts the XML documents are well-formed."""
    problems: list[documents.EntryProblem] = []
    documents.listing_page(entries, page=None, newer_href="", older_href="", report=problems.append)
    documents.listing_page(entries, page=1, newer_href="", older_href="", report=problems.append)
    feed_xml = documents.atom_feed(entries, report=problems.append)
    sitemap_xml = documents.sitemap(entries, report=problems.append)

    ET.fromstring(feed_xml)
    ET.fromstring(sitemap_xml.encode("utf-8"))
    feed = feedparser.parse(feed_xml)
    assert feed.bozo == 0, feed.get("bozo_exception")
    ids = [int(item.id.rsplit("-", 1)[-1], 16) for item in feed.entries]
    return problems, ids


@settings(
    max_examples=300,
    deadline=None,  # the bound is checked below, on the render alone
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(title=st.one_of(plain_title, plain_title, plain_title, any_text), body=body_text)
def test_fuzz__validation_rendering_and_shared_documents(title, body):
    article = validated(title, body)
    event("accepted" if article is not None else "refused")
    if article is not None:
        started = time.perf_counter()
        page = documents.article_page(
            SimpleNamespace(title=article.title, slug="fuzz", body=article.body, publish_at=MOMENT),
            around=Neighbours(None, None),  # no database here
        )
        assert time.perf_counter() - started < RENDER_BOUND_S
        assert "<script" not in without_json_ld(page).lower()
        problems, ids = shared_documents(entries_with(article.title, article.body))
        # Accepted content is carried whole: nothing repaired, nothing left out.
        assert problems == []
        assert ids == [1, 2, 3]
    else:
        # Refused, but imagine it got past validation: the other entries and the
        # documents' well-formedness survive it.
        _problems, ids = shared_documents(entries_with(title, body))
        assert {1, 3} <= set(ids)
