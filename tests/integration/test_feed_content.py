"""What the feeds carry, read as a feed reader reads it (issue 21, review): on the real
database, articles published in-process (`publish_pending`) and the shared views written
whole, on a site served under a path (`SITE_URL` https://example.com/blog). Every
address in an entry's content is absolute (a reader has no base to resolve `/blog/…` or
`#fn-1` against), in the site's Atom feed, its JSON Feed and a tag's and a byline's
feed, and the feeds stay valid."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import feedparser
import PIL.Image
import pytest
from django.db.models.signals import post_delete, post_save
from lxml import etree
from lxml import html as lxml_html

from blogpublish.desk import images
from blogpublish.rendering import plain_excerpt
from blogpublish.site import documents, look, selectors
from publishing.models import Article
from publishing.reader_fields import tag_slug
from publishing.services.catch_up import publish_pending
from publishing.services.refresh import shared_views_whole
from publishing.signals import article_deleted, article_saved
from tests.unit.test_feeds import atom_schema, json_feed_validator

pytestmark = pytest.mark.django_db(transaction=True)

SITE = "https://example.com/blog"
OTHER = "https://other.example/x#y"


@pytest.fixture
def site(tmp_path, settings):
    """A SITE_ROOT of the test's own under a path prefix; saves do not dispatch (the test
    publishes in-process, so no worker of the session takes them)."""
    settings.SITE_ROOT = tmp_path / "site"
    settings.SITE_URL = SITE
    settings.FEED_FULL_CONTENT = True
    settings.PUBLISH_REFRESH_INTERVAL = 0
    settings.PUBLISH_PUBLISHERS = ["blogpublish.site.StaticSitePublisher"]
    post_save.disconnect(sender=Article, dispatch_uid="publishing.article_saved")
    post_delete.disconnect(sender=Article, dispatch_uid="publishing.article_deleted")
    try:
        yield settings.SITE_ROOT
    finally:
        post_save.connect(article_saved, sender=Article, dispatch_uid="publishing.article_saved")
        post_delete.connect(
            article_deleted, sender=Article, dispatch_uid="publishing.article_deleted"
        )
        look.look.cache_clear()
        look.shared_look.cache_clear()


def publish(**fields) -> Article:
    article = Article(**fields)
    article.full_clean()
    article.save()
    publish_pending(limit=10, retry_in=lambda n: 1)
    assert shared_views_whole(full=True)
    article.refresh_from_db()
    assert article.published_hash == article.content_hash, article.last_error
    return article


def addresses(content: str) -> list[str]:
    """Every address a reader's client follows in an entry's HTML: each href and src,
    and each candidate of each srcset."""
    found = []
    for element in lxml_html.fragment_fromstring(content, create_parent="div").iter():
        found += [element.get(name) for name in ("href", "src") if element.get(name) is not None]
        for candidate in (element.get("srcset") or "").split(","):
            if candidate.strip():
                found.append(candidate.split()[0])
    return found


def uploaded_image() -> str:
    data = io.BytesIO()
    PIL.Image.new("RGB", (1600, 900), (10, 120, 200)).save(data, "PNG")
    return images.store(data.getvalue(), name="wide.png").path  # media/<sha256>.png


def feeds(root: Path, slug: str, byline: str, tag: str) -> dict[str, str]:
    """The article's content in each feed that carries it, by feed."""
    contents = {}
    for name in (
        "feed.xml",
        f"tag/{tag_slug(tag)}/feed.xml",
        f"author/{tag_slug(byline)}/feed.xml",
    ):
        document = (root / name).read_bytes()
        assert atom_schema().validate(etree.fromstring(document)), name
        parsed = feedparser.parse(document)
        assert parsed.bozo == 0, parsed.get("bozo_exception")
        (entry,) = [e for e in parsed.entries if e.link == f"{SITE}/{slug}/"]
        contents[name] = entry.content[0].value
    data = json.loads((root / "feed.json").read_text(encoding="utf-8"))
    json_feed_validator().validate(data)
    (item,) = [i for i in data["items"] if i["url"] == f"{SITE}/{slug}/"]
    contents["feed.json"] = item["content_html"]
    return contents


def test_feed_content__every_address_absolute_in_every_feed(site):
    image = uploaded_image()
    publish(title="Other", slug="other", body="The other one.")
    article = publish(
        title="Addresses",
        slug="addresses",
        byline="Ann Writer",
        tags=["Python"],
        body=(
            f"See [the other](/blog/other/), [a section](#later), [beside](notes/), "
            f"[elsewhere]({OTHER}) and [mail](mailto:ann@example.com).\n\n"
            f"![uploaded](/blog/{image}) and ![outside](https://cdn.example/p.png)\n\n"
            '<a href="/blog/raw/">raw HTML</a>\n\n'
            "A claim.[^1]\n\n"
            "## Later {#later}\n\n"
            "[^1]: The note.\n"
        ),
    )
    page = (site / "addresses" / "index.html").read_text(encoding="utf-8")
    assert f'srcset="/blog/{image[:-4]}' in page  # the page's own: root-relative, copies

    base = f"{SITE}/{article.slug}/"
    for name, content in feeds(site, article.slug, "Ann Writer", "Python").items():
        found = addresses(content)
        relative = [a for a in found if not re.match(r"(https://|mailto:)", a)]
        assert found and not relative, (name, relative)
        for expected in (
            f"{SITE}/other/",
            f"{base}#later",
            f"{base}notes/",
            OTHER,  # absolute: kept as it is
            "mailto:ann@example.com",
            f"{SITE}/{image}",
            "https://cdn.example/p.png",
            f"{SITE}/raw/",
            f"{base}#fn-1",  # the footnote's link, and its way back
            f"{base}#fnref-1",
        ):
            assert expected in found, (name, expected, found)


def test_feed_content__cached_per_page_address(site, settings):
    """The same live version seen under another SITE_URL (a process whose setting
    changed, or a test) is not served from the first address's cache line."""
    article = publish(title="Cached", slug="cached", body="A note.[^n]\n\n[^n]: Here.")
    entries = selectors.feed_entries(1)
    assert f"{SITE}/cached/#fn-n" in documents.json_feed(entries).decode()

    settings.SITE_URL = "https://example.org"
    moved = documents.json_feed(entries).decode()

    assert "https://example.org/cached/#fn-n" in moved and "example.com" not in moved
    assert article.published_hash == entries[0].published_hash


def test_feed_content__an_article_of_megabytes_of_html_carries_its_summary(site):
    """A valid body that renders to more than CONTENT_MAX_CHARS of HTML: its entries carry
    the summary, as with FEED_FULL_CONTENT off (a review's: fifty 1 MiB bodies made a
    31 MB feed, rendered again at every pass past the cache, holding SQLite's write lock
    for 20 s). The others keep their whole content."""
    publish(title="Big", slug="big", body="Opening line.\n\n" + "[a](b)" * 100_000)
    publish(title="Small", slug="small", body="Whole *content*.")
    entries = selectors.feed_entries(2)

    atom = {e.link: e for e in feedparser.parse(documents.atom_feed(entries)).entries}
    items = {i["url"]: i for i in json.loads(documents.json_feed(entries))["items"]}

    assert "content" not in atom[f"{SITE}/big/"]
    assert atom[f"{SITE}/big/"].summary.startswith("Opening line.")
    assert "content_html" not in items[f"{SITE}/big/"]
    assert items[f"{SITE}/big/"]["content_text"].startswith("Opening line.")
    assert "<em>content</em>" in atom[f"{SITE}/small/"].content[0].value
    assert "<em>content</em>" in items[f"{SITE}/small/"]["content_html"]


def test_excerpts__references_defined_past_the_head_resolve_on_the_front_page_and_feeds(site):
    """The front page and the feeds make an article's excerpt from the first 2,000
    characters of its body (EXCERPT_SOURCE_CHARS); its footnote's and reference
    link's definitions, at the end, reach it, so it reads as the page's own
    description does (the excerpt of the whole body)."""
    filler = ("Filler words, one sentence after another. " * 20 + "\n\n") * 6
    publish(
        title="Long",
        slug="long",
        body=(
            f"We handle edge cases.[^1] Read [the guide][g].\n\n{filler}"
            '[g]: https://example.com/guide "The guide"\n\n[^1]: How we handle them.\n'
        ),
    )
    shown = "We handle edge cases. Read the guide. Filler words"

    front = (site / "index.html").read_text(encoding="utf-8")
    (excerpt,) = re.findall(r"<p>(We handle[^<]*)</p>", front)
    page = (site / "long" / "index.html").read_text(encoding="utf-8")
    (description,) = re.findall(r'<meta name="description" content="([^"]*)">', page)
    (entry,) = feedparser.parse((site / "feed.xml").read_bytes()).entries
    (item,) = json.loads((site / "feed.json").read_text(encoding="utf-8"))["items"]

    for summary in (excerpt, description, entry.summary, item["summary"]):
        assert summary.startswith(shown) and "[" not in summary, summary
    assert excerpt == description == entry.summary == item["summary"]
    # The front page's own read, with no source kept yet (the feeds, written first,
    # kept it): the whole body read for it, the same excerpt.
    selectors._sources.clear()
    (head,) = [e.head for e in selectors.newest(1)]
    assert plain_excerpt(head) == excerpt
