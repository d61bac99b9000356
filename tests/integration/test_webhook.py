"""The webhook publisher, run by a real worker against a real HTTP receiver.

The worker of these tests needs PUBLISH_WEBHOOK_URL and PUBLISH_WEBHOOK_SECRET in its
environment, which the session's worker does not have. So it gets a queue of its own
(BLOGPUBLISH_TEST_QUEUE, read by tests/settings.py), and for this module the test
process sends there too: the session's worker, if one is running, never sees these
messages, and these tests never depend on whether it runs.
"""

from __future__ import annotations

import time

import pytest
import requests
from django.conf import settings
from django.test import override_settings

from blogpublish.site.documents import rfc3339
from blogpublish.webhooks import WebhookPublisher
from config.celery import app
from config.queues import celery_queues
from publishing.models import Article, ArticleStatus, AttemptOutcome, PublishAttempt
from publishing.services import story_publish, story_save, story_withdraw
from publishing.signing import sign
from tests.support import documented_receiver, processes
from tests.support.receiver import Receiver
from tests.support.settling import wait_settled
from tests.support.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "test-webhook-secret-of-at-least-32-characters"


@pytest.fixture(scope="module")
def documented(tmp_path_factory) -> dict:
    """The receiver of docs/site.md, as written, with the test's secret."""
    return documented_receiver.load(secret=SECRET, workdir=tmp_path_factory.mktemp("receiver"))


@pytest.fixture(scope="module")
def receiver(django_db_setup, django_db_blocker, documented):
    # It answers 401 to a request the documented receiver would refuse.
    receiver = Receiver(verify=documented["verify"]).start()
    # Read before the override: Celery loads its configuration from the settings lazily,
    # at the first access.
    default_queue = app.conf.task_default_queue
    queue = f"{default_queue}-webhook"
    routes, queues = celery_queues(queue)
    publishers = settings.PUBLISH_PUBLISHERS  # chaos, site, journal: the webhook before journal
    same_settings = override_settings(
        CELERY_TASK_DEFAULT_QUEUE=queue,
        CELERY_TASK_ROUTES=routes,
        CELERY_TASK_QUEUES=queues,
        PUBLISH_WEBHOOK_URL=receiver.url,
        PUBLISH_WEBHOOK_SECRET=SECRET,
        PUBLISH_WEBHOOK_TIMEOUT=1.0,
        PUBLISH_PUBLISHERS=[
            *publishers[:-1],
            "blogpublish.webhooks.WebhookPublisher",
            *publishers[-1:],
        ],
    )
    same_settings.enable()
    app.conf.task_default_queue = queue
    worker = None
    try:
        worker = processes.start_worker(
            name="webhook-worker",
            env={
                "BLOGPUBLISH_TEST_QUEUE": queue,
                "PUBLISH_WEBHOOK_URL": receiver.url,
                "PUBLISH_WEBHOOK_SECRET": SECRET,
                # A second, so a stalled receiver costs the test a second, not ten.
                "PUBLISH_WEBHOOK_TIMEOUT": "1",
            },
        )
        yield receiver
    finally:
        if worker:
            worker.stop()
        with app.connection_for_write() as conn:  # leave nothing of this run in the broker
            for name in (q.name for q in queues):
                conn.default_channel.queue_delete(name)
        app.conf.task_default_queue = default_queue
        same_settings.disable()
        receiver.stop()


def signature_is_valid(received) -> bool:
    """What the documented receiver decided about this request, as it arrived."""
    return received.verified is True


def wait_status(article: Article, status: str, timeout: float = 30.0) -> Article:
    wait_for(
        lambda: Article.objects.filter(
            pk=article.pk, status=status, content_hash=article.content_hash
        ).exists(),
        timeout=timeout,
        what=f"article {article.pk} to be {status}",
    )
    article.refresh_from_db()
    return article


def test_webhook_is_signed_a_retry_after_500_has_the_same_key_and_an_edit_a_new_one(
    receiver, make_article
):
    receiver.plan("hooked", 500)
    article = wait_status(make_article(slug="hooked", title="Hooked, 你好"), "published")

    failed, delivered = receiver.requests_for("hooked")
    assert (failed.status, delivered.status) == (500, 200)
    assert delivered.body == failed.body
    key = delivered.headers["Idempotency-Key"]
    assert failed.headers["Idempotency-Key"] == key
    assert signature_is_valid(failed) and signature_is_valid(delivered)
    assert delivered.headers["Content-Type"] == "application/json"
    assert delivered.json == {
        "event": "article.published",
        "id": article.pk,
        "uid": str(article.uid),
        "slug": "hooked",
        "title": "Hooked, 你好",
        "url": f"{settings.SITE_URL}/hooked/",
        "published_at": rfc3339(article.publish_at),
        "content_hash": article.content_hash,
    }

    article.body = "Edited."
    article.save()
    wait_status(article, "published")

    edited = receiver.requests_for("hooked")[-1]
    assert edited.headers["Idempotency-Key"] != key
    assert edited.json["content_hash"] == article.content_hash
    assert signature_is_valid(edited)


def test_webhook_timeout_is_retried_then_succeeds(receiver, make_article):
    receiver.plan("slow-receiver", "stall")
    article = wait_status(make_article(slug="slow-receiver"), "published")

    stalled, delivered = receiver.requests_for("slow-receiver")
    assert (stalled.status, delivered.status) == (None, 200)
    assert stalled.headers["Idempotency-Key"] == delivered.headers["Idempotency-Key"]
    attempts = PublishAttempt.objects.filter(article=article).order_by("number")
    assert [a.outcome for a in attempts] == [AttemptOutcome.RETRY, AttemptOutcome.OK]
    assert "timed out" in attempts[0].error


def test_webhook_400_makes_the_article_dead_with_the_status_in_the_error(receiver, make_article):
    receiver.plan("refused", 400)
    article = wait_status(make_article(slug="refused"), ArticleStatus.DEAD)

    assert "400" in article.last_error
    assert article.attempts == 1
    assert [r.status for r in receiver.requests_for("refused")] == [400]


def test_delete_sends_a_signed_delete_event(receiver, make_article):
    article = wait_status(make_article(slug="short-lived-hook"), "published")
    published = receiver.requests_for("short-lived-hook")[-1]

    article.delete()

    wait_for(
        lambda: any(
            r.json["event"] == "article.deleted" for r in receiver.requests_for("short-lived-hook")
        ),
        what="the delete event",
    )
    deleted = receiver.requests_for("short-lived-hook")[-1]
    assert signature_is_valid(deleted)
    assert deleted.json["uid"] == published.json["uid"]
    assert deleted.headers["Idempotency-Key"] != published.headers["Idempotency-Key"]


def test_withdraw_sends_one_signed_withdrawn_event_and_no_delete_event(receiver):
    story = story_save(title="Back to draft", body="Live a while.", slug="withdrawn-hook")
    article = wait_status(story_publish(story_id=story.pk), "published")
    published = receiver.requests_for("withdrawn-hook")[-1]

    story_withdraw(article_id=article.pk)

    wait_for(
        lambda: any(
            r.json["event"] == "article.withdrawn" for r in receiver.requests_for("withdrawn-hook")
        ),
        what="the withdrawn event",
    )
    wait_settled()
    events = [r.json["event"] for r in receiver.requests_for("withdrawn-hook")]
    assert events == ["article.published", "article.withdrawn"]
    withdrawn = receiver.requests_for("withdrawn-hook")[-1]
    assert signature_is_valid(withdrawn)
    assert withdrawn.json["uid"] == published.json["uid"]
    assert withdrawn.json["id"] == story.pk
    assert withdrawn.headers["Idempotency-Key"] != published.headers["Idempotency-Key"]


def test_attempt_of_content_edited_since_is_not_announced(receiver, make_article):
    article = wait_status(make_article(slug="edited-meanwhile", body="One."), "published")
    stale = Article.objects.get(pk=article.pk)  # what a stalled attempt of "One." holds
    article.body = "Two."
    article.save()
    wait_status(article, "published")

    WebhookPublisher().publish(stale)  # the stalled attempt wakes up

    hashes = [r.json["content_hash"] for r in receiver.requests_for("edited-meanwhile")]
    assert hashes == [stale.content_hash, article.content_hash]


def test_a_captured_request_replayed_with_another_key_or_late_is_refused(
    receiver, documented, make_article
):
    """Issue 8: the signature covered the body only, so a captured request replayed
    under an edited Idempotency-Key passed every check and was applied again."""
    wait_status(make_article(slug="captured", title="Captured"), "published")
    captured = receiver.requests_for("captured")[-1]
    assert captured.verified and captured.status == 200
    applied = []
    documented["apply"] = applied.append  # the receiver's effect, counted
    handle = documented["handle"]

    assert handle(captured.headers, captured.body) == 200
    assert handle(captured.headers, captured.body) == 200  # a repeat: deduplicated
    edited_key = {**captured.headers, "Idempotency-Key": "replayed-" + "0" * 55}
    assert handle(edited_key, captured.body) == 401
    tampered = captured.body.replace(b"Captured", b"Tampered")
    assert handle(captured.headers, tampered) == 401
    # The same request as blogpublish signed it 301 s ago: too old, although genuine.
    key = captured.headers["Idempotency-Key"]
    late = sign(secret=SECRET, key=key, body=captured.body, timestamp=int(time.time()) - 301)
    assert handle({**captured.headers, "X-Blogpublish-Signature": late}, captured.body) == 401
    assert [event["slug"] for event in applied] == ["captured"]

    # Replayed over HTTP to the running receiver, with the key edited: refused there too.
    replay = requests.post(receiver.url, data=captured.body, headers=edited_key, timeout=5)
    assert replay.status_code == 401
