"""The API's test users, tokens and clients, for every suite that calls the API
(tests/api, tests/security, tests/integration): registered as a plugin by tests/conftest.py.

A staff user gets the permissions asked for (by default every one the API checks: the
four on articles and the stories' add, change and delete, which drafts need; what the
API's tests of its rules need), and a token of the scope asked for (by default write)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterable

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client

from api.models import TokenScope
from api.tokens import token_create
from tests.support.processes import ROOT

ADD, CHANGE, DELETE, VIEW = "add_article", "change_article", "delete_article", "view_article"
ADD_STORY, CHANGE_STORY, DELETE_STORY = "add_story", "change_story", "delete_story"
CHANGE_DELIVERY = "change_webhookdelivery"
# The permissions the API checks (api.permissions.ARTICLE_PERMISSIONS), by codename (the
# app label is "publishing"): the articles', the stories' that drafts need, and the
# webhook deliveries' that their requeue needs.
ARTICLE_PERMISSIONS = (
    ADD,
    CHANGE,
    DELETE,
    VIEW,
    ADD_STORY,
    CHANGE_STORY,
    DELETE_STORY,
    CHANGE_DELIVERY,
)


def article_permissions(codenames: Iterable[str]) -> list[Permission]:
    codenames = list(codenames)
    found = list(
        Permission.objects.filter(content_type__app_label="publishing", codename__in=codenames)
    )
    assert sorted(p.codename for p in found) == sorted(codenames), codenames
    return found


def grant(user, *codenames: str) -> None:
    """Give `user` these permissions of the publishing app (codenames)."""
    user.user_permissions.add(*article_permissions(codenames))


def staff_user(username: str | None = None, *, perms=ARTICLE_PERMISSIONS, **fields):
    """A new active staff user with the publishing permissions `perms` (codenames)."""
    fields.setdefault("is_staff", True)
    user = get_user_model().objects.create_user(
        username or f"writer-{uuid.uuid4().hex[:8]}", **fields
    )
    grant(user, *perms)
    return user


def bearer(token: str) -> Client:
    """A client that sends `token` (and, like any program, no CSRF token)."""
    return Client(enforce_csrf_checks=True, headers={"Authorization": f"Bearer {token}"})


def run_api_token(*args: str) -> subprocess.CompletedProcess:
    """`manage.py api_token ARGS…` in a process of its own, on the test database (which
    the test must have committed: a transactional test): its exit status and output."""
    return subprocess.run(
        [sys.executable, "manage.py", "api_token", *args],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def make_token(db):
    """make_token(username=None, *, perms=ARTICLE_PERMISSIONS, scope="write", **user_fields)
    -> (user, token) for a new staff user."""

    def make(
        username: str | None = None,
        *,
        perms=ARTICLE_PERMISSIONS,
        scope: str = TokenScope.WRITE,
        **fields,
    ):
        user = staff_user(username, perms=perms, **fields)
        _row, token = token_create(user=user, scope=scope)
        return user, token

    return make


@pytest.fixture
def token(make_token) -> str:
    return make_token()[1]


@pytest.fixture
def api(token) -> Client:
    """A client that sends a write token of a user with every permission on articles."""
    return bearer(token)
