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
        ("put", "/api/articles", {"GET", "POST"}),
        ("options", "/api/articles/1", {"GET", "PATCH", "DELETE"}),
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
