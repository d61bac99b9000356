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


def test_head_is_answered_as_get_without_the_body(api):
    """RFC 9110: a server that takes GET takes HEAD (django-ninja answered 405)."""
    got = api.get("/api/articles")
    head = api.head("/api/articles")

    assert got.status_code == head.status_code == 200
    assert head.content == b""
    assert head["Content-Length"] == str(len(got.content)) != "0"
    assert head["Content-Type"] == got["Content-Type"]


@pytest.mark.parametrize(
    ("path", "status"),
    [("/api/articles/987654", 404), ("/api/articles/abc", 400), ("/api/nothing-here", 404)],
)
def test_head_of_what_get_refuses_is_refused_alike(api, path, status):
    assert api.get(path).status_code == api.head(path).status_code == status
    assert api.head(path).content == b""


def test_head_needs_the_token_get_needs():
    assert Client().head("/api/articles").status_code == Client().get("/api/articles").status_code
    assert Client().head("/api/articles").status_code == 401


def test_head_of_an_address_without_get_is_a_405_with_its_allow():
    response = Client().head("/api/articles/1/publish")

    assert response.status_code == 405
    assert response["Allow"] == "POST"
    assert response.content == b""
