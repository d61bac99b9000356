"""Fixtures shared by every suite: real processes, factories, and log tails on failure."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from celery.signals import before_task_publish
from django.utils import timezone

from publishing.models import READER_FIELDS, Article, content_hash_of
from tests.support import processes
from tests.support.chaos import write_chaos

# The API's users, tokens and clients (make_token, token, api), for every suite.
pytest_plugins = ["tests.support.api"]


@pytest.fixture(scope="session", autouse=True)
def _run_cleanup(request):
    """Leave nothing of this run behind: its queues and bindings in the broker (every
    key naming the run id), and, when every test passed, its directory of logs."""
    yield
    import contextlib
    import shutil

    import redis
    from django.conf import settings

    # On RabbitMQ the run's vhost holds everything, and scripts/test.sh deletes it.
    if settings.BROKER_KIND == "redis":
        with contextlib.suppress(redis.RedisError):
            client = redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_timeout=5)
            keys = list(client.scan_iter(match=f"*bp-test-{settings.RUN_ID}*", count=500))
            if keys:
                client.delete(*keys)
    if request.session.testsfailed == 0:
        shutil.rmtree(settings.RUN_DIR, ignore_errors=True)


SESSION_WORKER: dict = {}  # the session's worker, once a test started it, and its queues


@pytest.fixture(scope="session")
def worker(django_db_setup, django_db_blocker):
    """One real `celery worker` (prefork, concurrency 2) for the session's database."""
    from django.conf import settings

    proc = processes.start_worker()
    SESSION_WORKER.update(proc=proc, queues=[q.name for q in settings.CELERY_TASK_QUEUES])
    yield proc
    SESSION_WORKER.clear()
    proc.stop()


@pytest.fixture(autouse=True)
def _session_worker_idle_before_flush(request):
    """A test on a transactional database ends with the database emptied (a TRUNCATE of
    every table). The session's worker, once started, takes every message sent to the
    session's queues, by any test: an article saved, a catch-up's sends, a batch, a
    retry, a deferred pass of the shared views. Work a test set off and did not wait
    for (it asserted on the dispatch, not the outcome) would run during the TRUNCATE:
    on PostgreSQL the worker's transaction and the TRUNCATE each hold a table the other
    wants (`deadlock detected`), or its rows would land in the next test's database. So
    before the flush the worker must be idle (tests/support/settling.py)."""
    marker = request.node.get_closest_marker("django_db")
    transactional = "transactional_db" in request.fixturenames or (
        marker is not None and marker.kwargs.get("transaction", False)
    )
    if not transactional:
        yield
        return
    # Requested from here, the database's teardown (the flush) comes after this one's.
    request.getfixturevalue("transactional_db")
    yield
    _wait_session_worker_idle(watchdogs=False)


def _wait_session_worker_idle(*, watchdogs: bool) -> None:
    """The session's worker, if started and alive, idle (tests/support/settling.py)."""
    proc = SESSION_WORKER.get("proc")
    if proc is not None and proc.alive():
        from tests.support.settling import worker_is_idle
        from tests.support.waiting import wait_for

        wait_for(
            lambda: worker_is_idle(proc, SESSION_WORKER["queues"], watchdogs=watchdogs),
            timeout=60,
            what="the session's worker to be idle before the database is emptied",
        )


def pytest_configure(config):
    """A flush the session's worker raced (a watchdog of a pass, come due as the TRUNCATE
    ran, can deadlock with it on PostgreSQL) is tried once more, once the worker is idle,
    watchdogs included; its cause is printed so that a run says what the worker did. A
    flush that fails twice fails the test as before."""
    import sys

    from django.core.management.base import CommandError
    from django.test import TransactionTestCase

    flush = TransactionTestCase._fixture_teardown

    def _fixture_teardown(self):
        try:
            flush(self)
        except CommandError as exc:
            print(f"\nthe flush failed ({exc.__cause__!r}); once more", file=sys.stderr)
            _wait_session_worker_idle(watchdogs=True)
            flush(self)

    TransactionTestCase._fixture_teardown = _fixture_teardown


@pytest.fixture(scope="session")
def s3_server():
    """A real S3-compatible HTTP server (moto's server mode) on a free port, for the
    session; stopped by its PID (tests/support/s3.py)."""
    from tests.support.s3 import S3Server

    server = S3Server(port=processes.free_port()).start()
    yield server
    server.stop()


@pytest.fixture
def make_article(transactional_db):
    """make_article(**fields) -> a saved, validated Article with a unique slug."""

    def make(**fields) -> Article:
        fields.setdefault("title", f"Article {uuid.uuid4().hex[:8]}")
        fields.setdefault("slug", f"a-{uuid.uuid4().hex[:12]}")
        fields.setdefault("body", "Some *Markdown* text.")
        article = Article(**fields)
        article.full_clean()
        article.save()
        return article

    return make


@pytest.fixture
def quiet_article(transactional_db):
    """quiet_article(slug=None, **fields) -> a due article saved without the save's
    dispatch (bulk_create sends no post_save): no worker of the session takes it until
    the test (or the catch-up it runs) sends or claims it."""

    def make(slug: str | None = None, **fields) -> Article:
        slug = slug or fields.pop("slug", None) or f"quiet-{uuid.uuid4().hex[:8]}"
        values = {"title": slug, "slug": slug, "body": "Body."} | fields
        past = timezone.now().replace(microsecond=0) - timedelta(seconds=1)
        values.setdefault("publish_at", past)
        hashed = ("title", "slug", "body", "publish_at", *READER_FIELDS)
        values["content_hash"] = content_hash_of(
            **{name: values[name] for name in hashed if name in values}
        )
        return Article.objects.bulk_create([Article(**values)])[0]

    return make


@pytest.fixture
def chaos():
    """chaos(slug, **rule): make the ChaosPublisher misbehave for that slug."""
    rules: dict = {}

    def set_rule(slug: str, **rule) -> None:
        if rule:
            rules[slug] = rule
        else:
            rules.pop(slug, None)
        write_chaos(rules)

    yield set_rule
    write_chaos({})


@pytest.fixture
def sent_tasks():
    """The ids of articles this process sent to the broker, as Celery reports them."""
    sent: list = []

    def record(sender=None, body=None, headers=None, **kwargs) -> None:
        if sender == "publishing.tasks.publish_article":
            args = body[0] if isinstance(body, tuple) else body.get("args", ())
            sent.append(args[0])

    before_task_publish.connect(record, weak=False)
    yield sent
    before_task_publish.disconnect(record)


LEFT_OUT: dict[str, int] = {}  # reason -> how many tests this run left to another


def pytest_collection_modifyitems(config, items):
    """Each test in the runs where its database or broker can change its outcome
    (tests/support/runs.py); the others are deselected, and counted in the summary."""
    from django.conf import settings
    from django.db import connection

    from tests.support.runs import not_in_this_run, of_item

    keep, leave = [], []
    for item in items:
        why = not_in_this_run(
            of_item(item), database=connection.vendor, broker=settings.BROKER_KIND
        )
        if why is None:
            keep.append(item)
        else:
            leave.append(item)
            LEFT_OUT[why] = LEFT_OUT.get(why, 0) + 1
    if leave:
        config.hook.pytest_deselected(items=leave)
        items[:] = keep


def pytest_terminal_summary(terminalreporter):
    if LEFT_OUT:
        terminalreporter.section("run in another run (tests/support/runs.py)")
        for why, count in sorted(LEFT_OUT.items()):
            terminalreporter.write_line(f"{count:5d}  {why}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and report.failed:
        for proc in processes.STARTED[-6:]:
            report.sections.append((f"log of {proc.name} (pid {proc.pid})", proc.tail()))
