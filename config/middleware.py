"""A form too large for Django to read, answered as such whatever DEBUG says."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.response import HttpResponseBase

from api.middleware import under_api

# What it is told: Django's own answer is a bare "Bad Request (400)" (the desk's autosave
# showed "Not saved yet: 400"), or with DEBUG on its technical page. An article's body
# is at most 1 MiB (validate_body_size).
TOO_LARGE = (
    "This is too large to send: more than {limit} MiB of text, and an article's body is "
    "at most 1 MiB. Nothing was saved; the text is still in the form you sent it from."
)


class FormTooLargeToRead:
    """A POST whose fields pass DATA_UPLOAD_MAX_MEMORY_SIZE is a 413 that names the
    limits: JSON to the desk's fetches (they ask for it), text to a form's submit. Not
    under /api/: the API reads its bodies itself (a multipart one read here could not
    be read there again) and answers a body too large with its own 413. The fields are
    read here, before CsrfViewMiddleware reads them (it would, for every view it
    checks): there the error became Django's 400, which with DEBUG on (`make run`) is
    its technical page, never a handler's."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        return self.get_response(request)

    def process_view(self, request: HttpRequest, view, args, kwargs) -> HttpResponse | None:
        if request.method != "POST" or under_api(request.path):
            return None  # the API reads its own bodies, and answers its own 413
        try:
            request.POST  # noqa: B018  (read: a form's fields, none for a JSON body)
        except RequestDataTooBig:
            message = TOO_LARGE.format(limit=settings.DATA_UPLOAD_MAX_MEMORY_SIZE // 2**20)
            if "application/json" in request.headers.get("Accept", ""):
                return JsonResponse({"error": message}, status=413)
            return HttpResponse(message, status=413, content_type="text/plain; charset=utf-8")
        except OSError:  # the client went away (UnreadablePostError): the view's to answer
            return None
        return None
