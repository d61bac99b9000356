"""A request id for every web request: on its log lines, in the headers of the tasks it
sends (publishing.dispatch), so the worker's lines carry it too, and in the response's
`X-Request-ID`. A proxy's `X-Request-ID` is kept when it looks like one."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.urls import reverse

from publishing.logcontext import log_context

HEADER = "X-Request-ID"
SANE = re.compile(r"^[A-Za-z0-9._:-]{8,64}$")


class RequestIdMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        given = request.headers.get(HEADER, "")
        request_id = given if SANE.match(given) else uuid.uuid4().hex
        with log_context(request_id=request_id):
            response = self.get_response(request)
        response[HEADER] = request_id
        return response


class AdminQueryNulMiddleware:
    """An admin address whose query holds a NUL character gets 400 with a message. The
    admin's list filters put a query's values into the list's statement as they come
    (`?title__icontains=…`), and PostgreSQL refuses NUL in a string, which would be a
    500; no stored value has one (validate_xml_chars). The API and the forms check
    their fields themselves."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path.startswith(reverse("admin:index")) and any(
            "\x00" in key or any("\x00" in value for value in values)
            for key, values in request.GET.lists()
        ):
            return HttpResponseBadRequest(
                "A NUL character (%00) in the address's query: no stored value has one.",
                content_type="text/plain; charset=utf-8",
            )
        return self.get_response(request)
