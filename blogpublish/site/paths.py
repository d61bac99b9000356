"""Where things are: files under SITE_ROOT, and the addresses readers use for them.

On disk a slug is the raw UTF-8 directory name; in every address (links, feed,
sitemap, webhook) it is percent-encoded with `iri_to_uri`, so `你好` is served at
`/%E4%BD%A0%E5%A5%BD/`.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from django.utils.encoding import iri_to_uri

from publishing.validators import is_reserved_slug

# Every name the site writes into SITE_ROOT is a reserved slug (publishing.validators
# keeps the list: publishing may not import blogpublish); tests/unit/test_site_paths.py
# holds the two together.
FRONT_PAGE = "index.html"
FEED = "feed.xml"
JSON_FEED = "feed.json"  # JSON Feed 1.1, beside the Atom feed
NOT_FOUND = "404.html"  # the site view's and a bucket's error document
FAVICON = "favicon.svg"
SITEMAP = "sitemap.xml"  # a sitemap index; the URLs are in sitemap-<n>.xml
ROBOTS = "robots.txt"  # announces the sitemap to crawlers
ARCHIVE_DIR = "page"  # page/<n>/index.html
TAG_DIR = "tag"  # tag/<tag slug>/index.html and feed.xml
AUTHOR_DIR = "author"  # author/<byline slug>/index.html and feed.xml
# The folder of each kind of publishing.models.Tag.
TERM_DIRS = {"tag": TAG_DIR, "author": AUTHOR_DIR}
# Pages are written here first, then renamed into place (blogpublish.files.stage).
STAGING_DIR = ".staging"

SITEMAP_CHUNK_RE = re.compile(r"^sitemap-(\d+)\.xml$")


def page_name(slug: str) -> str:
    """The slug as the name of its directory, a direct child of SITE_ROOT. Checked by
    its text, not by resolving it: resolving would follow a link (`foo` → `bar` made
    `foo`'s page `bar`'s); the slug validators make a bad one impossible anyway."""
    if not slug or slug in (".", "..") or any(c in slug for c in "/\\\x00"):
        raise ValueError(f"slug {slug!r} would leave SITE_ROOT")
    return slug


def page_dir(root: Path, slug: str) -> Path:
    """The directory of an article's page; never anything but a direct child of root."""
    return root / page_name(slug)


def page_file(slug: str) -> str:
    """An article's page, relative to SITE_ROOT (for blogpublish.files)."""
    return f"{page_name(slug)}/index.html"


def page_path(root: Path, slug: str) -> Path:
    return root / page_file(slug)


def archive_file(number: int) -> str:
    """Archive page `number`, relative to SITE_ROOT."""
    return f"{ARCHIVE_DIR}/{number}/index.html"


def archive_path(root: Path, number: int) -> Path:
    return root / archive_file(number)


def sitemap_chunk_name(number: int) -> str:
    return f"sitemap-{number}.xml"


def tag_dir(tag_slug: str, kind: str = "tag") -> str:
    """A tag's (a byline's) folder, relative to SITE_ROOT (reader_fields.tag_slug)."""
    return f"{TERM_DIRS[kind]}/{page_name(tag_slug)}"


def tag_archive_file(tag_slug: str, kind: str, number: int) -> str:
    """Archive page `number` of a tag (a byline), relative to SITE_ROOT."""
    return f"{tag_dir(tag_slug, kind)}/{ARCHIVE_DIR}/{number}/index.html"


def is_trash(name: str) -> bool:
    """A directory `remove_tree` renamed aside and did not finish removing."""
    return name.startswith(".") and ".removed-" in name


def is_article_dir_name(name: str) -> bool:
    """Could this entry of SITE_ROOT be an article's page directory? Dot-files (staging,
    trash of removals) and the site's own names never are."""
    return not is_reserved_slug(name)


# --- addresses ----------------------------------------------------------------------


def site_path() -> str:
    """The path part of SITE_URL without its trailing slash: '' when served at the root;
    percent-encoded as every address in the pages is (`/博客` is `/%E5%8D%9A%E5%AE%A2`)."""
    return iri_to_uri(urlsplit(settings.SITE_URL).path.rstrip("/"))


def article_href(slug: str) -> str:
    """The root-relative address of an article's page, for links inside the site."""
    return iri_to_uri(f"{site_path()}/{slug}/")


def archive_href(number: int | None) -> str:
    """The front page for None, else the archive page `number`."""
    if number is None:
        return f"{site_path()}/"
    return f"{site_path()}/{ARCHIVE_DIR}/{number}/"


def tag_href(tag_slug: str, kind: str = "tag", number: int | None = None) -> str:
    """The root-relative address of a tag's (a byline's) page, or of its archive page
    `number`."""
    page = f"{ARCHIVE_DIR}/{number}/" if number is not None else ""
    return iri_to_uri(f"{site_path()}/{TERM_DIRS[kind]}/{tag_slug}/{page}")


def absolute(href: str) -> str:
    """An address from `article_href`/`archive_href`, absolute from SITE_URL."""
    parts = urlsplit(settings.SITE_URL)
    return f"{parts.scheme}://{parts.netloc}{href}"


def article_url(slug: str) -> str:
    return absolute(article_href(slug))
