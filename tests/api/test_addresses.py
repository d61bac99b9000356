"""What the API answers outside its own routes: an address it does not have, a method
an address does not take. JSON in the API's shape (docs/api.md), never the blog's pages
(a review's findings: a POST to `/api/articles/` got the site's CSRF page, a PUT
Django's plain "Method not allowed")."""

from __future__ import annotations

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("post", "/api/articles/"),  # the slash: the API's addresses have none
        ("get", "/api/articles/1/"),
        ("get", "/api/nothing-here"),
        ("delete", "/api"),
    ],
)
def test_an_address_the_api_does_not_have_is_its_json_404(method, path):
    client = Client(enforce_csrf_checks=True)
    response = client.generic(method.upper(), path, "{}", content_type="application/json")

    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert set(body) == {"detail", "errors"} and path in body["detail"]
    if path.endswith("/"):
        assert f"({path.rstrip('/')})" in body["detail"]


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("put", "/api/articles", {"GET", "HEAD", "POST"}),
        ("options", "/api/articles/1", {"GET", "HEAD", "PATCH", "DELETE"}),
        ("delete", "/api/articles/1/publish", {"POST"}),
    ],
)
def test_a_method_an_address_does_not_take_is_a_json_405_naming_those_it_takes(
    method, path, allowed
):
    response = getattr(Client(), method)(path)

    assert response.status_code == 405
    assert response["Content-Type"] == "application/json"
    assert set(response["Allow"].replace(" ", "").split(",")) == allowed
    assert set(response.json()) == {"detail", "errors"}
    assert method.upper() in response.json()["detail"]


def _served(method: str, path: str, token: str | None = None) -> tuple[int, dict, bytes]:
    """(status, headers, body) as the project's WSGI application gives them to a
    server: Django's test client drops a HEAD's body itself, which would hide one."""
    from django.core.handlers.wsgi import WSGIHandler
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections
    from django.test import RequestFactory

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    environ = RequestFactory(headers=headers).generic(method, path).environ
    started: dict = {}

    def start_response(status, response_headers, exc_info=None):
        started.update(status=int(status.split()[0]), headers=dict(response_headers))

    # The test's database connection stays open, as the test client keeps it.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        response = WSGIHandler()(environ, start_response)
        body = b"".join(response)
        response.close()
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)
    return started["status"], started["headers"], body


def test_head_is_answered_as_get_without_the_body(token):
    """RFC 9110: a server that takes GET takes HEAD (django-ninja answered 405)."""
    got = _served("GET", "/api/articles", token)
    head = _served("HEAD", "/api/articles", token)

    assert got[0] == head[0] == 200
    assert head[2] == b""
    assert head[1]["Content-Length"] == str(len(got[2])) != "0"
    assert head[1]["Content-Type"] == got[1]["Content-Type"]


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/api/articles/987654", 404),
        ("/api/articles/abc", 400),
        ("/api/nothing-here", 404),
        ("/api", 404),  # the API's 404 too (config/urls.py), not the site's
    ],
)
def test_head_of_what_get_refuses_is_refused_alike(token, path, status):
    assert _served("GET", path, token)[0] == status
    assert _served("HEAD", path, token)[0::2] == (status, b"")


def test_head_needs_the_token_get_needs():
    assert _served("HEAD", "/api/articles")[0::2] == (401, b"")
    assert _served("GET", "/api/articles")[0] == 401


def test_head_of_an_address_without_get_is_a_405_with_its_allow():
    status, headers, body = _served("HEAD", "/api/articles/1/publish")

    assert status == 405
    assert headers["Allow"] == "POST"
    assert body == b""


def test_head_of_a_streamed_answer_sends_no_body():
    """No API address streams today; one that does (an export) must not send its whole
    body to a HEAD (a review's suspicion): the middleware alone, with such an answer."""
    from django.http import StreamingHttpResponse
    from django.test import RequestFactory

    from api.middleware import HeadAsGet

    seen = []

    def streamed(request):
        seen.append(request.method)
        return StreamingHttpResponse(iter([b"a" * 10, b"b" * 10]))

    response = HeadAsGet(streamed)(RequestFactory().head("/api/export"))

    assert seen == ["GET"]
    assert b"".join(response.streaming_content) == b""
