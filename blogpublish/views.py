"""Serving SITE_ROOT for local runs (`make run`). In production a web server serves
that directory directly; see docs/operations.md."""

from __future__ import annotations

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.views.static import serve


def site(request: HttpRequest, path: str = "") -> HttpResponse:
    root = settings.SITE_ROOT
    if path and not path.endswith("/") and (root / path).is_dir():
        return HttpResponseRedirect(request.path + "/")
    if path == "" or path.endswith("/"):
        path += "index.html"
    try:
        return serve(request, path, document_root=root)
    except Http404:
        if path == "index.html":
            return render(request, "blogpublish/empty.html", {"site_title": settings.SITE_TITLE})
        raise
