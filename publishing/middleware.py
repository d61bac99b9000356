"""A request id for every web request: on its log lines, in the headers of the tasks it
sends (publishing.dispatch), so the worker's lines carry it too, and in the response's
`X-Request-ID`. A proxy's `X-Request-ID` is kept when it looks like one."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

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
