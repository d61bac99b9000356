"""CI's check of every migration after the previous release (deploy/previous-release.json):
the SQL `sqlmigrate` prints for it on PostgreSQL takes no lock that stops saves and
claims for longer than an instant, and leaves the previous release's code working
(tests/support/migration_safety.py has the rules; docs/operations.md, "Upgrades")."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tests.support.migration_safety import (
    ROOT,
    Context,
    previous_release,
    python_problems,
    statement_problems,
)

pytestmark = [
    pytest.mark.django_db(transaction=True),  # CONCURRENTLY refuses a transaction
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the SQL PostgreSQL runs"),
]


def project_apps() -> set[str]:
    from django.apps import apps

    return {c.label for c in apps.get_app_configs() if ROOT in Path(c.path).parents}


def new_migrations(executor: MigrationExecutor) -> list:
    """The project's migrations the previous release did not have, in the order
    `migrate` applies them."""
    released = previous_release()["migrations"]
    ours = project_apps()
    plan = executor.loader.graph.forwards_plan
    order = []
    for leaf in executor.loader.graph.leaf_nodes():
        for key in plan(leaf):
            if key[0] in ours and key[1] not in released.get(key[0], []) and key not in order:
                order.append(key)
    return [executor.loader.graph.nodes[key] for key in order]


def previous_columns(executor: MigrationExecutor) -> dict[str, set[str]]:
    released = previous_release()["migrations"]
    nodes = [(app, names[-1]) for app, names in released.items()]
    state = executor.loader.project_state(nodes, at_end=True)
    return {
        model._meta.db_table: {f.column for f in model._meta.concrete_fields}
        for model in state.apps.get_models()
    }


def test_new_migrations__take_no_lock_that_stops_the_blog_and_keep_the_old_code_working():
    executor = MigrationExecutor(connection)
    columns = previous_columns(executor)
    problems = []
    for migration in new_migrations(executor):
        statements = executor.loader.collect_sql([(migration, False)])
        context = Context(previous_columns=columns)
        found = statement_problems(statements, context) + python_problems(migration)
        accepted = getattr(migration, "deploy_accepted", {})
        problems += [
            f"{migration.app_label}.{migration.name} [{rule}] {what}"
            for rule, what in found
            if rule not in accepted
        ]
    assert not problems, "\n".join(problems)


def test_previous_release__its_schema_is_known():
    """The check has something to compare with: the previous release's tables."""
    columns = previous_columns(MigrationExecutor(connection))
    assert {"publishing_article", "publishing_publishattempt"} <= set(columns)
    assert "content_hash" in columns["publishing_article"]
