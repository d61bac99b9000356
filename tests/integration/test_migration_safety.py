"""CI's check of every migration after the previous release (deploy/previous-release.json):
the SQL `sqlmigrate` prints for it on PostgreSQL takes no lock that stops saves and
claims for longer than an instant, and leaves the previous release's code working
(tests/support/migration_safety.py has the rules; docs/operations.md, "Upgrades")."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.loader import MigrationLoader
from django.test.utils import CaptureQueriesContext

from tests.integration.test_site_builder import site  # noqa: F401  (the fixture)
from tests.support.migration_safety import (
    GRANDFATHERED,
    ROOT,
    Context,
    accepted,
    hot_tables,
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
        problems += [
            f"{migration.app_label}.{migration.name} [{rule}] {what}"
            for rule, what in found
            if rule not in accepted(migration)
        ]
    assert not problems, "\n".join(problems)


def test_previous_release__its_schema_is_known():
    """The check has something to compare with: the previous release's tables."""
    columns = previous_columns(MigrationExecutor(connection))
    assert {"publishing_article", "publishing_publishattempt"} <= set(columns)
    assert "content_hash" in columns["publishing_article"]


def test_grandfathered__names_migrations_that_are_here():
    on_disk = MigrationLoader(None, ignore_no_migrations=True).disk_migrations
    assert {f"{app}.{name}" for app, name in on_disk} >= set(GRANDFATHERED)


# A write to a table, after any WITH: the table it names.
_WRITE = re.compile(
    r'^\s*(?:WITH\b.*?\)\s*)?(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+"?(\w+)"?', re.I | re.S
)


def test_hot_tables__every_table_a_save_or_a_publish_writes(site, settings):  # noqa: F811
    """A lock on a table that a save, a claim, a publisher's step or an outcome writes
    stops every save or every publish while it is held: each such table is hot. Tags, a
    byline and the webhook on, so each is written; the refresh pass the outcome asks for
    (its own task, run here in this thread) is not part of the publish."""
    settings.PUBLISH_PUBLISHERS = [
        "blogpublish.site.StaticSitePublisher",
        "blogpublish.webhooks.WebhookPublisher",
    ]
    settings.PUBLISH_WEBHOOK_URL = "http://127.0.0.1:9/hook"
    settings.PUBLISH_WEBHOOK_SECRET = "s" * 32
    with CaptureQueriesContext(connection) as queries:
        site.attempt(site.save(tags=["one", "two"], byline="Ann"))
    written: set[str] = set()
    for query in queries.captured_queries:
        if re.match(r'\s*UPDATE\s+"publishing_refresher"\s+SET\s+"lease_expires_at"', query["sql"]):
            break  # the refresh pass takes its lease
        if m := _WRITE.match(query["sql"]):
            written.add(m.group(1))
    assert {"publishing_article", "publishing_tag", "publishing_webhookdelivery"} <= written
    assert written <= hot_tables(), written - hot_tables()
