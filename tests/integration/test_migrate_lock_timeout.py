"""`manage.py migrate` waits at most MIGRATION_LOCK_TIMEOUT for a lock, and tries again
(work/management/commands/migrate.py): a migration stuck behind a long reader never
makes the readers and writers that come after it wait too. PostgreSQL only (its
lock_timeout); on SQLite the command is Django's."""

from __future__ import annotations

import io
import os
import threading

import psycopg
import pytest
from django.core.management import call_command
from django.db import connection, connections
from django.db.migrations.recorder import MigrationRecorder

from tests.support.waiting import wait_for

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="lock_timeout: PostgreSQL's"),
]

BEFORE, AFTER = "0001_initial", "0002_apitoken_scope_existing_tokens_write"


def applied(name: str) -> bool:
    return MigrationRecorder(connection).migration_qs.filter(app="api", name=name).exists()


def alter_waits() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT 1 FROM pg_locks WHERE NOT granted AND mode = 'AccessExclusiveLock'"
            " AND relation = 'api_apitoken'::regclass"
        )
        return cursor.fetchone() is not None


def test_migrate__waits_at_most_its_lock_timeout_then_tries_again(settings):
    settings.MIGRATION_LOCK_TIMEOUT = 0.3
    settings.MIGRATION_LOCK_RETRIES = 100
    url = os.environ["DATABASE_URL"]
    call_command("migrate", "api", BEFORE, verbosity=0)
    log, failures = io.StringIO(), []

    def migrate() -> None:
        try:
            call_command("migrate", "api", AFTER, verbosity=0, stderr=log)
        except BaseException as exc:  # reported by the test's thread
            failures.append(exc)
        finally:
            connections.close_all()

    thread = threading.Thread(target=migrate, daemon=True)
    try:
        # A long reader (a report, a pg_dump) holds the table the migration alters.
        with psycopg.connect(url) as long_reader, psycopg.connect(url, autocommit=True) as reader:
            long_reader.execute("SELECT count(*) FROM api_apitoken")
            thread.start()
            wait_for(alter_waits, timeout=30, interval=0.01, what="the ALTER to wait for its lock")

            # A request now is not queued behind the ALTER for as long as the long
            # reader runs: the ALTER gives its place up at each lock timeout. (Its own
            # deadline: a statement_timeout, so a request stuck in the queue fails.)
            reader.execute("SET statement_timeout = '20s'")
            try:
                reader.execute("SELECT count(*) FROM api_apitoken")
            except psycopg.errors.QueryCanceled:
                pytest.fail("a reader waited 20 s behind the migration's ALTER")
            assert not applied(AFTER)
            wait_for(lambda: "waited over 0.3s" in log.getvalue(), timeout=30, what="a retry")

            long_reader.rollback()  # the long reader ends: the next try goes through
            thread.join(60)
        assert not thread.is_alive() and not failures, failures
        assert applied(AFTER)
    finally:  # the schema every later test expects
        if thread.is_alive():
            thread.join(60)
        call_command("migrate", verbosity=0)
