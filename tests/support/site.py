"""Reading SITE_ROOT as readers and crawlers do: the front page, the archive, the feed
(with feedparser), the sitemap (index, then chunks) and the page directories."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from html import unescape
from pathlib import Path
from urllib.parse import unquote, urlsplit

import feedparser

from publishing.validators import is_reserved_slug

ENTRY_RE = re.compile(r'<a class="title" href="([^"]+)">([^<]*)</a>')
OLDER_RE = re.compile(r'<a rel="next" href="([^"]+)">')
SITEMAP_NS = {"sm": "http://www.sitemaps.org/schemas/sitemap/0.9"}


def slug_of(url: str) -> str:
    """The slug in an article's address, percent-decoded: '/%E4%BD%A0/' → '你'."""
    return unquote(urlsplit(url).path.strip("/").rsplit("/", 1)[-1])


@dataclass
class Listing:
    slugs: list[str]  # in page order
    titles: list[str]
    older_href: str | None


def read_listing(path: Path) -> Listing:
    html = path.read_text(encoding="utf-8")
    entries = ENTRY_RE.findall(html)
    older = OLDER_RE.search(html)
    return Listing(
        slugs=[slug_of(href) for href, _ in entries],
        titles=[unescape(title) for _, title in entries],
        older_href=older[1] if older else None,
    )


def read_feed(root: Path):
    feed = feedparser.parse((root / "feed.xml").read_bytes())
    assert feed.bozo == 0, feed.get("bozo_exception")
    assert feed.version == "atom10"
    return feed


def read_sitemap(root: Path) -> dict[str, str]:
    """slug → lastmod, from sitemap.xml (an index) and every chunk it names."""
    index = ET.parse(root / "sitemap.xml").getroot()
    assert index.tag == "{http://www.sitemaps.org/schemas/sitemap/0.9}sitemapindex"
    urls: dict[str, str] = {}
    for loc in index.findall("sm:sitemap/sm:loc", SITEMAP_NS):
        chunk = ET.parse(root / urlsplit(loc.text).path.rsplit("/", 1)[-1]).getroot()
        for url in chunk.findall("sm:url", SITEMAP_NS):
            if url.find("sm:lastmod", SITEMAP_NS) is None:  # an empty site's front page
                assert len(index) == len(chunk) == 1, "only an empty site's chunk has it"
                continue
            slug = slug_of(url.find("sm:loc", SITEMAP_NS).text)
            assert slug not in urls, f"{slug} is in the sitemap twice"
            urls[slug] = url.find("sm:lastmod", SITEMAP_NS).text
    return urls


MOVED_RE = re.compile(r'<meta http-equiv="refresh" content="0; url=([^"]*)">')


def moved_pages(root: Path) -> dict[str, str]:
    """The former addresses under root: folder → the slug its page sends readers on to
    (none before the site's first page)."""
    found: dict[str, str] = {}
    if not root.is_dir():
        return found
    for p in root.iterdir():
        if p.is_dir() and not is_reserved_slug(p.name) and (p / "index.html").is_file():
            try:
                text = (p / "index.html").read_text(encoding="utf-8")
            except FileNotFoundError:  # removed since it was listed: a site still changing
                continue
            if match := MOVED_RE.search(text):
                found[p.name] = slug_of(unescape(match[1]))
    return found


def page_dirs(root: Path) -> set[str]:
    """The article page directories under root (not the site's own names, not dot-files,
    not the former addresses that send readers on: `moved_pages`)."""
    dirs = {p.name for p in root.iterdir() if p.is_dir() and not is_reserved_slug(p.name)}
    return dirs - set(moved_pages(root))


def archive_pages(root: Path) -> dict[int, Listing]:
    archive = root / "page"
    if not archive.is_dir():
        return {}
    return {int(p.name): read_listing(p / "index.html") for p in archive.iterdir()}


@dataclass
class SiteView:
    front: Listing
    feed_slugs: list[str]
    sitemap: dict[str, str]
    dirs: set[str]


def read_site(root: Path) -> SiteView:
    feed = read_feed(root)
    return SiteView(
        front=read_listing(root / "index.html"),
        feed_slugs=[slug_of(entry.link) for entry in feed.entries],
        sitemap=read_sitemap(root),
        dirs=page_dirs(root),
    )


def assert_lists_exactly(root: Path, slugs_newest_first: list[str]) -> None:
    """Front page, feed (the newest 50), archive pages (numbered from the oldest),
    sitemap and page directories show exactly these articles, in this order."""
    view = read_site(root)
    newest = slugs_newest_first[:50]
    assert view.front.slugs == newest
    assert view.feed_slugs == newest
    assert set(view.sitemap) == set(slugs_newest_first)
    assert view.dirs == set(slugs_newest_first)
    oldest_first = slugs_newest_first[::-1]
    pages = archive_pages(root)
    assert sorted(pages) == list(range(1, len(oldest_first) // 50 + 1))
    for number, listing in pages.items():
        assert listing.slugs == oldest_first[50 * (number - 1) : 50 * number][::-1], number


JSON_LD_OPEN = '<script type="application/ld+json">'


def without_json_ld(html: str) -> str:
    """A page less its one JSON-LD data block (escaped so no text leaves it: documents.
    json_ld), for the checks that no other script made it into the page."""
    head, found, rest = html.partition(JSON_LD_OPEN)
    return head + rest.partition("</script>")[2] if found else html


def tagged(root: Path, name: str, kind: str = "tag") -> list[str] | None:
    """The slugs on a tag's (byline's) page under `root`, newest first (None: no page),
    checked against its feed."""
    from publishing.reader_fields import tag_slug

    folder = root / kind / tag_slug(name)
    if not (folder / "index.html").exists():
        return None
    slugs = read_listing(folder / "index.html").slugs
    feed = feedparser.parse((folder / "feed.xml").read_bytes())
    assert [slug_of(entry.link) for entry in feed.entries] == slugs
    return slugs


def run_full_check(publisher) -> bool | None:
    """The full check in this process, as the refresher runs it but with no lease: the
    target's `check`, then its `reconcile` pass. Its pass's result."""
    publisher.check()
    return publisher.reconcile()


def stale_page(text: str) -> str:
    """A page this site wrote once (its content mark, of content no article has now):
    what a delete that bypassed the signals, or a site restored from after the dump,
    leaves. The full check removes only folders carrying the site's marks."""
    return f'<meta name="blogpublish-content" content="{"0" * 64}">{text}'
