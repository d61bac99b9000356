"""`manage.py migrate` that never stops the blog while it waits for a lock (issue 23).

On PostgreSQL an `ALTER TABLE` needs an ACCESS EXCLUSIVE lock. While it waits for one
(behind a long read, a claim's transaction, a `pg_dump`), every save and claim of that
table queues behind the waiting ALTER: a migration that waits a minute stops the blog
for a minute, though the ALTER itself takes milliseconds. So each statement waits at
most MIGRATION_LOCK_TIMEOUT seconds (`SET lock_timeout`, set before every migration,
so a connection made again keeps it); a migration that timed out is rolled back whole
(it is atomic) and tried again after a pause, up to MIGRATION_LOCK_RETRIES times. What
the migrations may do once they hold a lock (no rewrite, no scan under ACCESS
EXCLUSIVE, backfills in batches outside the DDL) is held by the CI check of new
migrations (tests/integration/test_migration_safety.py).

A statement that builds or drops an index CONCURRENTLY waits with no lock_timeout: its
lock (SHARE UPDATE EXCLUSIVE) lets every read and write through, and it waits for the
transactions that wrote the table to end. Under the timeout it failed at the first
transaction longer than MIGRATION_LOCK_TIMEOUT and left an INVALID index of that name,
which made every later run fail ("already exists").

A non-atomic migration (a batched backfill) that times out may be partly applied: it is
not tried again, and the error says so.

Two at once (several web replicas, each migrating as it starts) take turns: the run
holds a session-level advisory lock of a fixed key (MIGRATE_LOCK_KEY) from before it
reads which migrations are applied until it ends, so the second waits for the first
(trying the lock every LOCK_POLL_SECONDS, with no transaction open between tries, so
that the first's CREATE INDEX CONCURRENTLY, which waits for every transaction older
than its index, does not wait for it), then finds nothing to do. Both read the plan
before either applied it, and the second died with `column … already exists`.

Elsewhere (SQLite: one writer, one host) this is Django's `migrate`.
"""

from __future__ import annotations

import contextlib
import random
import re
import time

from django.conf import settings
from django.core.management.base import CommandError
from django.core.management.commands.migrate import Command as DjangoMigrate
from django.db import DatabaseError, OperationalError, connections
from django.db.migrations import Migration

from work.db import advisory_key, database_unreachable

# PostgreSQL's SQLSTATE for "lock_timeout expired" (lock_not_available).
LOCK_NOT_AVAILABLE = "55P03"

# The advisory lock one `migrate` at a time holds, the same on every host.
MIGRATE_LOCK_KEY = advisory_key("migrate", "schema")


# Statements whose wait for a lock blocks no read or write of the table.
CONCURRENTLY = re.compile(
    r"^\s*(?:CREATE\s+(?:UNIQUE\s+)?INDEX|DROP\s+INDEX|REINDEX\s+\w+)\s+CONCURRENTLY\b", re.I
)


# How often a migrate waiting for another's end tries the lock again.
LOCK_POLL_SECONDS = 0.5


def is_lock_timeout(exc: BaseException) -> bool:
    """Whether `exc` (or what it wraps) is PostgreSQL's lock_not_available."""
    cause: BaseException | None = exc
    while cause is not None:
        if getattr(cause, "sqlstate", None) == LOCK_NOT_AVAILABLE:
            return True
        if getattr(cause, "pgcode", None) == LOCK_NOT_AVAILABLE:
            return True
        cause = cause.__cause__
    return False


def pause_before(retry: int) -> float:
    """Seconds to wait before retry `retry` (1, 2, …): 0.5, 1, 2 … up to 10, jittered,
    so two deploys, or the long reader that held the lock, get out of each other's way."""
    return random.uniform(0.5, 1.0) * min(10.0, 0.5 * 2 ** (retry - 1))


class Command(DjangoMigrate):
    help = (
        DjangoMigrate.help + " On PostgreSQL each statement waits at most "
        "MIGRATION_LOCK_TIMEOUT seconds for its lock; a migration that timed out is rolled "
        "back and tried again (MIGRATION_LOCK_RETRIES)."
    )

    def handle(self, *args, **options):
        problem = database_unreachable(options["database"])
        if problem:  # one line, not Django's traceback from deep in the loader
            raise CommandError(f"no database answers at {problem}")
        self._connection = connections[options["database"]]
        self._current: Migration | None = None
        if options.get("plan") or options.get("check_unapplied"):
            # Reads only: a readiness check or a CI gate never waits behind a migrate
            # that runs (it did, for as long: a review of the mend).
            return self._migrate(*args, **options)
        with self._one_at_a_time():
            return self._migrate(*args, **options)

    @contextlib.contextmanager
    def _one_at_a_time(self):
        """MIGRATE_LOCK_KEY held for the whole run, waited for as long as another run
        holds it (no lock_timeout: it is set after). A session lock: the migrations'
        own transactions neither need nor end it; a connection lost lets it go."""
        if self._connection.vendor != "postgresql":
            yield
            return
        said = False
        with self._connection.cursor() as cursor:
            # Tried again and again, not waited for in one statement: a waiting statement
            # is a transaction, which the holder's CREATE INDEX CONCURRENTLY waits for
            # to end, and PostgreSQL ended one of the two as a deadlock (a rehearsal of
            # publishing 0033). Between tries this session has no transaction open.
            while True:
                cursor.execute("SELECT pg_try_advisory_lock(%s)", [MIGRATE_LOCK_KEY])
                if cursor.fetchone()[0]:
                    break
                if not said:
                    self.stderr.write("migrate: another migrate is running; waiting for it to end")
                    said = True
                time.sleep(LOCK_POLL_SECONDS)
        try:
            yield
        finally:
            if self._connection.connection is not None:
                with contextlib.suppress(DatabaseError), self._connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_unlock(%s)", [MIGRATE_LOCK_KEY])

    def _migrate(self, *args, **options):
        retry = 0
        while True:
            self._set_lock_timeout()
            try:
                with self._connection.execute_wrapper(self._concurrently_unbounded):
                    return super().handle(*args, **options)
            except OperationalError as exc:
                migration, self._current = self._current, None
                if not is_lock_timeout(exc):
                    raise
                if migration is not None and not migration.atomic:
                    raise OperationalError(
                        f"{migration.app_label}.{migration.name} is not atomic and waited "
                        f"over MIGRATION_LOCK_TIMEOUT={settings.MIGRATION_LOCK_TIMEOUT}s for "
                        "a lock: it may be partly applied, so it is not tried again. Make "
                        "its steps idempotent, then run `migrate` again."
                    ) from exc
                retry += 1
                if retry > settings.MIGRATION_LOCK_RETRIES:
                    raise OperationalError(
                        f"migrate: {self._name(migration)} waited over "
                        f"{settings.MIGRATION_LOCK_TIMEOUT}s for a lock and gave up after "
                        f"{retry} tries ({exc}); it was rolled back, none of it is applied. "
                        "A long transaction holds a table it alters: find it in "
                        "pg_stat_activity (xact_start), let it end, and run migrate again."
                    ) from exc
                pause = pause_before(retry)
                self.stderr.write(
                    f"migrate: {self._name(migration)} waited over "
                    f"{settings.MIGRATION_LOCK_TIMEOUT}s for a lock ({exc}); rolled back, "
                    f"trying again in {pause:.1f}s (retry {retry} of "
                    f"{settings.MIGRATION_LOCK_RETRIES})"
                )
                time.sleep(pause)
            finally:
                self._reset_lock_timeout()

    def migration_progress_callback(self, action, migration=None, fake=False):
        if action in ("apply_start", "unapply_start"):
            self._current = migration
            self._set_lock_timeout()  # a connection made again since has the default
        elif action in ("apply_success", "unapply_success"):
            self._current = None
        super().migration_progress_callback(action, migration, fake)

    @staticmethod
    def _name(migration: Migration | None) -> str:
        return f"{migration.app_label}.{migration.name}" if migration else "a statement"

    def _set_lock_timeout(self) -> None:
        if self._connection.vendor != "postgresql":
            return
        with self._connection.cursor() as cursor:
            cursor.execute(f"SET lock_timeout = {self._milliseconds()}")

    def _concurrently_unbounded(self, execute, sql, params, many, context):
        """A CONCURRENTLY statement runs with no lock_timeout, the others with it."""
        if self._connection.vendor != "postgresql" or not CONCURRENTLY.match(str(sql)):
            return execute(sql, params, many, context)
        cursor = context["cursor"]  # (its statements come through here too: not matched)
        cursor.execute("SET lock_timeout = 0")
        try:
            return execute(sql, params, many, context)
        finally:
            with contextlib.suppress(DatabaseError):  # (a failed transaction: rolled back)
                cursor.execute(f"SET lock_timeout = {self._milliseconds()}")

    @staticmethod
    def _milliseconds() -> int:
        return max(1, round(settings.MIGRATION_LOCK_TIMEOUT * 1000))

    def _reset_lock_timeout(self) -> None:
        """A caller's connection (call_command in a process that goes on) gets its own
        setting back."""
        if self._connection.vendor != "postgresql" or self._connection.connection is None:
            return
        if self._connection.in_atomic_block:
            return
        # (After a failure the connection may be gone: the failure is what to report.)
        with contextlib.suppress(DatabaseError), self._connection.cursor() as cursor:
            cursor.execute("RESET lock_timeout")
