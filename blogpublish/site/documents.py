"""What each file of the site contains: pure functions from data to text."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from html import escape

from django.conf import settings
from django.template.loader import render_to_string
from django.utils import dateformat, timezone
from django.utils.feedgenerator import Atom1Feed

from blogpublish.rendering import plain_excerpt, render_markdown
from blogpublish.site import paths
from blogpublish.site.selectors import Entry


def site_context() -> dict:
    return {
        "site_title": settings.SITE_TITLE,
        "home_href": paths.archive_href(None),
        "feed_href": f"{paths.site_path()}/{paths.FEED}",
    }


def rfc3339(moment: datetime) -> str:
    """UTC, to the second: 2025-03-01T12:00:00Z."""
    return moment.astimezone(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def display_date(moment: datetime) -> str:
    """'1 March 2025' in the site's time zone. Formatted here rather than with the
    template's `date` filter, which costs most of a 50-entry page's rendering."""
    return dateformat.format(timezone.localtime(moment), "j F Y")


def article_page(article) -> str:
    return render_to_string(
        "blogpublish/article.html",
        {
            **site_context(),
            "article": article,
            "body_html": render_markdown(article.body),
            "canonical_url": paths.article_url(article.slug),
        },
    )


def listing_page(
    entries: Iterable[Entry], *, page: int | None, newer_href: str, older_href: str
) -> str:
    """The front page (`page` None: with excerpts) or archive page `page` (titles only)."""
    items = [
        {
            "title": entry.title,
            "href": paths.article_href(entry.slug),
            "datetime": rfc3339(entry.publish_at),
            "date": display_date(entry.publish_at),
            "excerpt": plain_excerpt(entry.head) if page is None and entry.head else "",
        }
        for entry in entries
    ]
    return render_to_string(
        "blogpublish/listing.html",
        {
            **site_context(),
            "page": page,
            "entries": items,
            "newer_href": newer_href,
            "older_href": older_href,
        },
    )


def atom_feed(entries: Iterable[Entry]) -> bytes:
    """Atom (RFC 4287). Entry ids are `urn:uuid:<article uid>`, stable across edits;
    `updated` is when the entry's current version went live, `published` its date."""
    home = paths.absolute(paths.archive_href(None))
    feed = Atom1Feed(
        title=settings.SITE_TITLE,
        link=home,
        description="",
        feed_url=paths.absolute(f"{paths.site_path()}/{paths.FEED}"),
        feed_guid=home,
        author_name=settings.SITE_TITLE,
    )
    for entry in entries:
        feed.add_item(
            title=entry.title,
            link=paths.article_url(entry.slug),
            # type="html": the plain excerpt is escaped once for HTML, once for XML.
            description=escape(plain_excerpt(entry.head)),
            unique_id=f"urn:uuid:{entry.uid}",
            pubdate=entry.publish_at.replace(microsecond=0),
            updateddate=entry.published_at.replace(microsecond=0),
        )
    return feed.writeString("utf-8").encode("utf-8")


def sitemap(entries: Iterable[Entry]) -> str:
    items = [
        {"url": paths.article_url(entry.slug), "lastmod": rfc3339(entry.published_at)}
        for entry in entries
    ]
    return render_to_string("blogpublish/sitemap.xml", {"entries": items})


def sitemap_index(chunks: int) -> str:
    site = paths.absolute(paths.site_path())
    urls = [f"{site}/{paths.sitemap_chunk_name(n)}" for n in range(1, chunks + 1)]
    return render_to_string("blogpublish/sitemap_index.xml", {"chunks": urls})
