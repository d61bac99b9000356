"""Fixtures shared by every suite: real processes, factories, and log tails on failure."""

from __future__ import annotations

import uuid

import pytest
from celery.signals import before_task_publish

from publishing.models import Article
from tests.support import processes
from tests.support.chaos import write_chaos


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


@pytest.fixture(scope="session")
def worker(django_db_setup, django_db_blocker):
    """One real `celery worker` (prefork, concurrency 2) for the session's database."""
    proc = processes.start_worker()
    yield proc
    proc.stop()


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


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and report.failed:
        for proc in processes.STARTED[-6:]:
            report.sections.append((f"log of {proc.name} (pid {proc.pid})", proc.tail()))
