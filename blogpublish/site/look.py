"""The look of the site's pages as one fingerprint (issue 20, docs/site.md, "The look").

Everything that shapes an article's page besides the article itself hashes into
`look()`: the page templates as the template loader finds them (a theme's override in
TEMPLATES' DIRS counts; the stylesheet is the `<style>` block of base.html), the site's
static files under `blogpublish/site/` (what a theme's templates link to), the renderer
and its version (cmark-gfm, its options and extensions), the sanitiser's version and
policy (nh3), the settings a page shows (`LOOK_SETTINGS`) and `PAGE_FORMAT`, the
version of the page's own code (bumped by hand when `documents.article_page` writes
something else). Every page carries the fingerprint it was written in
(`<meta name="blogpublish-look">`, beside its content mark), and the re-render
(blogpublish.site.rerender) rewrites the pages of another look when it changes.

The shared views (front page, archive, tag and author pages, the 404 page, the feeds
and the sitemaps) have a look of their own, `shared_look()`: their templates (base.html
among them, so a change to it changes both looks), the same static files, renderer and
sanitiser, the settings they show (`SHARED_SETTINGS`) and `SHARED_FORMAT`. The
refresher keeps the shared look it last built in (`SiteState.look`), and a pass that
finds another look rebuilds them all (blogpublish.site.build.adopt_look).

Computed once per process (templates and settings do not change under a running
process); tests that change them call `look.cache_clear()` (a changed setting clears it,
and `shared_look` with it).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import re
import time
from functools import cache
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.staticfiles import finders
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.template.loader import get_template

from blogpublish import rendering
from work.lease import db_now

# Bump when `documents.article_page` (or what it calls) writes a page differently with
# the same templates, renderer and settings: every page is then written again.
# 2: tags' links by their slugs of migration 0026, one spelling of each tag; an `<img>`
# without `alt` given `alt=""`, a link without its address no `rel` (the renderer's
# version does not change with them).
# 3: an element of the body with an id of the page's own (`content`, the skip link's
# target) loses it (rendering.PAGE_IDS).
# 4: tags' and bylines' links by their folders of migration 0030 (marks kept).
# 5: an <input>'s attributes in one order (rendering._inputs_in_order; nh3's changed
# from one process to the next); a <script> or <style> never closed shown as text
# (nesting.bounded_nesting).
# 6: the individual languages of the right-to-left macrolanguages (`arz`, `pes`, …)
# turn the page; a stored language that is not a well-formed BCP 47 tag (`english`) is
# none (reader_fields.LANGUAGE_RE); an excerpt (the description's default) never cut
# inside a character a reader sees (rendering._character_start).
# 7: a character reference to what a page may not hold is U+FFFD inside a tag, never
# taken out of an address (`java&#127;script:` made `javascript:`:
# rendering._without_page_illegal); no-break spaces kept in the description, byline,
# tags and excerpt (text_limits.one_line); an excerpt's cut at a space never inside a
# character a reader sees.
PAGE_FORMAT = 7

# The templates an article's page is made of.
PAGE_TEMPLATES = ("blogpublish/article.html", "blogpublish/base.html")
# Bump when `documents` writes a shared view (listing, tag page, feed, sitemap, robots,
# 404, favicon) differently with the same templates, renderer and settings.
# 2: the feeds' content with absolute addresses (a tag's feed is otherwise rewritten only
# when one of its articles changes). 3: excerpts whose references are defined past the
# head (the front page's, the feeds' summaries). 4: tags' links and categories by their
# keys and slugs of migration 0026 (one spelling of each tag), the feeds' links without
# their address without `rel`, excerpts without bidirectional controls.
# 5: the feeds' content without the page's own ids (rendering.PAGE_IDS), as the pages.
# 6: tags' and bylines' links by their folders of migration 0030 (marks kept).
# 7: the feeds' content (and excerpts) as the pages of PAGE_FORMAT 5; an
# entry past documents.CONTENT_MAX_CHARS with its summary alone.
# 8: a stored language that is not a well-formed BCP 47 tag is none, and excerpts cut
# at a character a reader sees, not inside one (as PAGE_FORMAT 6).
# 9: the feeds' content and excerpts as the pages of PAGE_FORMAT 7.
SHARED_FORMAT = 9
# The templates of the shared views the site writes. (empty.html is not one: the site
# view renders it on each request while SITE_ROOT holds no front page.)
SHARED_TEMPLATES = (
    "blogpublish/base.html",
    "blogpublish/listing.html",
    "blogpublish/tag.html",
    "blogpublish/404.html",
    "blogpublish/sitemap.xml",
    "blogpublish/sitemap_index.xml",
)
# Static files a theme's templates link to (stylesheets, fonts, images), in any static
# folder the staticfiles finders search.
STATIC_PREFIX = "blogpublish/site/"
# The settings that change what a page shows: its title, addresses, dates (the zone,
# and the month names' language).
LOOK_SETTINGS = (
    "SITE_TITLE",
    "SITE_URL",
    "SITE_LANGUAGE",
    "TIME_ZONE",
    "LANGUAGE_CODE",
    "USE_I18N",
)
# And what the shared views show besides: the feeds' entries whole or summed up.
SHARED_SETTINGS = (*LOOK_SETTINGS, "FEED_FULL_CONTENT")

# When this process began, on this host's monotonic clock: a forked child (a worker's
# pool process) inherits it from the process started with the release.
_STARTED = time.monotonic()
# When this process began by the database's clock (unix seconds), once `born()` read it:
# a re-render run, or shared views built, in another look by an older process may be
# taken over for this process's look; by a newer process may not (a rolling deploy:
# blogpublish.site.rerender, build.adopt_look).
BORN: float | None = None

# What a page carries near its top: the look it was written in.
LOOK_MARK = re.compile(rb'<meta name="blogpublish-look" content="([0-9a-f]{64})">')


def born() -> float:
    """When this process began, by the database's clock (unix seconds): the clock read
    once, the first time it is asked, less the time since the process began on this
    host's monotonic clock, which a wall clock set ahead or behind does not move. So
    every host ranks its processes on one clock: one whose clock runs ahead is not
    "newer" (a review's finding: `time.time()` at the start was)."""
    global BORN
    if BORN is None:
        BORN = db_now().timestamp() - (time.monotonic() - _STARTED)
    return BORN


@cache
def look() -> str:
    """The fingerprint (sha256, hex) of the look of the pages this process writes."""
    return hashlib.sha256(json.dumps(look_parts(), sort_keys=True).encode()).hexdigest()


def look_parts() -> dict:
    """What the fingerprint is made of, by name (for `rerender_site --status` and tests)."""
    return {"page_format": PAGE_FORMAT, **_parts(PAGE_TEMPLATES, LOOK_SETTINGS)}


@cache
def shared_look() -> str:
    """The fingerprint (sha256, hex) of the look of the shared views this process writes."""
    parts = shared_look_parts()
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def shared_look_parts() -> dict:
    """What the shared views' fingerprint is made of, by name."""
    return {"shared_format": SHARED_FORMAT, **_parts(SHARED_TEMPLATES, SHARED_SETTINGS)}


def _parts(templates: tuple[str, ...], setting_names: tuple[str, ...]) -> dict:
    return {
        "templates": {name: _digest(_template_source(name)) for name in templates},
        "static": {path: _digest(data) for path, data in _static_files()},
        "renderer": {
            "cmarkgfm": _version("cmarkgfm"),
            "cmark": rendering.cmark_version(),
            "options": int(rendering.OPTIONS),
            "extensions": list(rendering.EXTENSIONS),
        },
        "sanitiser": {
            "nh3": _version("nh3"),
            "tags": sorted(rendering.ALLOWED_TAGS),
            "attributes": {k: sorted(v) for k, v in rendering.ALLOWED_ATTRIBUTES.items()},
            "set": {k: dict(sorted(v.items())) for k, v in rendering.SET_ATTRIBUTES.items()},
            "schemes": sorted(rendering.URL_SCHEMES),
        },
        "settings": {name: str(getattr(settings, name, "")) for name in setting_names},
    }


def page_look(head: bytes | None) -> str | None:
    """The look a page's first bytes carry; None when it has none (missing, or written
    before pages carried it)."""
    found = LOOK_MARK.search(head or b"")
    return found[1].decode() if found else None


def _digest(data: str | bytes) -> str:
    raw = data.encode() if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()


def _template_source(name: str) -> bytes:
    """The template file the loader finds for `name`, read now (the loader caches the
    template, not what is on disk)."""
    # Django's backend's template (django-stubs know only the engine-neutral protocol).
    template: Any = get_template(name)
    try:
        return Path(template.origin.name).read_bytes()
    except OSError:  # not from a file (a loader of its own): its text as loaded
        return template.template.source.encode()


def _static_files() -> list[tuple[str, bytes]]:
    found: dict[str, bytes] = {}
    for finder in finders.get_finders():
        for path, storage in finder.list(ignore_patterns=[]):
            rel = path.replace("\\", "/")
            if rel.startswith(STATIC_PREFIX) and rel not in found:  # the first finder wins
                found[rel] = Path(storage.path(path)).read_bytes()
    return sorted(found.items())


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return ""


@receiver(setting_changed)
def _forget_look(*, setting: str, **kwargs) -> None:
    if setting in SHARED_SETTINGS or setting in ("TEMPLATES", "STATICFILES_DIRS", "INSTALLED_APPS"):
        look.cache_clear()
        shared_look.cache_clear()
