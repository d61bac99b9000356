"""Two `manage.py migrate` at once on one fresh PostgreSQL database (several web
replicas, each migrating as it starts): the second waits for the first's advisory lock,
then finds nothing to do (work/management/commands/migrate.py). Both read the plan
before either applied it, and the second died with `column … already exists` (a
review's finding). SQLite has one host and one writer: PostgreSQL only."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import psycopg
import pytest
from django.db import connection

from tests.support.databases import fresh_database
from tests.support.processes import ROOT
from tests.support.waiting import wait_for
from work.management.commands.migrate import MIGRATE_LOCK_KEY

pytestmark = [
    pytest.mark.system,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="advisory locks: PostgreSQL's"),
]


@pytest.fixture
def database() -> Iterator[str]:
    with fresh_database("bp_migrate") as url:
        yield url


def test_two_migrates_at_once_both_succeed(database, tmp_path):
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DEBUG": "1",
        "DATABASE_URL": database,
        "SITE_ROOT": str(tmp_path / "site"),
    }
    command = [sys.executable, "manage.py", "migrate", "--no-input", "-v", "0"]
    errs = [tmp_path / f"migrate-{n}.err" for n in range(2)]
    with psycopg.connect(database, autocommit=True) as holder:
        # Held here until both wait, so that both start together however the two
        # interpreters' start-ups fall; released, one migrates and the other waits, while
        # the first builds publishing 0033's index CONCURRENTLY (a rehearsal found the
        # two deadlocked there: the waiter's statement was a transaction it waited for).
        holder.execute("SELECT pg_advisory_lock(%s)", [MIGRATE_LOCK_KEY])
        runs = []
        for err in errs:
            with err.open("wb") as stderr:  # the child keeps its own copy
                runs.append(
                    subprocess.Popen(
                        command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=stderr
                    )
                )
        try:
            wait_for(
                lambda: (
                    all(b"another migrate is running" in err.read_bytes() for err in errs)
                    or any(r.poll() is not None for r in runs)
                ),
                timeout=120,
                what="both migrates to wait for the lock",
            )
        finally:
            holder.execute("SELECT pg_advisory_unlock(%s)", [MIGRATE_LOCK_KEY])
        for run in runs:
            run.wait(timeout=300)
        outcomes = [(err.read_bytes(), run.returncode) for err, run in zip(errs, runs, strict=True)]

    for err, code in outcomes:
        assert code == 0, err.decode()[-3000:]
        assert b"another migrate is running; waiting" in err
    with psycopg.connect(database) as conn:
        twice = conn.execute(
            "SELECT app, name FROM django_migrations GROUP BY app, name HAVING count(*) > 1"
        ).fetchall()
    assert twice == []


def test_a_plan_or_a_check_does_not_wait_behind_a_migrate(database, tmp_path):
    """Reads only: a readiness check or a CI gate (`--plan`, `--check`) waited for as
    long as a migrate ran (a review of the mend)."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DEBUG": "1",
        "DATABASE_URL": database,
        "SITE_ROOT": str(tmp_path / "site"),
    }
    with psycopg.connect(database, autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(%s)", [MIGRATE_LOCK_KEY])  # a migrate running
        for option in ("--plan", "--check"):
            run = subprocess.run(
                [sys.executable, "manage.py", "migrate", option, "-v", "0"],
                cwd=ROOT,
                env=env,
                capture_output=True,
                timeout=120,  # a deadline for a test that would otherwise hang
            )
            assert b"another migrate is running" not in run.stderr, option
            # --check: unapplied migrations (a new database) exit 1, after saying so.
            assert run.returncode in (0, 1), run.stderr.decode()[-2000:]
