"""The webhook's outbox as the publish attempt, the delete and the withdraw write it: what
each receiver will be told, in order (docs/design.md, "Webhook deliveries"). The
attempts run in this process, as `publish_pending` runs them, with the webhook turned
off (no PUBLISH_WEBHOOK_URL), so the outbox keeps every event for the test to read."""

from __future__ import annotations

import json

import pytest

from blogpublish.webhooks import WebhookPublisher
from publishing.models import Article, ArticleStatus, WebhookDelivery
from publishing.services import story_publish, story_save, story_withdraw
from publishing.services.publish import article_publish

pytestmark = pytest.mark.django_db(transaction=True)

PUBLISHED, WITHDRAWN, DELETED = "article.published", "article.withdrawn", "article.deleted"


@pytest.fixture(autouse=True)
def webhook_on(settings):
    settings.PUBLISH_PUBLISHERS = [
        *settings.PUBLISH_PUBLISHERS,
        "blogpublish.webhooks.WebhookPublisher",
    ]
    settings.PUBLISH_WEBHOOK_URL = ""  # the outbox only: nothing is sent


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
