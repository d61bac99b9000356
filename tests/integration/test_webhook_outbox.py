"""The webhook's outbox as the publish attempt, the delete and the withdraw write it: what
each receiver will be told, in order (docs/design.md, "Webhook deliveries"). The
attempts run in this process, as `publish_pending` runs them, with the webhook turned
off (no PUBLISH_WEBHOOK_URL), so the outbox keeps every event for the test to read."""

from __future__ import annotations

import json
import threading

import pytest
from django.db import connection
from django.urls import reverse

import blogpublish.webhooks as webhooks
from blogpublish.webhooks import WebhookPublisher
from publishing.models import Article, ArticleStatus, DeliveryStatus, WebhookDelivery
from publishing.services import (
    article_update,
    delivery_requeue,
    story_publish,
    story_save,
    story_withdraw,
)
from publishing.services.publish import article_publish
from tests.support.api import bearer
from tests.support.broker import broker
from tests.support.processes import free_port
from tests.support.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

PUBLISHED, WITHDRAWN, DELETED = "article.published", "article.withdrawn", "article.deleted"


@pytest.fixture(autouse=True)
def webhook_on(settings):
    """The webhook's outbox in this process, whose attempts the tests run themselves:
    their messages go to a broker where nothing listens, so the session's worker (its
    publishers without the webhook) never takes an article from under a test (the
    rehearsal of 2026-12-07 found it holding the lease the test's attempt wanted)."""
    settings.PUBLISH_PUBLISHERS = [
        *settings.PUBLISH_PUBLISHERS,
        "blogpublish.webhooks.WebhookPublisher",
    ]
    settings.PUBLISH_WEBHOOK_URL = ""  # the outbox only: nothing is sent
    with broker(f"redis://127.0.0.1:{free_port()}/0"):
        yield


def publish_now(article_id: int) -> Article:
    article_publish(article_id=article_id, retry_in=lambda n: 1)
    return Article.objects.get(pk=article_id)


def outbox(article_id: int) -> list[tuple[str, dict]]:
    rows = WebhookDelivery.objects.filter(article_id=article_id).order_by("pk")
    return [(event, json.loads(body)) for event, body in rows.values_list("event", "body")]


def test_a_story_published_again_unchanged_after_a_withdraw_is_announced_again():
    """Published, withdrawn, published again with nothing changed: the new Article row
    (a new uid) took the first row's key, the outbox dropped its event as a repeat, and
    the receiver stayed on "withdrawn" while the article was live (a review's finding)."""
    story = story_save(title="Back again", body="Same text.", slug="back-again")
    first = publish_now(story_publish(story_id=story.pk).pk)
    story_withdraw(article_id=first.pk)

    again = publish_now(story_publish(story_id=story.pk).pk)

    assert again.status == ArticleStatus.PUBLISHED
    assert again.uid != first.uid and again.content_hash == first.content_hash
    events = outbox(again.pk)
    assert [event for event, _ in events] == [PUBLISHED, WITHDRAWN, PUBLISHED]
    assert events[-1][1]["uid"] == str(again.uid)
    keys = WebhookDelivery.objects.filter(article_id=again.pk).values_list("key", flat=True)
    assert len(set(keys)) == 3

    WebhookPublisher().publish(again)  # its attempt run again: the same event

    assert len(outbox(again.pk)) == 3


def test_the_withdrawn_rows_attempt_says_nothing_after_the_story_is_back_unchanged():
    """A review of the mend above: the withdrawn row's attempt, run again (paused past
    its withdraw, a take-over) once the story was published again unchanged, found the
    same id and content live and announced its old uid after its own withdraw."""
    story = story_save(title="Paused", body="Same text.", slug="paused-row")
    first = publish_now(story_publish(story_id=story.pk).pk)
    story_withdraw(article_id=first.pk)
    again = publish_now(story_publish(story_id=story.pk).pk)

    WebhookPublisher().publish(first)  # the old row's attempt, late

    events = outbox(again.pk)
    assert [event for event, _ in events] == [PUBLISHED, WITHDRAWN, PUBLISHED]
    assert events[-1][1]["uid"] == str(again.uid)


class Remover(threading.Thread):
    """Deletes or withdraws the article on a connection of its own, as the API or the
    admin would, while the attempt is between its check of the content and its insert."""

    def __init__(self, article_id: int, how: str) -> None:
        super().__init__(daemon=True)
        self.article_id, self.how = article_id, how
        self.started_removal = threading.Event()
        self.backend_pid: int | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_backend_pid()")
                    self.backend_pid = cursor.fetchone()[0]
            self.started_removal.set()
            if self.how == "withdraw":
                story_withdraw(article_id=self.article_id)
            else:
                Article.objects.get(pk=self.article_id).delete()
        except BaseException as exc:  # the test reports it
            self.error = exc
        finally:
            connection.close()

    def waits_for_the_attempt(self) -> bool:
        """Is the removal held by the attempt's transaction? PostgreSQL says so of its
        backend. On SQLite a write transaction holds the database's write lock, so one
        begun by the removal waits while the attempt is inside one."""
        if not self.started_removal.is_set():
            return False
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT 1 FROM pg_stat_activity WHERE pid = %s AND wait_event_type = 'Lock'",
                    [self.backend_pid],
                )
                return cursor.fetchone() is not None
        return connection.in_atomic_block


@pytest.mark.parametrize("how", ["delete", "withdraw"])
def test_a_removal_during_the_attempt_is_the_receivers_last_event(monkeypatch, how):
    """A delete or a withdraw that committed between the attempt's check of the content
    and its insert left the outbox [deleted, published]: the receiver's last word was
    "published" for an article that was gone (a review's finding). The removal now waits
    for the attempt's transaction, and its event comes after the published one."""
    story = story_save(title="Going soon", body="Briefly.", slug=f"going-{how}")
    article = story_publish(story_id=story.pk)
    removal = Remover(article.pk, how)
    real_enqueue = webhooks.deliveries_enqueue

    def enqueue_once_removed(new):
        # Only the attempt's insert: the removal's own `forget` comes through here too.
        if threading.current_thread() is not removal and removal.ident is None:
            removal.start()
            wait_for(
                lambda: not removal.is_alive() or removal.waits_for_the_attempt(),
                what="the removal to commit or to wait for the attempt",
            )
        real_enqueue(new)

    monkeypatch.setattr(webhooks, "deliveries_enqueue", enqueue_once_removed)
    article_publish(article_id=article.pk, retry_in=lambda n: 1)
    wait_for(lambda: not removal.is_alive(), what="the removal to end")

    assert removal.error is None, removal.error
    assert not Article.objects.filter(pk=article.pk).exists()
    removed = WITHDRAWN if how == "withdraw" else DELETED
    assert [event for event, _ in outbox(article.pk)] == [PUBLISHED, removed]


@pytest.mark.parametrize("how", ["delete", "withdraw"])
def test_a_removal_tells_the_receiver_what_readers_saw_not_a_pending_edit(how):
    """A published article's pending edit (an embargoed headline, a new address) went out
    in its delete event's title: what readers saw is the live version (a review's
    finding)."""
    story = story_save(title="Public title", body="Said.", slug=f"public-{how}")
    article = publish_now(story_publish(story_id=story.pk).pk)
    article_update(article=article, title="EMBARGOED: merger with X", slug=f"merger-{how}")

    if how == "withdraw":
        story_withdraw(article_id=article.pk)
    else:
        Article.objects.get(pk=article.pk).delete()

    event, body = outbox(article.pk)[-1]
    assert event == (WITHDRAWN if how == "withdraw" else DELETED)
    assert (body["title"], body["slug"]) == ("Public title", f"public-{how}")
    assert "EMBARGOED" not in json.dumps(body) and "merger" not in json.dumps(body)


def test_an_article_deleted_before_it_was_ever_live_has_no_title_to_tell():
    """It was never on the site: its delete event names no headline readers never saw,
    nor the slug made from it, nor its address (a review of the mend: the slug went out)."""
    story = story_save(title="Acme to buy Globex", body="Scheduled.")
    article = story_publish(story_id=story.pk)  # pending; no attempt ran
    assert article.slug == "acme-to-buy-globex"

    Article.objects.get(pk=article.pk).delete()

    event = outbox(article.pk)[-1][1]
    assert (event["title"], event["slug"], event["url"]) == ("", "", None)


def test_a_dead_event_that_a_later_one_supersedes_is_not_requeued(admin_client, make_token):
    """A dead article.published requeued after the article was withdrawn went out after
    the withdraw, and the receiver's last word was "published" (a review's finding). A
    later event of the article already says what is true now: the requeue is refused,
    with the reason, in the service, the API, the dashboard and the admin's action."""
    story = story_save(title="Refused once", body="Live.", slug="refused-once")
    article = publish_now(story_publish(story_id=story.pk).pk)
    published = WebhookDelivery.objects.get(article_id=article.pk)
    WebhookDelivery.objects.filter(pk=published.pk).update(status=DeliveryStatus.DEAD)
    story_withdraw(article_id=article.pk)
    withdrawn = WebhookDelivery.objects.get(article_id=article.pk, event=WITHDRAWN)

    assert not delivery_requeue(delivery_id=published.pk)

    answer = bearer(make_token()[1]).post(f"/api/webhook-deliveries/{published.pk}/requeue")
    assert answer.status_code == 409, answer.content
    detail = answer.json()["detail"]
    assert "superseded by a later event" in detail
    assert f"delivery {withdrawn.pk}, {WITHDRAWN}" in detail
    dashboard = admin_client.post(
        reverse("publishing-dashboard-requeue"), {"delivery_id": str(published.pk)}, follow=True
    ).content.decode()
    assert f"Webhook delivery {published.pk} is superseded" in dashboard
    action = admin_client.post(
        reverse("admin:publishing_webhookdelivery_changelist"),
        {"action": "requeue", "_selected_action": [published.pk]},
        follow=True,
    ).content.decode()
    assert "0 dead webhook delivery(s) requeued." in action
    assert f"Webhook delivery {published.pk} is superseded" in action
    assert WebhookDelivery.objects.get(pk=published.pk).status == DeliveryStatus.DEAD

    # The article's last event, dead, is requeued as before: nothing comes after it.
    WebhookDelivery.objects.filter(pk=withdrawn.pk).update(status=DeliveryStatus.DEAD)
    assert delivery_requeue(delivery_id=withdrawn.pk)
