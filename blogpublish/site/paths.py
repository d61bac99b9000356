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
SITEMAP = "sitemap.xml"  # a sitemap index; the URLs are in sitemap-<n>.xml
ARCHIVE_DIR = "page"  # page/<n>/index.html
# Pages are written here first, then renamed into place (blogpublish.files.stage).
STAGING_DIR = ".staging"

SITEMAP_CHUNK_RE = re.compile(r"^sitemap-(\d+)\.xml$")


def page_dir(root: Path, slug: str) -> Path:
    """The directory of an article's page; never anything but a direct child of root."""
    path = (root / slug).resolve()
    if not slug or path.parent != root.resolve():  # the slug validators make this impossible
        raise ValueError(f"slug {slug!r} would leave SITE_ROOT")
    return path


def page_path(root: Path, slug: str) -> Path:
    return page_dir(root, slug) / "index.html"


def archive_path(root: Path, number: int) -> Path:
    return root / ARCHIVE_DIR / str(number) / "index.html"


def sitemap_chunk_name(number: int) -> str:
    return f"sitemap-{number}.xml"


def is_trash(name: str) -> bool:
    """A directory `remove_tree` renamed aside and did not finish removing."""
    return name.startswith(".") and ".removed-" in name


def is_article_dir_name(name: str) -> bool:
    """Could this entry of SITE_ROOT be an article's page directory? Dot-files (the lock,
    the state, trash of removals) and the site's own names never are."""
    return not is_reserved_slug(name)


# --- addresses ----------------------------------------------------------------------


def site_path() -> str:
    """The path part of SITE_URL without its trailing slash: '' when served at the root."""
    return urlsplit(settings.SITE_URL).path.rstrip("/")


def article_href(slug: str) -> str:
    """The root-relative address of an article's page, for links inside the site."""
    return iri_to_uri(f"{site_path()}/{slug}/")


def archive_href(number: int | None) -> str:
    """The front page for None, else the archive page `number`."""
    if number is None:
        return f"{site_path()}/"
    return f"{site_path()}/{ARCHIVE_DIR}/{number}/"


def absolute(href: str) -> str:
    """An address from `article_href`/`archive_href`, absolute from SITE_URL."""
    parts = urlsplit(settings.SITE_URL)
    return f"{parts.scheme}://{parts.netloc}{href}"


def article_url(slug: str) -> str:
    return absolute(article_href(slug))
