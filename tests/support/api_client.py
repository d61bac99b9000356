"""A client of the HTTP API for tests outside tests/api (whose conftest has fixtures)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.test import Client

from api.tokens import token_create


def superuser_api_client(username: str) -> Client:
    """A client that sends the token of a new staff superuser (every permission)."""
    user = get_user_model().objects.create_user(username, is_staff=True, is_superuser=True)
    _row, token = token_create(user=user)
    return Client(headers={"Authorization": f"Bearer {token}"})
