"""The api app's migrations say what its models say (a model change without its
migration would fail here, not at a deployment's migrate)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor


@pytest.mark.django_db
def test_every_apps_models_have_their_migrations():
    """Every app's, not the API's alone: the validators added to publishing's text
    fields went without their migration (no SQL, but the next
    makemigrations would have carried them into an unrelated one)."""
    out = StringIO()

    call_command("makemigrations", "--check", "--dry-run", stdout=out)

    assert "No changes detected" in out.getvalue()


@pytest.mark.django_db(transaction=True)
def test_tokens_made_before_scopes_become_write_tokens_and_new_ones_are_read():
    """An upgrade breaks no program: the tokens that exist keep writing."""
    before, after = ("api", "0001_initial"), ("api", "0002_apitoken_scope_existing_tokens_write")
    try:
        executor = MigrationExecutor(connection)
        executor.migrate([before])
        old = executor.loader.project_state([before]).apps
        user = old.get_model("auth", "User").objects.create(username="old-program", is_staff=True)
        old.get_model("api", "ApiToken").objects.create(user=user, prefix="bp_old", digest="0" * 64)

        executor = MigrationExecutor(connection)
        executor.migrate([after])
        tokens = executor.loader.project_state([after]).apps.get_model("api", "ApiToken").objects

        assert tokens.get().scope == "write"
        assert tokens.create(user_id=user.pk, prefix="bp_new", digest="1" * 64).scope == "read"
    finally:  # the schema every later test expects
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
