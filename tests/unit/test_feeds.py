"""The full feeds (issue 21, item 2): Atom entries carry the whole sanitised article as
`<content type="html">`, the byline as author, the tags as categories, and validate
against RFC 4287's RELAX NG schema; the JSON Feed beside it carries the same and
validates against its JSON Schema (tests/schemas/README.md says where each is from)."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import feedparser
import jsonschema
import pytest
from lxml import etree
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT4, DRAFT7

from blogpublish.site import documents
from blogpublish.site.selectors import Entry

SCHEMAS = Path(__file__).resolve().parents[1] / "schemas"
ATOM = "{http://www.w3.org/2005/Atom}"
MOMENT = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
IMAGE = "media/" + "b" * 64 + ".png"


def entry(n: int, **fields) -> Entry:
    body = fields.pop("body", f"Body of *article {n}*.\n\n<script>alert(1)</script>")
    return Entry(
        id=n,
        uid=uuid.UUID(int=n),
        title=fields.pop("title", f"Article {n}"),
        slug=f"article-{n}",
        publish_at=MOMENT - timedelta(days=n),
        published_at=MOMENT,
        body=body,
        published_hash=f"{n:064x}",
        **fields,
    )


ENTRIES = [
    entry(1, byline="Ann Writer", tags=("python", "数据库"), description="What it says."),
    entry(2, title="你好，世界", language="zh-Hans", body=f"Hi.\n\n![pic](/{IMAGE})"),
    entry(3),  # no byline: the feed's author covers it
]


def atom_schema() -> etree.RelaxNG:
    return etree.RelaxNG(etree.parse(str(SCHEMAS / "atom.rng")))


def json_feed_validator() -> jsonschema.Validator:
    feed = json.loads((SCHEMAS / "feed.json").read_text(encoding="utf-8"))
    feed_1 = json.loads((SCHEMAS / "feed-1.json").read_text(encoding="utf-8"))
    registry = Registry().with_resources(
        [
            ("https://json.schemastore.org/feed-1", DRAFT4.create_resource(feed_1)),
            ("https://json.schemastore.org/feed.json", Resource(feed, DRAFT7)),
        ]
    )
    return jsonschema.Draft7Validator(
        feed, registry=registry, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER
    )


def test_atom_feed__valid_by_rfc_4287s_relax_ng_schema(settings):
    settings.FEED_FULL_CONTENT = True
    schema = atom_schema()

    feed = etree.fromstring(documents.atom_feed(ENTRIES))

    assert schema.validate(feed), schema.error_log
    # The schema's Schematron rules, which RELAX NG validators skip: an author for every
    # entry (the feed's here), and an alternate link or content for every entry.
    assert feed.find(f"{ATOM}author/{ATOM}name") is not None
    for item in feed.iter(f"{ATOM}entry"):
        assert item.find(f"{ATOM}link[@rel='alternate']") is not None


def test_atom_schema_refuses_what_rfc_4287_refuses():
    """The schema is not a pass-all: an entry without its id is refused."""
    feed = etree.fromstring(documents.atom_feed(ENTRIES[:1]))
    feed.find(f"{ATOM}entry").remove(feed.find(f"{ATOM}entry/{ATOM}id"))

    assert not atom_schema().validate(feed)


def test_atom_feed__whole_sanitised_content_byline_and_categories(settings):
    settings.FEED_FULL_CONTENT = True

    parsed = feedparser.parse(documents.atom_feed(ENTRIES))

    first, second, third = parsed.entries
    assert first.content[0].type == "text/html"
    assert "<em>article 1</em>" in first.content[0].value
    assert "<script" not in first.content[0].value  # the page's sanitiser, not the raw body
    assert first.summary == "What it says."  # the description, when there is one
    assert first.author == "Ann Writer"
    assert [t.term for t in first.tags] == ["python", "数据库"]
    assert second.title == "你好，世界"
    assert "author" not in third and parsed.feed.author == settings.SITE_TITLE  # the site
    raw = documents.atom_feed(ENTRIES).decode()
    assert '<entry xml:lang="zh-Hans">' in raw  # only where it differs from the feed's
    assert raw.count("xml:lang=") == 2


def test_atom_feed__summaries_only_when_the_setting_says_so(settings):
    settings.FEED_FULL_CONTENT = False

    raw = documents.atom_feed(ENTRIES)

    assert b"<content" not in raw
    assert atom_schema().validate(etree.fromstring(raw))
    assert feedparser.parse(raw).entries[2].summary == "Body of article 3."


@pytest.mark.parametrize("full", [True, False])
def test_json_feed__valid_by_its_json_schema(settings, full):
    settings.FEED_FULL_CONTENT = full

    feed = json.loads(documents.json_feed(ENTRIES))

    json_feed_validator().validate(feed)
    assert feed["version"] == "https://jsonfeed.org/version/1.1"
    first, second, third = feed["items"]
    assert first["id"] == f"urn:uuid:{uuid.UUID(int=1)}"  # the Atom entry's id
    assert first["authors"] == [{"name": "Ann Writer"}]
    assert first["tags"] == ["python", "数据库"]
    assert second["language"] == "zh-Hans"
    assert second["image"].endswith(IMAGE)
    assert "authors" not in third
    if full:
        assert "<em>article 1</em>" in first["content_html"]
        assert "<script" not in first["content_html"]
    else:
        assert "content_html" not in first and first["content_text"] == "What it says."


def test_json_feed_schema_refuses_an_item_without_content():
    feed = json.loads(documents.json_feed(ENTRIES))
    del feed["items"][0]["content_html"]

    with pytest.raises(jsonschema.ValidationError):
        json_feed_validator().validate(feed)


def test_every_page_announces_both_feeds():
    page = documents.listing_page([], page=None, newer_href="", older_href="")

    assert 'type="application/atom+xml"' in page
    assert '<link rel="alternate" type="application/feed+json"' in page


def test_a_language_written_past_validation_is_left_out_and_the_feed_stays_readable(settings):
    """A control character in a stored language (an `.update()` skips validation) made
    feed.xml unreadable: a value that is not a language tag is none."""
    broken = entry(9, language="en\x01")
    raw = documents.atom_feed([broken, *ENTRIES])
    feed = etree.fromstring(raw)  # parses: well-formed XML
    assert "\x01" not in raw.decode()
    assert atom_schema().validate(feed)
    data = json.loads(documents.json_feed([broken]))
    assert "language" not in data["items"][0]


def test_the_feeds_content_cache_counts_the_markdown_it_keeps(monkeypatch):
    """Its keys hold each body: uncounted, an article past CONTENT_MAX_CHARS (no HTML
    kept) was never dropped, and every version of one stayed (a review's: 40 of them,
    19.6 MB, past a 16 MB cache)."""
    from collections import OrderedDict

    monkeypatch.setattr(documents, "_contents", OrderedDict())
    monkeypatch.setattr(documents, "_contents_chars", 0)
    monkeypatch.setattr(documents, "CONTENT_CACHE_CHARS", 1_000_000)
    monkeypatch.setattr(documents, "CONTENT_MAX_CHARS", 1_000)  # past it: no HTML kept
    body = "Some words. " * 20_000  # 240,000 characters

    for version in range(20):
        assert documents._content_html(f"hash{version}", "https://e.com/a/", body) is None

    assert sum(len(key[2]) for key in documents._contents) <= 1_000_000
    assert len(documents._contents) == 4
