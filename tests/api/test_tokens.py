"""Tokens are made by `manage.py api_token USERNAME` and in the admin, and revoked there."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management import CommandError, call_command
from django.test import Client

from api.models import ApiToken
from api.tokens import token_create
from tests.support.api import run_api_token, staff_user

TOKEN = re.compile(r"bp_[A-Za-z0-9_-]{40,}")


def works(token: str) -> bool:
    return (
        Client(headers={"Authorization": f"Bearer {token}"}).get("/api/articles").status_code == 200
    )


@pytest.mark.django_db
def test_api_token_prints_a_new_token_that_works(capsys):
    staff_user("editor")

    call_command("api_token", "editor", "--name", "ci job")

    token = capsys.readouterr().out.strip()
    assert TOKEN.fullmatch(token)
    assert works(token)
    assert ApiToken.objects.get().name == "ci job"


@pytest.mark.django_db
def test_each_run_makes_another_token(capsys):
    staff_user("editor")

    call_command("api_token", "editor")
    call_command("api_token", "editor")

    first, second = capsys.readouterr().out.split()
    assert first != second and works(first) and works(second)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("username", "message"),
    [
        ("nobody", "No user named 'nobody'"),
        ("reader", "not a staff user"),
        ("gone", "not an active user"),
    ],
)
def test_api_token_refuses_an_unknown_or_non_staff_user(username, message):
    get_user_model().objects.create_user("reader")
    get_user_model().objects.create_user("gone", is_staff=True, is_active=False)

    with pytest.raises(CommandError, match=message):
        call_command("api_token", username)

    assert ApiToken.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_api_token_exits_non_zero_with_the_reason_on_stderr():
    get_user_model().objects.create_user("reader")

    result = run_api_token("reader")

    assert result.returncode != 0
    assert "not a staff user" in result.stderr
    assert result.stdout == ""


@pytest.fixture
def admin_client(db):
    admin = get_user_model().objects.create_superuser("boss", "boss@example.com", "pw-123456")
    client = Client()
    client.force_login(admin)
    return client


def test_the_admin_makes_a_token_and_shows_it_once(admin_client):
    editor = staff_user("editor")

    response = admin_client.post(
        "/admin/api/apitoken/add/", {"user": editor.pk, "name": "newsroom", "scope": "write"}
    )

    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    token = TOKEN.search(response.content.decode()).group()
    assert works(token)
    row = ApiToken.objects.get()
    assert (row.user, row.name, row.scope) == (editor, "newsroom", "write")
    # Not shown again: the change page has its prefix only.
    page = admin_client.get(f"/admin/api/apitoken/{row.pk}/change/").content.decode()
    assert row.prefix in page and token not in page


def test_the_admin_refuses_a_token_for_a_non_staff_user(admin_client):
    reader = get_user_model().objects.create_user("reader")

    response = admin_client.post("/admin/api/apitoken/add/", {"user": reader.pk, "scope": "read"})

    assert response.status_code == 200  # the form again, with its error
    assert ApiToken.objects.count() == 0


def test_the_admin_revokes_a_token(admin_client, make_token):
    _user, token = make_token()
    row = ApiToken.objects.get()

    response = admin_client.post(
        "/admin/api/apitoken/", {"action": "revoke", "_selected_action": [row.pk]}, follow=True
    )

    assert response.status_code == 200
    assert not works(token)
    row.refresh_from_db()
    assert row.revoked_at is not None
    revoked = admin_client.get("/admin/api/apitoken/?state=revoked").content.decode()
    active = admin_client.get("/admin/api/apitoken/?state=active").content.decode()
    assert f"{row.prefix}…" in revoked and f"{row.prefix}…" not in active


def test_a_staff_user_who_is_no_superuser_reaches_their_own_tokens_only(make_token):
    """A clerk who might view, change and delete tokens saw every user's and revoked a
    superuser's (a review's finding): the list, a token's page, Revoke and Delete reach
    their own tokens only."""
    boss = staff_user("boss", is_superuser=True)
    theirs, boss_token = token_create(user=boss, scope="write")
    clerk, _token = make_token("clerk")
    clerk.user_permissions.add(
        *Permission.objects.filter(
            content_type__app_label="api",
            codename__in=["view_apitoken", "change_apitoken", "delete_apitoken"],
        )
    )
    mine = ApiToken.objects.get(user=clerk)
    client = Client()
    client.force_login(clerk)

    listing = client.get("/admin/api/apitoken/").content.decode()
    page = client.get(f"/admin/api/apitoken/{theirs.pk}/change/")
    revoke = {"action": "revoke", "_selected_action": [theirs.pk, mine.pk]}
    client.post("/admin/api/apitoken/", revoke)
    delete = {"action": "delete_selected", "_selected_action": [theirs.pk], "post": "yes"}
    client.post("/admin/api/apitoken/", delete)
    client.post(f"/admin/api/apitoken/{theirs.pk}/delete/", {"post": "yes"})

    assert f"{mine.prefix}…" in listing and f"{theirs.prefix}…" not in listing
    assert page.status_code == 302  # "does not exist", back to the list
    theirs.refresh_from_db()
    mine.refresh_from_db()
    assert theirs.revoked_at is None and works(boss_token)
    assert mine.revoked_at is not None
