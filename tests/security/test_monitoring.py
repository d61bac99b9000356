"""Who may watch the pipeline over HTTP: /status.json shows dead articles' titles and
errors, so it wants the permission to view articles; /metrics (counts only) wants the
METRICS_TOKEN bearer, or, without a token, a scraper on this host.

Issue 8: any staff user (and, in DEBUG, anyone) saw /status.json; METRICS_TOKEN opened
it too; a bare token without `Bearer ` passed; /metrics was open to every address.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User

pytestmark = pytest.mark.django_db

TOKEN = "scrape-token-0123456789"
OUTSIDE = "203.0.113.7"


@pytest.fixture
def staff_user():
    def make(*permissions: str) -> User:
        user = User.objects.create_user(f"staff-{User.objects.count()}", is_staff=True)
        for codename in permissions:
            user.user_permissions.add(Permission.objects.get(codename=codename))
        return user

    return make


def test_status_json__anonymous_is_refused_in_debug_too(client, settings):
    settings.DEBUG = True

    assert client.get("/status.json").status_code == 401


def test_status_json__staff_without_the_article_permission_is_forbidden(client, staff_user):
    client.force_login(staff_user("view_publishattempt"))

    assert client.get("/status.json").status_code == 403


def test_status_json__a_user_who_may_view_articles_sees_it(client, staff_user):
    client.force_login(staff_user("view_article"))

    response = client.get("/status.json")

    assert response.status_code == 200
    assert "counts" in response.json()


def test_status_json__the_metrics_token_is_no_key_to_it(client, settings):
    settings.METRICS_TOKEN = TOKEN

    response = client.get("/status.json", headers={"Authorization": f"Bearer {TOKEN}"})

    assert response.status_code == 401


@pytest.mark.parametrize(
    ("authorization", "status"),
    [
        (f"Bearer {TOKEN}", 200),
        (f"bearer {TOKEN}", 200),  # the scheme is case-insensitive (RFC 9110)
        (TOKEN, 401),  # a bare token
        (f"Token {TOKEN}", 401),
        (f"Bearer {TOKEN}x", 401),
        ("Bearer ", 401),
        (None, 401),
    ],
)
def test_metrics__with_a_token_only_its_bearer(client, settings, authorization, status):
    settings.METRICS_TOKEN = TOKEN
    headers = {"Authorization": authorization} if authorization is not None else {}

    response = client.get("/metrics", headers=headers, REMOTE_ADDR=OUTSIDE)

    assert response.status_code == status
    if status == 200:
        assert b"blogpublish_articles" in response.content


def test_metrics__a_passphrase_token_with_spaces_inside_is_matched(client, settings):
    """The start-up check takes a token with spaces inside (config/checks.py): it is sent
    and matched whole, as it was before the check."""
    settings.METRICS_TOKEN = passphrase = "correct horse battery staple orbit"
    headers = {"Authorization": f"Bearer {passphrase}"}

    response = client.get("/metrics", headers=headers, REMOTE_ADDR=OUTSIDE)

    assert response.status_code == 200


def test_metrics__with_a_token_loopback_needs_it_too(client, settings):
    settings.METRICS_TOKEN = TOKEN

    assert client.get("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 401


@pytest.mark.parametrize(
    ("remote_addr", "headers", "status"),
    [
        ("127.0.0.1", {}, 200),
        ("::1", {}, 200),
        (OUTSIDE, {}, 403),
        ("10.0.0.2", {}, 403),
        # a proxy on this host: REMOTE_ADDR is loopback, the request is not from here
        ("127.0.0.1", {"X-Forwarded-For": OUTSIDE}, 403),
        ("127.0.0.1", {"Forwarded": f"for={OUTSIDE}"}, 403),
    ],
)
def test_metrics__without_a_token_only_from_this_host(
    client, settings, remote_addr, headers, status
):
    settings.METRICS_TOKEN = ""
    settings.DEBUG = False

    response = client.get("/metrics", headers=headers, REMOTE_ADDR=remote_addr)

    assert response.status_code == status


def test_metrics__without_a_token_in_debug_from_anywhere(client, settings):
    settings.METRICS_TOKEN = ""
    settings.DEBUG = True

    assert client.get("/metrics", REMOTE_ADDR=OUTSIDE).status_code == 200


@pytest.mark.parametrize("path", ["/healthz", "/metrics", "/status.json"])
def test_head_is_answered_as_get_without_a_body_and_post_is_not(path, client, settings, staff_user):
    # a monitor's HEAD got 405 (require_GET: a review's finding)
    settings.DEBUG = True  # /metrics from the test client's address
    client.force_login(staff_user("view_article"))

    head = client.head(path)

    assert head.status_code == 200 and head.content == b""
    assert client.post(path).status_code == 405


def test_status_json__a_querys_own_error_is_a_500_not_the_database_unavailable(
    client, staff_user, monkeypatch
):
    """Only a database that cannot be reached is a 503: a query's own error (a bug, a
    deploy without migrate) was called "the database is unavailable", without its
    traceback (a review's finding)."""
    from django.db import ProgrammingError

    from publishing import views

    def broken(**_kwargs):
        raise ProgrammingError('column "x" does not exist')

    monkeypatch.setattr(views, "pipeline_status", broken)
    client.force_login(staff_user("view_article"))
    client.raise_request_exception = False

    assert client.get("/status.json").status_code == 500
