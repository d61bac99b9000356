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
from django.db import OperationalError, connection, connections
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


def migrating(target: str, log: io.StringIO, failures: list[BaseException]) -> threading.Thread:
    """A thread (not started) that migrates the api app to `target`; what it raises is
    put in `failures` for the test's thread."""

    def migrate() -> None:
        try:
            call_command("migrate", "api", target, verbosity=0, stderr=log)
        except BaseException as exc:
            failures.append(exc)
        finally:
            connections.close_all()

    return threading.Thread(target=migrate, daemon=True)


def test_migrate__waits_at_most_its_lock_timeout_then_tries_again(settings):
    settings.MIGRATION_LOCK_TIMEOUT = 0.3
    settings.MIGRATION_LOCK_RETRIES = 100
    url = os.environ["DATABASE_URL"]
    call_command("migrate", "api", BEFORE, verbosity=0)
    log, failures = io.StringIO(), []
    thread = migrating(AFTER, log, failures)
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


CONCURRENT = "0003_name_index_concurrently"


def index_valid() -> bool | None:
    """Whether the concurrently built index is valid; None when it is not there."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass('api_token_name_cic')"
        )
        row = cursor.fetchone()
    return None if row is None else row[0]


def index_waited(*, seconds: float) -> bool:
    """The CREATE INDEX CONCURRENTLY has waited `seconds` for a lock, and waits still."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT 1 FROM pg_stat_activity WHERE query LIKE 'CREATE INDEX CONCURRENTLY%%'"
            " AND wait_event_type = 'Lock' AND now() - query_start > %s * interval '1 second'",
            [seconds],
        )
        return cursor.fetchone() is not None


def test_migrate__an_index_built_concurrently_waits_for_a_long_write(settings):
    """Review of issue 23: CREATE INDEX CONCURRENTLY (the migration check's way of
    indexing a hot table, atomic = False) waits for every transaction that wrote the
    table to end; that wait blocks no save or claim. Under the lock_timeout it failed
    instead ('not atomic … may be partly applied'), leaving an INVALID index behind
    that made every later `migrate` fail ('relation already exists')."""
    settings.MIGRATION_LOCK_TIMEOUT = 0.3
    settings.MIGRATION_MODULES = {"api": "tests.fixtures.migrations_concurrent_index"}
    url = os.environ["DATABASE_URL"]
    failures: list[BaseException] = []
    thread = migrating(CONCURRENT, io.StringIO(), failures)
    try:
        with psycopg.connect(url) as long_write, psycopg.connect(url, autocommit=True) as writer:
            # A transaction that wrote the table and goes on (a batch, a slow request):
            # the build waits for it to end.
            long_write.execute("UPDATE api_apitoken SET name = name")
            thread.start()
            wait_for(lambda: index_valid() is not None, timeout=30, what="the index begun")
            # Writers go on while it waits (its lock lets them through).
            writer.execute("SET statement_timeout = '20s'")
            writer.execute("UPDATE api_apitoken SET name = name")
            # Past several lock timeouts, the build still waits rather than failing.
            wait_for(
                lambda: bool(failures) or index_waited(seconds=1.5),
                timeout=30,
                what="the index build to wait 1.5 s",
            )
            assert not failures, failures
            long_write.rollback()
            thread.join(60)
        assert not thread.is_alive() and not failures, failures
        assert index_valid() is True
    finally:
        if thread.is_alive():
            thread.join(60)
        call_command("migrate", "api", AFTER, verbosity=0)  # drops the index
        settings.MIGRATION_MODULES = {}
        call_command("migrate", verbosity=0)


def test_migrate__gives_up_after_its_retries_saying_so_with_nothing_applied(settings):
    """Review of issue 23: the last timeout was raised as PostgreSQL's bare 'canceling
    statement due to lock timeout', which names no migration, no retry and no way on."""
    settings.MIGRATION_LOCK_TIMEOUT = 0.2
    settings.MIGRATION_LOCK_RETRIES = 1
    url = os.environ["DATABASE_URL"]
    call_command("migrate", "api", BEFORE, verbosity=0)
    try:
        with psycopg.connect(url) as long_reader:
            long_reader.execute("SELECT count(*) FROM api_apitoken")
            with pytest.raises(OperationalError) as raised:
                call_command("migrate", "api", AFTER, verbosity=0, stderr=io.StringIO())
        message = str(raised.value)
        assert f"api.{AFTER}" in message and "gave up after 2 tries" in message, message
        assert "pg_stat_activity" in message, message
        assert not applied(AFTER)
    finally:
        call_command("migrate", verbosity=0)
