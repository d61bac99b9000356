"""The API's answers in its own shape even where django-ninja answers for it."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse

API_PREFIX = "/api/"


class JsonMethodNotAllowed:
    """A 405 under /api/ as the API's errors are (`{"detail", "errors"}`, docs/api.md),
    its Allow header kept: django-ninja answers a method an address does not take with
    Django's plain-text "Method not allowed" (a review's finding)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.status_code != 405 or not request.path.startswith(API_PREFIX):
            return response
        if response.get("Content-Type", "").startswith("application/json"):
            return response
        allowed = response.get("Allow", "")
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
