"""Which of CI's three runs runs a test (scripts/test.sh: SQLite, PostgreSQL, and
tests/integration and the RabbitMQ system tests on RabbitMQ with PostgreSQL; the
PostgreSQL and RabbitMQ runs each go in two processes, split by path).

A test runs again in another run only where that run's database or broker can change
its outcome; elsewhere it is deselected (never deleted: each one runs in at least one
run, tests/unit/test_runs.py holds it), and the run's summary says how many and why:

- A test that uses no database in-process (no `django_db` marker, no database fixture)
  runs in the SQLite run only: the PostgreSQL run would repeat it unchanged. Unless it
  is marked `each_database` (a process it starts uses the run's database), or it is a
  system test (those choose for themselves, below).
- A system test (tests/system: real processes, kills, outages) runs once, in the
  PostgreSQL run, the database of more than one host; unless marked `sqlite_too`
  (SQLite-specific). A module that needs another run says so with its own skipif
  (test_rabbitmq.py: the RabbitMQ run only).
- A browser test (tests/browser: a page driven in Chromium, against a live server)
  runs in the SQLite run only: what it checks is the pages and the desk's scripts,
  which the database does not change, and the pipeline under them is tested on both
  databases by the integration and system tests. Unless it is marked `each_database`
  (a race whose outcome is the database's: two saves of a draft at once).
- In the RabbitMQ run, an integration test runs only when it depends on the broker: it
  uses the session's worker (the `worker` fixture), or is marked `broker` (it starts a
  worker of its own, or its subject is the messages: dispatch, queue lengths, Flower).

docs/testing.md has the reasons and the time each run takes.
"""

from __future__ import annotations

from dataclasses import dataclass

NO_DATABASE = "uses no database: runs in the SQLite run"
SYSTEM = "system test: runs once, in the PostgreSQL run"
NO_BROKER = "integration test that does not depend on the broker: runs in the Redis runs"
BROWSER = "browser test: runs in the SQLite run"


@dataclass(frozen=True, kw_only=True)
class Candidate:
    """What the rules look at in a collected test."""

    path: str  # relative to the repository, e.g. "tests/unit/test_x.py"
    uses_database: bool
    uses_worker: bool
    markers: frozenset[str]


def of_item(item) -> Candidate:
    """A collected pytest item as a Candidate. Every database fixture of pytest-django (db,
    transactional_db, live_server's) depends on `django_db_setup`, and so does the
    session's worker."""
    markers = frozenset(mark.name for mark in item.iter_markers())
    return Candidate(
        path=item.nodeid.split("::", 1)[0],
        uses_database="django_db" in markers or "django_db_setup" in item.fixturenames,
        uses_worker="worker" in item.fixturenames,
        markers=markers,
    )


def not_in_this_run(test: Candidate, *, database: str, broker: str) -> str | None:
    """Why `test` is left out of the run on `database` ("sqlite" or "postgresql") and
    `broker` ("redis" or "amqp"), or None when it runs there."""
    system = test.path.startswith("tests/system/")
    if broker == "amqp":
        depends = test.uses_worker or "broker" in test.markers
        if test.path.startswith("tests/integration/") and not depends:
            return NO_BROKER
        return None
    if database == "sqlite" and system and "sqlite_too" not in test.markers:
        return SYSTEM
    if (
        database == "postgresql"
        and test.path.startswith("tests/browser/")
        and "each_database" not in test.markers
    ):
        return BROWSER
    if (
        database == "postgresql"
        and not system
        and not test.uses_database
        and "each_database" not in test.markers
    ):
        return NO_DATABASE
    return None
