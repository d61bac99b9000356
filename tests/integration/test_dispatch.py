"""The event path: dispatched after commit only, and never held up by the broker."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from datetime import timedelta

import pytest
import redis
from celery.signals import before_task_publish
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.test import Client
from django.utils import timezone

from publishing import dispatch
from publishing.dispatch import PUBLISH_TASK, UNPUBLISH_TASK
from publishing.models import Article, ArticleStatus
from publishing.services import catch_up
from tests.support.broker import broker
from tests.support.processes import ROOT, PrivateRedis, free_port
from tests.support.waiting import wait_for

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.broker,  # dispatch to the broker is the subject: runs again on RabbitMQ
]

# settings: socket connect/read timeouts of 0.5 s and one publish retry, so a save
# waits about 1-2 s for a broker that is down; the bound here is generous on purpose
# (shared machines are noisy), and still far from "hangs".
SAVE_BOUND_SECONDS = 10


def save_in_subprocess(slug: str, broker_url: str) -> dict:
    env = {**os.environ, "BLOGPUBLISH_TEST_BROKER": broker_url}
    out = subprocess.run(
        [sys.executable, "-m", "tests.support.save_article", slug],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def broker_url(scheme: str, port: int) -> str:
    return f"redis://127.0.0.1:{port}/0" if scheme == "redis" else f"amqp://127.0.0.1:{port}//"


# Both brokers: redis-py's socket timeouts and py-amqp's connect/read timeouts bound it.
@pytest.mark.parametrize("scheme", ["redis", "amqp"])
def test_save_with_broker_refusing_connections_returns_quickly_and_stays_pending(scheme):
    closed_port = free_port()  # nothing listens here

    result = save_in_subprocess(f"refused-{scheme}", broker_url(scheme, closed_port))

    assert result["seconds"] < SAVE_BOUND_SECONDS
    assert Article.objects.get(pk=result["id"]).status == ArticleStatus.PENDING


@pytest.mark.parametrize("scheme", ["redis", "amqp"])
def test_save_with_broker_that_never_answers_returns_in_bounded_time(scheme):
    with socket.socket() as black_hole:
        black_hole.bind(("127.0.0.1", 0))
        black_hole.listen(64)  # the kernel accepts connections; nobody ever replies
        port = black_hole.getsockname()[1]

        result = save_in_subprocess(f"silent-{scheme}", broker_url(scheme, port))

    assert result["seconds"] < SAVE_BOUND_SECONDS
    assert Article.objects.get(pk=result["id"]).status == ArticleStatus.PENDING


def test_rolled_back_transaction_dispatches_nothing(sent_tasks):
    with pytest.raises(RuntimeError), transaction.atomic():
        article = Article(title="Never committed", slug="never-committed", body="x")
        article.full_clean()
        article.save()
        raise RuntimeError("the view failed after saving")

    assert not Article.objects.filter(slug="never-committed").exists()
    assert sent_tasks == []


def test_dispatch_waits_for_the_commit(sent_tasks):
    with transaction.atomic():
        article = Article(title="Committed later", slug="committed-later", body="x")
        article.full_clean()
        article.save()
        assert sent_tasks == []  # saved, but not yet visible to any worker

    assert sent_tasks == [article.pk]


# --- the pooled connection and the breaker (issue 7) --------------------------------
# A private redis-server per test, which the test process is switched to: the test can
# count the connections it received, stop it, or freeze it, without touching the
# suite's Redis. No worker: the messages simply wait in the private Redis.


@pytest.fixture
def private_broker():
    redis_server = PrivateRedis(free_port()).start()
    try:
        with broker(redis_server.url):
            yield redis_server
    finally:
        redis_server.proc and redis_server.proc.signal(signal.SIGCONT)
        redis_server.stop()


@pytest.fixture
def send_attempts():
    """(task name, first argument) of every message this process tried to send: Celery
    signals each one before it goes to the broker, so a failed send counts too."""
    attempts: list[tuple[str, object]] = []

    def record(sender=None, body=None, **kwargs) -> None:
        args = body[0] if isinstance(body, tuple) else body.get("args", ())
        attempts.append((sender, args[0] if args else None))

    before_task_publish.connect(record, weak=False)
    yield attempts
    before_task_publish.disconnect(record)


def redis_client(redis_server: PrivateRedis) -> redis.Redis:
    return redis.Redis(port=redis_server.port, socket_timeout=5)


def connections_received(client: redis.Redis) -> int:
    return client.info("stats")["total_connections_received"]


def queued(client: redis.Redis) -> int:
    return client.llen(django_settings.CELERY_TASK_DEFAULT_QUEUE)


def test_saves_with_a_live_broker_share_one_pooled_connection(private_broker, make_article):
    client = redis_client(private_broker)
    before = connections_received(client)

    articles = [make_article() for _ in range(30)]

    assert queued(client) == len(articles)  # every save was sent...
    # ...on the process's pooled connection (a connection per save would be 30 or more;
    # a pooled kombu connection is two sockets, one of them for the first PING).
    assert connections_received(client) - before <= 3
    assert not dispatch.breaker_is_open()


def test_broker_down_costs_one_send_then_the_breaker_skips_it(
    private_broker, make_article, send_attempts, caplog
):
    private_broker.stop()  # the port now refuses connections

    started = time.monotonic()
    first = make_article()
    first_seconds = time.monotonic() - started
    rest = [make_article() for _ in range(20)]

    assert first_seconds < SAVE_BOUND_SECONDS
    # The broker was tried for the first save only; the other 20 skipped it.
    assert send_attempts == [(PUBLISH_TASK, first.pk)]
    assert dispatch.breaker_is_open()
    assert set(Article.objects.values_list("status", flat=True)) == {ArticleStatus.PENDING}
    assert Article.objects.count() == 1 + len(rest)
    unreachable = [r for r in caplog.records if "the broker is unreachable" in r.getMessage()]
    breaker_opened = [r for r in caplog.records if "skips the broker for" in r.getMessage()]
    assert len(unreachable) == 1
    assert len(breaker_opened) == 1


def test_silent_broker_costs_one_timeout_then_the_breaker_skips_it(
    private_broker, make_article, send_attempts
):
    client = redis_client(private_broker)
    before = connections_received(client)
    # Frozen: the kernel still accepts connections, nobody answers (a hung Redis).
    private_broker.proc.signal(signal.SIGSTOP)

    articles = [make_article() for _ in range(20)]

    assert len(send_attempts) == 1
    assert dispatch.breaker_is_open()
    private_broker.proc.signal(signal.SIGCONT)
    # Redis, thawed, accepts what waited in its backlog: the connections tried meanwhile.
    # Per-save connections would be 20 or more.
    tried = connections_received(client) - before
    assert tried in range(1, 5)
    assert all(a.status == ArticleStatus.PENDING for a in articles)


@pytest.mark.parametrize("action", ["requeue", "publish_now"])
def test_admin_action_over_many_rows_with_the_broker_down_tries_the_broker_once(
    private_broker, make_article, send_attempts, action
):
    articles = [make_article() for _ in range(15)]
    ids = [a.pk for a in articles]
    if action == "requeue":
        Article.objects.filter(pk__in=ids).update(status=ArticleStatus.DEAD)
    admin = get_user_model().objects.create_superuser("bulk", "bulk@example.com", "pw-123456")
    client = Client()
    client.force_login(admin)
    private_broker.stop()
    send_attempts.clear()

    response = client.post(
        "/admin/publishing/article/",
        {"action": action, "_selected_action": ids},
        follow=True,
    )

    assert response.status_code == 200
    assert len(send_attempts) == 1  # one row's send failed; the other 14 skipped it
    assert dispatch.breaker_is_open()
    assert Article.objects.filter(pk__in=ids, status=ArticleStatus.PENDING).count() == len(ids)


def test_bulk_delete_with_the_broker_down_tries_the_broker_once(
    private_broker, make_article, send_attempts
):
    ids = [make_article().pk for _ in range(15)]
    private_broker.stop()
    send_attempts.clear()

    Article.objects.filter(pk__in=ids).delete()  # as the admin's "delete selected" does

    assert send_attempts == [(UNPUBLISH_TASK, send_attempts[0][1])]
    assert send_attempts[0][1]["id"] in ids
    assert not Article.objects.filter(pk__in=ids).exists()


def test_after_the_breaker_window_a_broker_that_is_back_gets_the_sends_again(
    private_broker, make_article, settings
):
    settings.PUBLISH_DISPATCH_BREAKER_SECONDS = 1
    private_broker.stop()
    waiting = make_article()
    assert dispatch.breaker_is_open()

    private_broker.start()  # the same port, empty
    client = redis_client(private_broker)
    # Skipped while the breaker is open; the first try after its window goes through.
    wait_for(lambda: dispatch.dispatch_publish(waiting.pk), timeout=20, what="a send")

    assert not dispatch.breaker_is_open()
    make_article()
    assert queued(client) == 2  # the re-sent one and the new save's


def test_a_forked_child_makes_its_own_connection(private_broker, make_article):
    client = redis_client(private_broker)
    parent_article = make_article()  # the parent's pool now holds a connection
    before = connections_received(client)

    pid = os.fork()
    if pid == 0:  # the child: send once, and say whether it used a dispatcher of its own
        ok = dispatch.dispatch_publish(parent_article.pk)
        own = dispatch._dispatcher().pid == os.getpid()
        os._exit(0 if ok and own else 1)
    _, status = os.waitpid(pid, 0)

    assert os.waitstatus_to_exitcode(status) == 0
    assert connections_received(client) > before  # the child did not use the parent's
    assert dispatch.dispatch_publish(parent_article.pk)  # and the parent's still works
    assert queued(client) == 3


def test_a_broker_restarted_between_saves_gets_the_next_save(private_broker, make_article):
    make_article()  # the pool now holds a connection to the broker...
    private_broker.stop()
    private_broker.start()  # ...which the restart closed (the same port, empty)

    make_article()

    assert queued(redis_client(private_broker)) == 1  # the retry policy reconnected
    assert not dispatch.breaker_is_open()


def test_the_catch_up_tries_the_broker_even_while_the_breaker_is_open(
    private_broker, make_article, settings
):
    settings.PUBLISH_DISPATCH_BREAKER_SECONDS = 600  # open for the rest of the test
    private_broker.stop()
    article = make_article()
    assert dispatch.breaker_is_open()
    private_broker.start()  # back, long before the breaker's window ends
    past = timezone.now() - timedelta(seconds=settings.PUBLISH_STALE_AFTER + 5)
    Article.objects.filter(pk=article.pk).update(publish_at=past, updated_at=past)

    report = catch_up()

    # It runs once an interval: skipping it would leave the row for a whole interval.
    assert (report.stale_found, report.stale_sent) == (1, 1)
    assert queued(redis_client(private_broker)) == 1
    assert not dispatch.breaker_is_open()


# --- the same bounds on RabbitMQ ----------------------------------------------------


@pytest.mark.parametrize("failure", ["refused", "silent"])
def test_rabbitmq_unreachable_costs_one_send_then_the_breaker_skips_it(
    make_article, send_attempts, failure
):
    with socket.socket() as black_hole:
        black_hole.bind(("127.0.0.1", 0))
        if failure == "silent":
            black_hole.listen(64)  # accepts at the kernel; no AMQP handshake ever comes
        port = black_hole.getsockname()[1]  # "refused": bound, not listening

        with broker(f"amqp://guest:guest@127.0.0.1:{port}//"):
            started = time.monotonic()
            first = make_article()
            first_seconds = time.monotonic() - started
            rest = [make_article() for _ in range(10)]
            breaker_open = dispatch.breaker_is_open()

    assert first_seconds < SAVE_BOUND_SECONDS
    assert send_attempts == [(PUBLISH_TASK, first.pk)]  # the other 10 skipped the broker
    assert breaker_open
    ids = [first.pk, *(a.pk for a in rest)]
    assert Article.objects.filter(pk__in=ids, status=ArticleStatus.PENDING).count() == 11


# --- a group's broadcast of the messages it made needless (dispatch.discard_messages) ---


def window_over() -> bool:
    breaker = dispatch._dispatcher().breaker
    return breaker._open_until is not None and breaker._clock() >= breaker._open_until


def test_a_discard_leaves_the_breakers_trial_to_a_send(private_broker, make_article, settings):
    """A send failed while the broker was down: the breaker opened. Once the broker is
    back and the window is over, a group's broadcast (its first call to the broker in
    a worker) is skipped, not taken as the half-open trial: the next message is the
    trial, goes out, and closes the breaker. (A broadcast that took the trial never
    reported it, and every later group's follow-up message was skipped.)"""
    settings.PUBLISH_DISPATCH_BREAKER_SECONDS = 1
    private_broker.stop()
    waiting = make_article()  # its send fails: the breaker opens
    assert dispatch.breaker_is_open()
    private_broker.start()  # back (the same port, empty)

    wait_for(window_over, timeout=5, interval=0.05, what="the breaker's window to end")
    assert dispatch.discard_messages(["some-save-message-id"]) is False
    assert dispatch.dispatch_publish(waiting.pk) is True
    assert not dispatch.breaker_is_open()
    assert queued(redis_client(private_broker)) == 1
    assert dispatch.discard_messages(["some-save-message-id"]) is True
