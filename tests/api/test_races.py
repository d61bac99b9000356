"""Requests that meet another at the same moment (a review's findings): a DELETE and a
withdraw, a requeue and a delete. Real threads on the real database, each request on a
connection of its own; deterministic: one request is held at the point the review found,
the other runs meanwhile, then the held one goes on."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from django.db import connection
from django.test import Client

from api import endpoints
from publishing.models import Article, ArticleStatus, DeliveryStatus, Story, WebhookDelivery
from publishing.services.stories import story_publish, story_save

pytestmark = pytest.mark.django_db(transaction=True)

ARTICLES = "/api/articles"
# Where a request is held while the other runs: in a transaction on PostgreSQL only
# (on SQLite the held one's BEGIN IMMEDIATE takes the one writer's lock, and the other
# could only wait for it).
POSTGRESQL_ONLY = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="held inside a transaction"
)


def call(token: str, method: str, path: str) -> int:
    """A request on a connection of its own: its status (an error raised: its repr)."""
    try:
        client = Client(headers={"Authorization": f"Bearer {token}"})
        return getattr(client, method)(path).status_code
    finally:
        connection.close()


def held_at(
    monkeypatch,
    owner,
    name: str | tuple[str, ...],
    request: Callable[[], object],
    other: Callable[[], object],
    *,
    when: Callable[[str, dict], bool] = lambda name, kwargs: True,
):
    """`request()` in a thread, held when it first calls `owner.name` (one of the names;
    `when(name, kwargs)` says which calls count) until `other()` has run on a connection
    of its own; then it goes on. (What request() returned, or the repr of its error;
    what other() returned.)"""
    reached, go_on = threading.Event(), threading.Event()
    outcome: dict[str, object] = {}

    def holding(name: str, real: Callable):
        def held(*args, **kwargs):
            if (
                threading.current_thread().name == "held"
                and not reached.is_set()
                and when(name, kwargs)
            ):
                reached.set()
                assert go_on.wait(30), "never let go"
            return real(*args, **kwargs)

        return held

    def run() -> None:
        try:
            outcome["request"] = request()
        except Exception as exc:  # what the tests are about: a lost race's error
            outcome["request"] = repr(exc)

    for one in (name,) if isinstance(name, str) else name:
        monkeypatch.setattr(owner, one, holding(one, getattr(owner, one)))
    thread = threading.Thread(target=run, name="held")
    thread.start()
    try:
        assert reached.wait(30), f"the request never reached {name}"
        try:
            done = other()
        finally:
            connection.close()
    finally:
        go_on.set()
        thread.join(30)
    assert not thread.is_alive()
    return outcome.get("request"), done


def published_draft(slug: str) -> Story:
    story = story_save(title="Live", body="Text.", slug=slug)
    story_publish(story_id=story.pk)
    return story


def test_a_delete_that_meets_a_withdraw_puts_the_draft_in_the_trash(make_token, monkeypatch):
    """The review: the withdraw took the article's row between the DELETE's read and its
    delete, which then deleted nothing, answered 204 and left the draft for a later
    publish to put back live (17 of 30 runs)."""
    _user, token = make_token()
    story = published_draft("deleted-while-withdrawn")

    answers = held_at(
        monkeypatch,
        Article,
        "delete",
        lambda: call(token, "delete", f"{ARTICLES}/{story.pk}"),
        lambda: call(token, "post", f"{ARTICLES}/{story.pk}/withdraw"),
    )

    assert answers == (204, 200)
    assert not Article.objects.filter(pk=story.pk).exists()
    assert Story.objects.get(pk=story.pk).trashed_at is not None
    assert call(token, "get", f"{ARTICLES}/{story.pk}") == 404


@POSTGRESQL_ONLY
def test_a_publish_that_meets_a_delete_is_404(make_token, monkeypatch):
    """The review: a DELETE between the publish's check of the draft and its publish
    made it a 400, "The article is not valid … This story is in the trash", where the
    same publish after the delete is a 404. Held before the publish locks the draft
    (or, without that lock, before it publishes)."""
    _user, token = make_token()
    story = story_save(title="Draft", body="Text.", slug="published-while-deleted")

    answers = held_at(
        monkeypatch,
        endpoints,
        ("_draft", "story_publish"),
        lambda: call(token, "post", f"{ARTICLES}/{story.pk}/publish"),
        lambda: call(token, "delete", f"{ARTICLES}/{story.pk}"),
        when=lambda name, kwargs: name == "story_publish" or kwargs.get("lock", False),
    )

    assert answers == (404, 204)
    assert Story.objects.get(pk=story.pk).trashed_at is not None
    assert not Article.objects.filter(pk=story.pk).exists()


def test_a_delete_that_meets_another_delete_is_404(make_token, monkeypatch):
    _user, token = make_token()
    story = published_draft("deleted-twice")

    answers = held_at(
        monkeypatch,
        Article,
        "delete",
        lambda: call(token, "delete", f"{ARTICLES}/{story.pk}"),
        lambda: call(token, "delete", f"{ARTICLES}/{story.pk}"),
    )

    assert answers == (404, 204)
    assert Story.objects.get(pk=story.pk).trashed_at is not None


@POSTGRESQL_ONLY
def test_a_requeue_that_meets_a_delete_is_404(make_token, monkeypatch):
    """The review: the requeue read the article, the delete took it, and the requeue's
    read of the row it had requeued raised (a 500)."""
    _user, token = make_token()
    article = Article.objects.create(title="Dead", body="x", slug="requeued-while-deleted")
    Article.objects.filter(pk=article.pk).update(status=ArticleStatus.DEAD)

    answers = held_at(
        monkeypatch,
        endpoints,
        "article_requeue",
        lambda: call(token, "post", f"{ARTICLES}/{article.pk}/requeue"),
        lambda: call(token, "delete", f"{ARTICLES}/{article.pk}"),
    )

    assert answers == (404, 204)


@POSTGRESQL_ONLY
def test_a_delivery_requeue_that_meets_its_delete_is_404_naming_a_delivery(make_token, monkeypatch):
    _user, token = make_token()
    delivery = WebhookDelivery.objects.create(
        article_id=1, event="article.published", key="k" * 64, body="{}", status=DeliveryStatus.DEAD
    )
    answer: dict = {}

    def requeue() -> int:
        try:
            client = Client(headers={"Authorization": f"Bearer {token}"})
            response = client.post(f"/api/webhook-deliveries/{delivery.pk}/requeue")
            answer.update(response.json())
            return response.status_code
        finally:
            connection.close()

    answers = held_at(
        monkeypatch,
        endpoints,
        "delivery_requeue",
        requeue,
        lambda: WebhookDelivery.objects.filter(pk=delivery.pk).delete()[0],
    )

    assert answers == (404, 1)
    assert answer["detail"] == "No webhook delivery with this id."
