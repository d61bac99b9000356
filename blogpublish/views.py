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
import mimetypes
from pathlib import Path

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.views.decorators.http import require_safe

from blogpublish.csp import site_policy
from blogpublish.exceptions import StorageError, SymlinkRefused
from blogpublish.site import paths
from blogpublish.storage import site_storage

logger = logging.getLogger(__name__)

TYPES = {
    ".html": "text/html; charset=utf-8",
    ".xml": "application/xml; charset=utf-8",  # the sitemap and its chunks
}
FEED_TYPE = "application/atom+xml; charset=utf-8"


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


def content_type(name: str) -> str:
    if name == paths.FEED:
        return FEED_TYPE
    suffix = Path(name).suffix
    return TYPES.get(suffix) or mimetypes.guess_type(name)[0] or "application/octet-stream"


@require_safe
def site(request: HttpRequest, path: str = "") -> HttpResponse:
    parts = path_parts(path)
    if parts is None:
        raise Http404("No such page.")
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
        raise Http404("No such page.")
    return with_policy(HttpResponse(data, content_type=content_type(rel)))


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
