"""Queue lengths from the run's broker: Redis in the SQLite and PostgreSQL runs,
RabbitMQ (a passive queue declare) in the RabbitMQ run (scripts/test.sh)."""

from __future__ import annotations

import uuid

import pytest
from kombu import Queue

from config.celery import app
from publishing.broker_status import queue_message_counts
from tests.support.broker import broker
from tests.support.processes import free_port

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.broker,  # the broker's queue lengths are the subject: runs again on RabbitMQ
]


@pytest.fixture
def idle_queues(settings):
    """Two queues of this test's own, which no worker consumes."""
    name = f"bp-test-{settings.RUN_ID}-idle-{uuid.uuid4().hex[:6]}"
    queues = (Queue(name), Queue(f"{name}.never-declared"))
    settings.CELERY_TASK_QUEUES = queues
    with app.connection_for_write() as conn:
        queues[0].bind(conn.default_channel).declare()
    yield queues
    with app.connection_for_write() as conn:
        queues[0].bind(conn.default_channel).delete()


def test_waiting_messages_are_counted_per_queue(idle_queues):
    waiting, never_declared = idle_queues
    with app.producer_or_acquire() as producer:
        for n in range(3):
            app.send_task(
                "publishing.tasks.publish_article", (n,), queue=waiting, producer=producer
            )

    counts = queue_message_counts()

    assert counts == {waiting.name: 3, never_declared.name: 0}


def test_metrics_list_the_queue_lengths(idle_queues, client, settings):
    settings.DEBUG = True  # /metrics without a token answers anyone in DEBUG
    waiting, _ = idle_queues
    with app.producer_or_acquire() as producer:
        app.send_task("publishing.tasks.publish_article", (1,), queue=waiting, producer=producer)

    body = client.get("/metrics").content.decode()

    assert f'blogpublish_queue_messages{{queue="{waiting.name}"}} 1.0' in body


def test_healthz_reports_the_runs_broker(client):
    response = client.get("/healthz")

    assert response.status_code == 200
    assert response.json() == {"database": "ok", "broker": "ok"}


@pytest.mark.parametrize("scheme", ["redis", "amqp"])
def test_healthz_with_the_broker_down_still_answers_200(client, settings, scheme):
    port = free_port()  # nothing listens here
    url = f"redis://127.0.0.1:{port}/0" if scheme == "redis" else f"amqp://127.0.0.1:{port}//"
    settings.CELERY_BROKER_URL = url
    with broker(url):
        response = client.get("/healthz")

    assert response.status_code == 200  # saves work without it; the catch-up sends later
    assert response.json()["broker"].startswith("unreachable")


@pytest.mark.parametrize("scheme", ["redis", "amqp"])
def test_a_broker_that_refuses_is_reported_without_waiting_between_tries(
    settings, scheme, monkeypatch
):
    """The dashboard and /metrics read the queue lengths at every request: with the
    broker down, kombu's default wait of 2 s before its retry made each take 2-3 s."""
    import kombu.utils.functional

    slept: list[float] = []
    monkeypatch.setattr(kombu.utils.functional, "sleep", slept.append)
    port = free_port()  # nothing listens here
    url = f"redis://127.0.0.1:{port}/0" if scheme == "redis" else f"amqp://127.0.0.1:{port}//"
    settings.CELERY_BROKER_URL = url
    with broker(url), pytest.raises(Exception) as refused:
        queue_message_counts(timeout=1)

    assert not isinstance(refused.value, AssertionError)
    assert sum(slept) == 0, slept
