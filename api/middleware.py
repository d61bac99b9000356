"""The API's answers in its own shape even where django-ninja answers for it."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase

API_PREFIX = "/api/"


def under_api(path: str) -> bool:
    """/api/… and /api itself (config/urls.py answers both with the API's 404)."""
    return path == API_PREFIX.rstrip("/") or path.startswith(API_PREFIX)


class JsonMethodNotAllowed:
    """A 405 under /api/ as the API's errors are (`{"detail", "errors"}`, docs/api.md),
    its Allow header kept: django-ninja answers a method an address does not take with
    Django's plain-text "Method not allowed" (a review's finding)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.status_code != 405 or not under_api(request.path):
            return response
        if response.get("Content-Type", "").startswith("application/json"):
            return response
        allowed = _with_head(response.get("Allow", ""))
        answer = JsonResponse(
            {
                "detail": f"{request.method} is not a method of {request.path}: "
                f"it takes {allowed or 'none'}.",
                "errors": {},
            },
            status=405,
        )
        answer["Allow"] = allowed
        return answer


def _with_head(allowed: str) -> str:
    """`Allow` as django-ninja writes it, with HEAD wherever GET is (HeadAsGet)."""
    methods = [m.strip() for m in allowed.split(",") if m.strip()]
    if "GET" in methods and "HEAD" not in methods:
        methods.insert(methods.index("GET") + 1, "HEAD")
    return ", ".join(methods)


class HeadAsGet:
    """A HEAD under /api/ is answered as its GET is, without the body but with the
    body's length (RFC 9110 9.3.2: a server that takes GET takes HEAD; monitors and
    link checkers send it). django-ninja routes by method and answered 405. Placed
    before JsonMethodNotAllowed, so that the JSON 405 of an address without GET loses
    its body too (Django's test client drops a HEAD's body itself; a WSGI server
    sends what it is given)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if request.method != "HEAD" or not under_api(request.path):
            return self.get_response(request)
        request.method = "GET"
        try:
            response = self.get_response(request)
        finally:
            request.method = "HEAD"
        if isinstance(response, StreamingHttpResponse):  # its length unknown: none given
            response.streaming_content = []
        elif isinstance(response, HttpResponse):
            response["Content-Length"] = str(len(response.content))
            response.content = b""
        return response
