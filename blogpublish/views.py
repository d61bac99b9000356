"""Serving SITE_ROOT for local runs (`make run`), from whichever storage it names (a
folder or a bucket, blogpublish.storage). In production a web server serves that
directory, or the bucket's website/CDN serves the objects; see docs/site.md ("Serving
the site").

A path is checked as text before anything touches the file system: a `..` or `.`
segment, an empty one (`//`), a dot-file or dot-directory (`.staging/`), a backslash,
a `%` (a double-encoded path), NUL or another control character answer 404, the same
as a missing file. The file is then opened from SITE_ROOT one component at a time
without following a link (blogpublish.files), so a link inside SITE_ROOT is a missing
path too, and nothing outside SITE_ROOT is ever looked at. A bucket that cannot be
reached answers 503.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from urllib.parse import quote, unquote

from django.conf import settings
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponsePermanentRedirect,
    HttpResponseRedirect,
)
from django.shortcuts import render
from django.views.decorators.http import require_safe

from blogpublish.csp import site_policy
from blogpublish.desk import limits
from blogpublish.desk.preview import shared_page
from blogpublish.exceptions import StorageError, SymlinkRefused
from blogpublish.site import documents, paths
from blogpublish.storage import site_storage
from blogpublish.storage.base import type_by_extension
from publishing.services import story_by_preview_token

logger = logging.getLogger(__name__)

TYPES = {
    ".html": "text/html; charset=utf-8",
    ".xml": "application/xml; charset=utf-8",  # the sitemap and its chunks
}
FEED_TYPE = "application/atom+xml; charset=utf-8"
JSON_FEED_TYPE = "application/feed+json; charset=utf-8"


def path_parts(path: str) -> list[str] | None:
    """The components of a request's path under SITE_ROOT ([] for the front page), or
    None when it names nothing the site can hold."""
    if any(c in "\\%" or ord(c) < 0x20 or c == "\x7f" for c in path):
        return None
    parts = path.split("/")
    if parts[-1] == "":  # "" or a trailing slash: a folder's index.html
        parts.pop()
    if any(part == "" or part.startswith(".") for part in parts):  # //, .., .staging
        return None
    return parts


def content_type(rel: str) -> str:
    """By the file's own name: a tag's or an author's feed (tag/<slug>/feed.xml) is a
    feed as the site's is (they were served as application/xml: a review's finding)."""
    name = rel.rsplit("/", 1)[-1]
    if name == paths.FEED:
        return FEED_TYPE
    if name == paths.JSON_FEED:
        return JSON_FEED_TYPE
    suffix = Path(name).suffix
    return TYPES.get(suffix) or type_by_extension(name)


def site_prefix() -> str:
    """SITE_URL's path without its slashes ("blog" for https://example.com/blog), where
    the pages link to (their links are root-relative): this view serves SITE_ROOT there."""
    return unquote(paths.site_path()).strip("/")


@require_safe
def site(request: HttpRequest, path: str = "") -> HttpResponse:
    if prefix := site_prefix():
        if path in ("", prefix):  # the host's root, or the prefix without its slash
            query = request.META.get("QUERY_STRING", "")
            return HttpResponseRedirect(f"/{quote(prefix)}/" + (f"?{query}" if query else ""))
        if not path.startswith(f"{prefix}/"):
            return not_found(site_storage())
        path = path.removeprefix(f"{prefix}/")
    parts = path_parts(path)
    if parts is None:
        return not_found(site_storage())
    folder_wanted = path == "" or path.endswith("/")
    rel = "/".join([*parts, "index.html"] if folder_wanted else parts)
    storage = site_storage()
    try:
        data = storage.read(rel)
        if data is None and not folder_wanted and storage.exists(f"{rel}/index.html"):
            return redirect_to_folder(request)
    except (OSError, SymlinkRefused):  # missing, not a folder, a link, unreadable
        data = None
    except StorageError as exc:
        logger.error("serving /%s: %s", path, exc)
        return HttpResponse("The site's storage is not reachable.", status=503)
    if data is None:
        if not parts:  # nothing published yet
            response = render(
                request, "blogpublish/empty.html", {"site_title": settings.SITE_TITLE}
            )
            return with_policy(response)
        return not_found(storage)
    if folder_wanted and (moved := documents.moved_href(data)):
        # A former address (docs/site.md): a permanent redirect where this view serves
        # the site, as WordPress answers an old slug; a static server serves the page,
        # whose meta refresh does the same. Kept by browsers for MOVED_MAX_AGE only: one
        # kept for ever (a 301's default) would send a reader round in a loop once the
        # article moves back to the old slug (a review's finding).
        response = HttpResponsePermanentRedirect(moved)
        response["Cache-Control"] = f"max-age={MOVED_MAX_AGE}"
        return with_policy(response)
    return with_policy(HttpResponse(data, content_type=content_type(rel)))


# Seconds a browser may keep a former address's redirect.
MOVED_MAX_AGE = 300


def not_found(storage) -> HttpResponse:
    """404 with the site's own page (paths.NOT_FOUND, written by the refresher), which a
    bucket serves as its error document too; Django's while the site has none yet."""
    try:
        page = storage.read(paths.NOT_FOUND)
    except (OSError, SymlinkRefused, StorageError):
        page = None
    if page is None:
        raise Http404("No such page.")
    return with_policy(HttpResponse(page, content_type=TYPES[".html"], status=404))


def redirect_to_folder(request: HttpRequest) -> HttpResponse:
    """`/slug` → `/slug/`. The path has no empty segment, so the address is on this
    site (never `//host/`, which a browser reads as another host)."""
    location = request.path + "/"
    if not location.startswith("/") or location.startswith("//"):
        raise Http404("No such page.")
    return HttpResponseRedirect(location)


def with_policy(response: HttpResponse) -> HttpResponse:
    response["Content-Security-Policy"] = site_policy(
        images_self_only=settings.SITE_IMAGES_SELF_ONLY
    )
    return response


@require_safe
def story_preview(request: HttpRequest, token: str) -> HttpResponse:
    """A shared preview link (issue 22): the story's current draft as its page will
    look, to anyone with the link, until it expires or is revoked; then "not published
    yet". Never indexed, never cached, and the token never leaves in a Referer."""
    story = story_by_preview_token(token)
    if story is None:
        context = {"site_title": settings.SITE_TITLE}
        response = render(request, "blogpublish/preview_gone.html", context, status=404)
    else:
        response = shared_preview_response(story)
    response["X-Robots-Tag"] = "noindex, nofollow"
    response["Cache-Control"] = "private, no-store"
    response["Referrer-Policy"] = "no-referrer"
    return with_policy(response)


# A shared link's reader does not retry by hand: when the render slot is busy (a
# writer's preview, or this link's render for another reader), the page answers at once
# and reloads itself; a request never waits for the slot, so a link shared with many
# readers cannot hold the web's threads (a review's finding: 32 readers of one link,
# each waiting up to 2 s for the one slot, left /healthz 4 s behind).
BUSY_PAGE = (
    '<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="2">'
    '<meta name="robots" content="noindex, nofollow"><title>Preview busy</title>'
    "<p>The preview is busy; this page tries again in a moment.</p>"
)
# A shared link's page, kept this long per web process for the story's version: the
# readers of one link share one render, not one each (the neighbours and related
# articles around it are as recent as that). One page a story, at most
# SHARED_PAGES_KEPT stories, the expired dropped at each keep: Django's local-memory
# cache kept every version of an autosaved 1 MB draft until it was full (300 entries,
# about 300 MB a process: a review of the mend).
SHARED_PAGE_SECONDS = 10
SHARED_PAGES_KEPT = 16
_shared_pages: dict[int, tuple[str, float, str]] = {}  # story id → (version, until, page)
_shared_pages_lock = threading.Lock()


def _version_of(story) -> str:
    return f"{story.version}:{story.updated_at.isoformat()}"


def _shared_page_kept(story) -> str | None:
    with _shared_pages_lock:
        kept = _shared_pages.get(story.pk)
    if kept is None or kept[0] != _version_of(story) or kept[1] <= time.monotonic():
        return None
    return kept[2]


def _shared_page_keep(story, page: str) -> None:
    now = time.monotonic()
    with _shared_pages_lock:
        for pk in [pk for pk, (_, until, _) in _shared_pages.items() if until <= now]:
            del _shared_pages[pk]
        _shared_pages.pop(story.pk, None)
        while len(_shared_pages) >= SHARED_PAGES_KEPT:
            del _shared_pages[min(_shared_pages, key=lambda pk: _shared_pages[pk][1])]
        _shared_pages[story.pk] = (_version_of(story), now + SHARED_PAGE_SECONDS, page)


def shared_preview_response(story) -> HttpResponse:
    page = _shared_page_kept(story)
    if page is None:
        try:
            with limits.render_slot():
                page = limits.run_with_time_limit(
                    shared_page, story, seconds=settings.PREVIEW_TIME_LIMIT
                )
        except limits.PreviewRefused as exc:
            response = HttpResponse(BUSY_PAGE, status=429, content_type=TYPES[".html"])
            response["Retry-After"] = str(exc.retry_after)
            return response
        except limits.PreviewTooSlow as exc:
            return HttpResponse(str(exc), status=503, content_type="text/plain")
        _shared_page_keep(story, page)
    return HttpResponse(page, content_type=TYPES[".html"])
