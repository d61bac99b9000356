"""Who gets an API token, and of which scope (issue 19, 1): a staff user with no
permission on articles gets none (the command exits non-zero and says why, the admin's
form says why; nothing is stored); a new token is read-only unless write is asked for."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management import CommandError, call_command

from api.models import ApiToken, TokenScope
from tests.support.api import (
    ADD,
    ADD_STORY,
    ARTICLE_PERMISSIONS,
    bearer,
    run_api_token,
    staff_user,
)

pytestmark = pytest.mark.django_db

NO_PERMISSION = "has no permission on articles"


def new_token(capsys) -> str:
    return capsys.readouterr().out.strip()


def create(token: str, **fields):
    return bearer(token).post(
        "/api/articles",
        json.dumps({"title": "By token", "body": "x", **fields}),
        content_type="application/json",
    )


@pytest.mark.parametrize("scope", [[], ["--scope", "read"], ["--scope", "write"]])
def test_api_token_refuses_a_staff_user_without_any_permission_on_articles(scope):
    staff_user("idle", perms=[])

    with pytest.raises(CommandError, match=NO_PERMISSION):
        call_command("api_token", "idle", *scope)

    assert ApiToken.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_api_token_without_permission_exits_non_zero_saying_why_and_prints_no_token():
    staff_user("idle", perms=[])

    result = run_api_token("idle", "--scope", "write")

    assert result.returncode != 0
    assert "No token made" in result.stderr and NO_PERMISSION in result.stderr
    assert result.stdout == ""
    assert ApiToken.objects.count() == 0


def test_a_read_token_is_refused_to_a_user_who_may_not_view(capsys):
    """It could do nothing; a write token of the same user can create (a draft, with the
    stories' permission to add: one that goes out needs the permission to change
    articles too)."""
    staff_user("importer", perms=[ADD, ADD_STORY])

    with pytest.raises(CommandError, match="A read token of importer could do nothing"):
        call_command("api_token", "importer", "--scope", "read")
    assert ApiToken.objects.count() == 0

    call_command("api_token", "importer", "--scope", "write")
    assert create(new_token(capsys), status="draft").status_code == 201


def test_an_unknown_scope_is_refused():
    staff_user("editor")

    with pytest.raises(CommandError, match="invalid choice: 'admin'"):
        call_command("api_token", "editor", "--scope", "admin")

    assert ApiToken.objects.count() == 0


def test_a_new_token_is_read_only_unless_write_is_asked_for(capsys):
    staff_user("editor")

    call_command("api_token", "editor")
    default = new_token(capsys)
    call_command("api_token", "editor", "--scope", "write")
    write = new_token(capsys)

    # Only the token on stdout, as scripts take it.
    assert default.startswith("bp_") and write.startswith("bp_")
    assert sorted(ApiToken.objects.values_list("scope", flat=True)) == ["read", "write"]
    assert bearer(default).get("/api/articles").status_code == 200
    assert create(default).status_code == 403
    assert create(write).status_code == 201


# admin_client: pytest-django's, a logged-in superuser.


@pytest.mark.parametrize(
    ("perms", "scope", "message"),
    [
        ([], "write", NO_PERMISSION),
        ([ADD], "read", "could do nothing"),
    ],
)
def test_the_admin_refuses_a_token_that_could_do_nothing(admin_client, perms, scope, message):
    user = staff_user("idle", perms=perms)

    response = admin_client.post("/admin/api/apitoken/add/", {"user": user.pk, "scope": scope})

    assert response.status_code == 200  # the form again, saying why
    assert message in response.content.decode()
    assert ApiToken.objects.count() == 0


def test_the_admin_makes_a_token_of_the_scope_chosen_and_lists_it(admin_client, make_token):
    user = staff_user("editor", perms=ARTICLE_PERMISSIONS)

    response = admin_client.post("/admin/api/apitoken/add/", {"user": user.pk, "scope": "read"})

    assert response.status_code == 200
    assert "scope <strong>read</strong>" in response.content.decode()
    make_token(scope="write")
    read, write = (f'<td class="field-scope">{s.label}</td>' for s in TokenScope)
    listing = admin_client.get("/admin/api/apitoken/").content.decode()
    assert listing.count(read) == 1 and listing.count(write) == 1
    only_write = admin_client.get("/admin/api/apitoken/?scope__exact=write").content.decode()
    assert write in only_write and read not in only_write


def test_a_token_maker_who_is_no_superuser_makes_tokens_for_themselves_only(client):
    """Found by the issue 19 review: a staff user allowed to add tokens made one for a
    superuser, and with it deleted articles through the API."""
    boss = get_user_model().objects.create_superuser("boss", password="pw-of-the-boss-1")
    maker = staff_user("maker", perms=["view_article"], password="pw-of-the-maker-1")
    maker.user_permissions.add(Permission.objects.get(codename="add_apitoken"))
    client.force_login(maker)

    response = client.post("/admin/api/apitoken/add/", {"user": boss.pk, "scope": "write"})

    assert response.status_code == 200  # the form again, with the choice refused
    assert "Select a valid choice" in response.content.decode()
    assert not ApiToken.objects.filter(user=boss).exists()
    mine = client.post("/admin/api/apitoken/add/", {"user": maker.pk, "scope": "read"})
    assert mine.status_code == 200 and ApiToken.objects.filter(user=maker).count() == 1
