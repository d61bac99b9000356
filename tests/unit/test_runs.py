"""Which run runs a test (tests/support/runs.py): each test runs where its database or
broker can change its outcome, and in at least one of the runs."""

from __future__ import annotations

import pytest

from tests.support.runs import Candidate, not_in_this_run, of_item

SQLITE, POSTGRES, RABBITMQ = "sqlite", "postgres", "rabbitmq"
RUNS = {
    SQLITE: ("sqlite", "redis"),
    POSTGRES: ("postgresql", "redis"),
    RABBITMQ: ("postgresql", "amqp"),
}


# What scripts/test.sh gives the RabbitMQ run (the other runs get every test).
RABBITMQ_PATHS = ("tests/integration/", "tests/system/")


def runs_of(test: Candidate) -> set[str]:
    return {
        run
        for run, (database, broker) in RUNS.items()
        if not_in_this_run(test, database=database, broker=broker) is None
        and (run != RABBITMQ or test.path.startswith(RABBITMQ_PATHS))
    }


@pytest.mark.parametrize(
    ("path", "uses_database", "uses_worker", "markers", "runs"),
    [
        # A pure function: once.
        ("tests/unit/test_x.py", False, False, (), {SQLITE}),
        # A database in-process: the subject may differ between the two databases.
        ("tests/unit/test_x.py", True, False, (), {SQLITE, POSTGRES}),
        ("tests/security/test_x.py", True, False, (), {SQLITE, POSTGRES}),
        # A subprocess on the run's database (bench/operator_views.py).
        ("tests/unit/test_x.py", False, False, ("each_database",), {SQLITE, POSTGRES}),
        # In-process against the database, nothing consumed from the broker.
        ("tests/integration/test_x.py", True, False, (), {SQLITE, POSTGRES}),
        # The session's worker: the broker carries the test's messages.
        ("tests/integration/test_x.py", True, True, (), {SQLITE, POSTGRES, RABBITMQ}),
        # A worker of the module's own, or messages as the subject.
        ("tests/integration/test_x.py", True, False, ("broker",), {SQLITE, POSTGRES, RABBITMQ}),
        # No database, the broker's queues as the subject.
        ("tests/integration/test_x.py", False, False, ("broker",), {SQLITE, RABBITMQ}),
        # System tests: once, on PostgreSQL, also those with a database of their own
        # (test_image.py) and those that skip themselves outside RabbitMQ's run.
        ("tests/system/test_x.py", True, True, ("system",), {POSTGRES, RABBITMQ}),
        ("tests/system/test_x.py", True, False, ("system",), {POSTGRES, RABBITMQ}),
        ("tests/system/test_x.py", False, False, ("system",), {POSTGRES, RABBITMQ}),
        # ... unless SQLite-specific.
        (
            "tests/system/test_x.py",
            True,
            False,
            ("system", "sqlite_too"),
            {SQLITE, POSTGRES, RABBITMQ},
        ),
        # Browser tests (live_server: a database): once, on SQLite, unless the database
        # decides the outcome.
        ("tests/browser/test_x.py", True, False, (), {SQLITE}),
        ("tests/browser/test_x.py", True, False, ("each_database",), {SQLITE, POSTGRES}),
    ],
)
def test_each_kind_of_test_runs_where_it_can_change(
    path, uses_database, uses_worker, markers, runs
):
    test = Candidate(
        path=path, uses_database=uses_database, uses_worker=uses_worker, markers=frozenset(markers)
    )
    assert runs_of(test) == runs


@pytest.mark.parametrize(
    "path",
    ["tests/unit/t.py", "tests/integration/t.py", "tests/system/t.py", "tests/browser/t.py"],
)
@pytest.mark.parametrize("uses_database", [False, True])
@pytest.mark.parametrize("uses_worker", [False, True])
@pytest.mark.parametrize("markers", [(), ("broker",), ("each_database",), ("sqlite_too",)])
def test_every_test_runs_in_one_of_the_redis_runs(path, uses_database, uses_worker, markers):
    test = Candidate(
        path=path, uses_database=uses_database, uses_worker=uses_worker, markers=frozenset(markers)
    )
    assert runs_of(test) & {SQLITE, POSTGRES}


def test_a_test_without_a_database_is_seen_as_one(request):
    assert of_item(request.node).uses_database is False


def test_a_test_with_a_database_is_seen_as_one(request, db):
    found = of_item(request.node)
    assert found.uses_database is True
    assert found.path == "tests/unit/test_runs.py"


@pytest.mark.django_db
def test_a_test_marked_django_db_is_seen_as_using_one(request):
    assert of_item(request.node).uses_database is True
