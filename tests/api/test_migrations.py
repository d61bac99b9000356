"""The api app's migrations say what its models say (a model change without its
migration would fail here, not at a deployment's migrate)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command


@pytest.mark.django_db
def test_the_api_models_have_their_migrations():
    out = StringIO()

    call_command("makemigrations", "api", "--check", "--dry-run", stdout=out)

    assert "No changes detected" in out.getvalue()
