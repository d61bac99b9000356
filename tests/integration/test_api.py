"""The HTTP API with real parts: an article posted to it is published by a real worker,
a requeue through it publishes a dead one, and a POST with the broker down answers in
bounded time with the article pending, for the catch-up to send."""

from __future__ import annotations

import json
import signal
import time
from datetime import timedelta

import pytest
import redis
from django.conf import settings
from django.test import Client

from publishing import dispatch
from publishing.models import Article, ArticleStatus
from publishing.services import catch_up
from tests.support.broker import broker
from tests.support.processes import PrivateRedis, free_port
from tests.support.waiting import wait_for
from work.brokers import REDIS, dispatch_transport_options

pytestmark = pytest.mark.django_db(transaction=True)

# What one dispatch to a broker that is down may cost (config/settings.py): a connect
# timeout of the sends' transport options per try (work/brokers.py; the tests' stopped
# broker is a private Redis), one retry. The bound the test
# holds the POST to is that with a generous margin for a loaded machine, as
# tests/integration/test_dispatch.py does for a save: far from "hangs", and still a
# bound the bounded wait must keep.
TRIES = 1 + settings.CELERY_TASK_PUBLISH_RETRY_POLICY["max_retries"]
DISPATCH_BOUND = TRIES * dispatch_transport_options(REDIS)["socket_connect_timeout"]
POST_BOUND_SECONDS = 10 * DISPATCH_BOUND


@pytest.fixture
def api_client(make_token) -> Client:
    return Client(headers={"Authorization": f"Bearer {make_token('integration')[1]}"})


def post_article(client: Client, **fields) -> dict:
    response = client.post("/api/articles", json.dumps(fields), content_type="application/json")
    assert response.status_code == 201, response.content
    return response.json()


def wait_api_status(client: Client, article_id: int, status: str, timeout: float = 45.0) -> dict:
    def reached():
        data = client.get(f"/api/articles/{article_id}").json()
        return data if data["status"] == status else None

    return wait_for(reached, timeout=timeout, what=f"article {article_id} to be {status}")


def test_an_article_posted_to_the_api_is_published_by_the_worker(worker, api_client):
    created = post_article(api_client, title="From a program", body="Posted **via** the API.")

    published = wait_api_status(api_client, created["id"], "published")

    assert published["published_at"] is not None
    assert published["attempts"] == 1 and published["last_error"] == ""
    page = settings.SITE_ROOT / created["slug"] / "index.html"
    assert "<strong>via</strong>" in page.read_text(encoding="utf-8")


def test_a_dead_article_requeued_through_the_api_is_published(worker, api_client, chaos):
    chaos("api-requeue", fail="permanent")
    created = post_article(api_client, title="Fails first", body="x", slug="api-requeue")
    dead = wait_api_status(api_client, created["id"], "dead")
    assert dead["last_error"]

    chaos("api-requeue")  # the cause is fixed
    response = api_client.post(f"/api/articles/{created['id']}/requeue")

    assert response.status_code == 200
    assert wait_api_status(api_client, created["id"], "published")["last_error"] == ""


@pytest.fixture
def stopped_private_broker():
    """This process pointed at a private redis-server that the test has stopped (the
    port refuses connections), and started again at the end of the test."""
    redis_server = PrivateRedis(free_port()).start()
    try:
        with broker(redis_server.url):
            redis_server.stop()
            yield redis_server
    finally:
        redis_server.proc and redis_server.proc.signal(signal.SIGCONT)
        redis_server.stop()


def test_a_post_with_the_broker_down_answers_in_bounded_time_and_stays_pending(
    stopped_private_broker, api_client
):
    started = time.monotonic()
    response = api_client.post(
        "/api/articles",
        json.dumps({"title": "During the outage", "body": "x"}),
        content_type="application/json",
    )
    seconds = time.monotonic() - started

    assert response.status_code == 201
    assert seconds < POST_BOUND_SECONDS
    assert response.json()["status"] == "pending"
    article = Article.objects.get(pk=response.json()["id"])
    assert article.status == ArticleStatus.PENDING
    assert dispatch.breaker_is_open()

    # The broker is back: the catch-up sends the row (it tries past the breaker).
    stopped_private_broker.start()
    past = article.publish_at - timedelta(seconds=settings.PUBLISH_STALE_AFTER + 5)
    Article.objects.filter(pk=article.pk).update(publish_at=past, updated_at=past)
    report = catch_up()

    assert (report.stale_found, report.stale_sent) == (1, 1)
    queued = redis.Redis(port=stopped_private_broker.port, socket_timeout=5)
    assert queued.llen(settings.CELERY_TASK_DEFAULT_QUEUE) == 1
