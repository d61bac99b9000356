"""Fixtures of the API tests: a staff user's token and clients that send it."""

from __future__ import annotations

import uuid

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from api.tokens import token_create


@pytest.fixture
def make_token(db):
    """make_token(username=None, **user_fields) -> (user, token) for a new staff user."""

    def make(username: str | None = None, **fields):
        fields.setdefault("is_staff", True)
        user = get_user_model().objects.create_user(
            username or f"writer-{uuid.uuid4().hex[:8]}", **fields
        )
        _row, token = token_create(user=user)
        return user, token

    return make


@pytest.fixture
def token(make_token) -> str:
    return make_token()[1]


@pytest.fixture
def api(token) -> Client:
    """A client that sends a valid token (and, like any program, no CSRF token)."""
    return Client(enforce_csrf_checks=True, headers={"Authorization": f"Bearer {token}"})
