"""The webhook: an outbox delivery per event, sent after the publish by a real worker to
a real HTTP receiver (docs/design.md, "Webhook deliveries").

The worker of these tests needs PUBLISH_WEBHOOK_URL and PUBLISH_WEBHOOK_SECRET in its
environment, which the session's worker does not have. So it gets a queue of its own
(BLOGPUBLISH_TEST_QUEUE, read by tests/settings.py), and for this module the test
process sends there too: the session's worker, if one is running, never sees these
messages, and these tests never depend on whether it runs. Its alerts
(ALERT_WEBHOOK_URL) go to the same receiver, as JSON with a "kind" and no slug.
"""

from __future__ import annotations

import io
import json
import os
import signal
import time
from functools import partial

import pytest
import requests
from django.conf import settings
from django.core.management import call_command
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from blogpublish.site.documents import rfc3339
from blogpublish.webhooks import WebhookPublisher, idempotency_key
from config.celery import app
from config.queues import celery_queues
from publishing.models import (
    Article,
    ArticleStatus,
    AttemptOutcome,
    DeliveryStatus,
    PublishAttempt,
    WebhookDelivery,
)
from publishing.services import (
    catch_up,
    story_publish,
    story_save,
    story_withdraw,
    webhook_deliver,
)
from publishing.services.alarms import ALERTS_PER_WINDOW
from publishing.signing import sign
from tests.support import documented_receiver
from tests.support.api import bearer
from tests.support.own_worker import own_worker
from tests.support.receiver import Receiver
from tests.support.settling import wait_settled, worker_is_idle
from tests.support.waiting import wait_for, wait_status

# Its status with the content it has now (an edit's outcome, not the one before it).
wait_current = partial(wait_status, same_content=True)

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.broker,  # a worker of the module's own takes its messages: runs again on RabbitMQ
]

SECRET = "test-webhook-secret-of-at-least-32-characters"
DEAD_ALERT = "webhook_delivery_dead"
# The worker's: a read timeout over the slow receiver's second, and a delivery lease that
# holds it (plus 3 s to connect) inside its soft time limit.
WORKER_SETTINGS = {
    "PUBLISH_WEBHOOK_TIMEOUT": "3",
    "PUBLISH_WEBHOOK_LEASE_SECONDS": "10",
}


@pytest.fixture(scope="module")
def documented(tmp_path_factory) -> dict:
    """The receiver of docs/site.md, as written, with the test's secret."""
    return documented_receiver.load(secret=SECRET, workdir=tmp_path_factory.mktemp("receiver"))


@pytest.fixture(scope="module")
def receiver(django_db_setup, django_db_blocker, documented):
    # It answers 401 to a request the documented receiver would refuse.
    receiver = Receiver(verify=documented["verify"]).start()
    publishers = settings.PUBLISH_PUBLISHERS  # chaos, site, journal: the webhook before journal
    try:
        with own_worker(
            "webhook-worker",
            suffix="webhook",
            db_blocker=django_db_blocker,
            env={
                "PUBLISH_WEBHOOK_URL": receiver.url,
                "PUBLISH_WEBHOOK_SECRET": SECRET,
                "ALERT_WEBHOOK_URL": receiver.url,
                "ALERT_WEBHOOK_SECRET": SECRET,
                **WORKER_SETTINGS,
            },
            PUBLISH_WEBHOOK_URL=receiver.url,
            PUBLISH_WEBHOOK_SECRET=SECRET,
            PUBLISH_WEBHOOK_TIMEOUT=3.0,
            PUBLISH_WEBHOOK_LEASE_SECONDS=10.0,
            ALERT_WEBHOOK_URL=receiver.url,
            ALERT_WEBHOOK_SECRET=SECRET,
            PUBLISH_PUBLISHERS=[
                *publishers[:-1],
                "blogpublish.webhooks.WebhookPublisher",
                *publishers[-1:],
            ],
        ) as worker:
            receiver.worker = worker  # for the test that kills its pool children
            yield receiver
    finally:
        receiver.stop()


def signature_is_valid(received) -> bool:
    """What the documented receiver decided about this request, as it arrived."""
    return received.verified is True


def wait_delivery(
    key: str, status: str = DeliveryStatus.DELIVERED, timeout: float = 60.0
) -> WebhookDelivery:
    """The delivery under Idempotency-Key `key`, once it is `status`."""
    return wait_for(
        lambda: WebhookDelivery.objects.filter(key=key, status=status).first(),
        timeout=timeout,
        what=f"the webhook delivery {key[:12]}… to be {status}",
    )


def published_key(article: Article) -> str:
    """The key of the event of the article's current content: after the id of its latest
    published event of other content or of an earlier Article row of its id (a story
    withdrawn and published again), once it had one (A, B, then A again: three keys)."""
    previous = (
        WebhookDelivery.objects.filter(article_id=article.pk, event="article.published")
        .exclude(Q(body__contains=article.content_hash) & Q(body__contains=str(article.uid)))
        .order_by("-pk")
        .values_list("pk", flat=True)
        .first()
    )
    return idempotency_key(article.uid, article.content_hash, after=previous)


def alerts(receiver: Receiver, kind: str = DEAD_ALERT) -> list:
    with receiver.lock:
        return [r for r in receiver.received if r.json.get("kind") == kind]


def attempt_outcomes(article: Article) -> list[str]:
    return list(
        PublishAttempt.objects.filter(article=article)
        .order_by("number")
        .values_list("outcome", flat=True)
    )


def test_webhook_is_signed_a_retry_after_500_has_the_same_key_and_an_edit_a_new_one(
    receiver, make_article
):
    receiver.plan("hooked", 500)
    article = wait_current(make_article(slug="hooked", title="Hooked, 你好"), "published")
    delivery = wait_delivery(published_key(article))

    failed, delivered = receiver.requests_for("hooked")
    assert (failed.status, delivered.status) == (500, 200)
    assert delivery.attempts == 2
    assert delivered.body == failed.body == delivery.body.encode()
    key = delivered.headers["Idempotency-Key"]
    assert failed.headers["Idempotency-Key"] == key == delivery.key
    assert signature_is_valid(failed) and signature_is_valid(delivered)
    assert delivered.headers["Content-Type"] == "application/json"
    assert delivered.headers["User-Agent"] == "blogpublish-webhook/1"
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
    # The receiver's 500 was the delivery's, not the publish's.
    assert attempt_outcomes(article) == [AttemptOutcome.OK]

    article.body = "Edited."
    article.save()
    wait_current(article, "published")
    wait_delivery(published_key(article))

    edited = receiver.requests_for("hooked")[-1]
    assert edited.headers["Idempotency-Key"] != key
    assert edited.json["content_hash"] == article.content_hash
    assert signature_is_valid(edited)


def test_a_receiver_that_times_out_is_a_retry_of_the_delivery_not_of_the_publish(
    receiver, make_article
):
    receiver.plan("slow-receiver", "stall")
    article = wait_current(make_article(slug="slow-receiver"), "published")
    delivery = wait_delivery(published_key(article))

    stalled, delivered = receiver.requests_for("slow-receiver")
    assert (stalled.status, delivered.status) == (None, 200)
    assert stalled.headers["Idempotency-Key"] == delivered.headers["Idempotency-Key"]
    assert delivery.attempts == 2
    assert attempt_outcomes(article) == [AttemptOutcome.OK]


def test_a_slow_receiver_does_not_hold_up_publishing(receiver, make_article):
    """Every request takes the receiver a second: each article is published before the
    receiver has answered its event (a publish that waited for the POST would complete
    after the answer)."""
    slugs = [f"slow-{n}" for n in range(3)]
    for slug in slugs:
        receiver.plan(slug, "slow")
    articles = [make_article(slug=slug) for slug in slugs]
    articles = [wait_current(article, "published") for article in articles]
    for article in articles:
        wait_delivery(published_key(article))

    for article in articles:
        [request] = receiver.requests_for(article.slug)
        assert request.status == 200
        assert article.published_at.timestamp() < request.answered_at, article.slug
        assert attempt_outcomes(article) == [AttemptOutcome.OK]


def test_a_400_makes_the_delivery_dead_with_one_alert_and_the_article_stays_published(
    receiver, make_article
):
    """Issue 17, finding 7: a receiver's 4xx made the article dead while its page was live."""
    receiver.plan("refused", 400)
    article = wait_current(make_article(slug="refused"), ArticleStatus.PUBLISHED)
    delivery = wait_delivery(published_key(article), DeliveryStatus.DEAD)

    assert "400" in delivery.last_error
    assert delivery.attempts == 1
    assert [r.status for r in receiver.requests_for("refused")] == [400]
    [alert] = wait_for(lambda: alerts(receiver), what="the dead delivery's alert")
    assert alert.json["delivery_id"] == delivery.pk
    assert alert.json["article_id"] == article.pk
    assert alert.verified
    article.refresh_from_db()
    assert article.status == ArticleStatus.PUBLISHED
    assert attempt_outcomes(article) == [AttemptOutcome.OK]

    # The catch-up alerts deaths whose alert was lost, and only those: not this one again.
    report = catch_up()
    assert report.delivery_alerts == 0
    assert len(alerts(receiver)) == 1


def test_a_receiver_refusing_a_burst_sends_ten_alerts_and_one_that_counts_the_rest(
    receiver, make_article
):
    """A receiver that refuses every event of a burst (an import) kills a delivery per
    article: ALERTS_PER_WINDOW alerts of their own, then one that counts them, not one
    mail and POST per death (a review's finding: 603 alerts for one import)."""
    with receiver.lock:
        before = len(receiver.received)
    slugs = [f"refused-burst-{n}" for n in range(ALERTS_PER_WINDOW + 4)]
    for slug in slugs:
        receiver.plan(slug, 400)
    articles = [make_article(slug=slug) for slug in slugs]
    for article in articles:
        wait_delivery(published_key(wait_current(article, "published")), DeliveryStatus.DEAD)
    dead = WebhookDelivery.objects.filter(status=DeliveryStatus.DEAD)
    wait_for(
        lambda: not dead.filter(alerted_at__isnull=True).exists(),
        what="every death stamped as alerted",
    )

    def kinds() -> list[str]:
        with receiver.lock:
            alerts = [r.json for r in receiver.received[before:] if r.json and "kind" in r.json]
            return [alert["kind"] for alert in alerts]

    wait_for(lambda: len(kinds()) >= ALERTS_PER_WINDOW + 1, what="the alerts")
    assert sorted(kinds()) == sorted([DEAD_ALERT] * ALERTS_PER_WINDOW + [f"{DEAD_ALERT}_many"]), (
        kinds()
    )


def test_a_dead_delivery_requeued_from_the_dashboard_and_the_api_is_delivered(
    receiver, make_article, admin_client, make_token
):
    receiver.plan("requeued-hook", 400)
    article = wait_current(make_article(slug="requeued-hook"), "published")
    key = published_key(article)
    delivery = wait_delivery(key, DeliveryStatus.DEAD)

    response = admin_client.post(
        reverse("publishing-dashboard-requeue"), {"delivery_id": str(delivery.pk)}
    )
    assert response.status_code == 302
    delivery = wait_delivery(key)
    assert delivery.attempts == 1 and delivery.last_error == ""
    assert [r.status for r in receiver.requests_for("requeued-hook")] == [400, 200]
    assert len({r.headers["Idempotency-Key"] for r in receiver.requests_for("requeued-hook")}) == 1

    # The API's requeue: only a dead delivery (409 otherwise), then the same as above.
    _user, token = make_token()
    path = f"/api/webhook-deliveries/{delivery.pk}/requeue"
    refused = bearer(token).post(path)
    assert refused.status_code == 409
    assert "delivered" in refused.json()["detail"]
    WebhookDelivery.objects.filter(pk=delivery.pk).update(status=DeliveryStatus.DEAD)
    answer = bearer(token).post(path)
    assert answer.status_code == 200, answer.content
    assert answer.json()["status"] == DeliveryStatus.PENDING
    wait_for(lambda: len(receiver.requests_for("requeued-hook")) == 3, what="the requeued delivery")
    wait_delivery(key)

    # The admin's action on Webhook deliveries: one click, as the article's Requeue.
    WebhookDelivery.objects.filter(pk=delivery.pk).update(status=DeliveryStatus.DEAD)
    response = admin_client.post(
        reverse("admin:publishing_webhookdelivery_changelist"),
        {"action": "requeue", "_selected_action": [delivery.pk]},
        follow=True,
    )
    assert "1 dead webhook delivery(s) requeued." in response.content.decode()
    wait_for(lambda: len(receiver.requests_for("requeued-hook")) == 4, what="the admin's requeue")
    wait_delivery(key)
    # The delivery list and a delivery's page show (read-only).
    changelist = reverse("admin:publishing_webhookdelivery_changelist")
    assert admin_client.get(changelist).status_code == 200
    page = admin_client.get(reverse("admin:publishing_webhookdelivery_change", args=[delivery.pk]))
    assert page.status_code == 200 and key in page.content.decode()
    # The dashboard lists dead deliveries with their Requeue button.
    WebhookDelivery.objects.filter(pk=delivery.pk).update(status=DeliveryStatus.DEAD)
    dashboard = admin_client.get(reverse("publishing-dashboard")).content.decode()
    assert f'name="delivery_id" value="{delivery.pk}"' in dashboard


def test_a_receiver_that_is_down_gets_the_event_once_it_is_up_again(receiver, make_article):
    receiver.go_down()
    try:
        article = wait_current(make_article(slug="down-then-up"), "published")
        key = published_key(article)
        # Two tries over, not the second one in flight (its claim counts it already):
        # its lease let go with its error.
        wait_for(
            lambda: WebhookDelivery.objects.filter(
                key=key, status=DeliveryStatus.PENDING, attempts__gte=2, lease_expires_at=None
            ).exists(),
            what="two refused tries",
        )
        assert "unreachable" in WebhookDelivery.objects.get(key=key).last_error
    finally:
        receiver.come_up()

    delivery = wait_delivery(key)

    assert [r.status for r in receiver.requests_for("down-then-up")] == [200]
    assert delivery.attempts >= 3
    article.refresh_from_db()
    assert article.status == ArticleStatus.PUBLISHED
    assert attempt_outcomes(article) == [AttemptOutcome.OK]


def test_a_worker_killed_mid_delivery_leaves_it_to_be_delivered_under_the_same_key(
    receiver, make_article
):
    receiver.plan("killed-mid-post", "stall")
    article = wait_current(make_article(slug="killed-mid-post"), "published")
    wait_for(lambda: receiver.requests_for("killed-mid-post"), what="the POST in flight")

    children = receiver.worker.children()
    assert children
    for pid in children:  # the pool's children: one of them is waiting for the answer
        os.kill(pid, signal.SIGKILL)

    delivery = wait_delivery(published_key(article), timeout=90)
    sent = receiver.requests_for("killed-mid-post")
    assert sent[0].status is None and sent[-1].status == 200
    assert {r.headers["Idempotency-Key"] for r in sent} == {delivery.key}
    assert delivery.attempts == 2
    article.refresh_from_db()
    assert article.status == ArticleStatus.PUBLISHED


def test_the_events_of_one_article_are_delivered_in_order(receiver, make_article):
    """The delete waits while the publish event retries (two 500s), then follows it."""
    receiver.plan("in-order", 500, 500)
    article = wait_current(make_article(slug="in-order"), "published")
    published = published_key(article)
    wait_for(lambda: receiver.requests_for("in-order"), what="the first, refused, try")

    article.delete()

    wait_delivery(published)
    wait_delivery(idempotency_key(article.uid, "deleted"))
    sent = receiver.requests_for("in-order")
    assert [(r.json["event"], r.status) for r in sent] == [
        ("article.published", 500),
        ("article.published", 500),
        ("article.published", 200),
        ("article.deleted", 200),
    ]


def test_a_dead_event_stops_blocking_the_next_one(receiver, make_article):
    receiver.plan("dead-then-next", 400)
    article = wait_current(make_article(slug="dead-then-next"), "published")
    wait_delivery(published_key(article), DeliveryStatus.DEAD)

    article.delete()

    wait_delivery(idempotency_key(article.uid, "deleted"))
    sent = receiver.requests_for("dead-then-next")
    assert [(r.json["event"], r.status) for r in sent] == [
        ("article.published", 400),
        ("article.deleted", 200),
    ]


def delivered_then_one_without_message(
    receiver, make_article, slug: str
) -> tuple[Article, WebhookDelivery]:
    """An article published and its event delivered; then one more event of it in the
    outbox whose message never reached the broker (it was down).

    The worker that delivered the first one finishes its task first: after the release
    it sends the article's next pending delivery (`_next_of_article`), and a row made in
    between would get a message after all, and be taken by the worker (a CI run saw it)."""
    article = wait_current(make_article(slug=slug), "published")
    wait_delivery(published_key(article))
    queues = [q.name for q in celery_queues(app.conf.task_default_queue)[1]]
    wait_for(
        lambda: worker_is_idle(receiver.worker, queues, watchdogs=False),
        what="the webhook worker to finish the delivery's task",
    )
    lost = WebhookDelivery.objects.create(
        article_id=article.pk,
        event="article.published",
        key=f"lost-{slug}".ljust(64, "0"),
        body=json.dumps({"event": "article.published", "slug": slug, "id": article.pk}),
    )
    return article, lost


def test_the_catch_up_sends_a_delivery_whose_message_was_lost(receiver, make_article):
    article, lost = delivered_then_one_without_message(receiver, make_article, "lost-message")

    first = WebhookDelivery.objects.filter(article_id=article.pk).order_by("pk").first()

    report = catch_up()

    assert report.deliveries_sent == 1
    wait_delivery(lost.key)
    assert [r.headers["Idempotency-Key"] for r in receiver.requests_for("lost-message")] == [
        first.key,
        lost.key,
    ]


def test_publish_pending_sends_the_due_deliveries_without_the_broker(receiver, make_article):
    _article, lost = delivered_then_one_without_message(receiver, make_article, "backup-executor")
    out = io.StringIO()

    call_command("publish_pending", stdout=out)

    assert "publish_pending: webhook deliveries: 1 delivered" in out.getvalue()
    assert WebhookDelivery.objects.get(pk=lost.pk).status == DeliveryStatus.DELIVERED
    assert receiver.requests_for("backup-executor")[-1].headers["Idempotency-Key"] == lost.key


def test_with_the_webhook_turned_off_the_outbox_keeps_its_pending_deliveries(
    receiver, make_article, settings
):
    _article, kept = delivered_then_one_without_message(receiver, make_article, "webhook-off")
    settings.PUBLISH_WEBHOOK_URL = ""

    assert webhook_deliver(delivery_id=kept.pk).reason == "the webhook is off"
    assert catch_up().deliveries_sent == 0
    kept.refresh_from_db()
    assert (kept.status, kept.attempts, kept.dispatched_at) == (DeliveryStatus.PENDING, 0, None)
    assert len(receiver.requests_for("webhook-off")) == 1  # the first event's only


def test_delete_sends_a_signed_delete_event(receiver, make_article):
    article = wait_current(make_article(slug="short-lived-hook"), "published")
    wait_delivery(published_key(article))
    published = receiver.requests_for("short-lived-hook")[-1]

    article.delete()

    wait_delivery(idempotency_key(published.json["uid"], "deleted"))
    deleted = receiver.requests_for("short-lived-hook")[-1]
    assert deleted.json["event"] == "article.deleted"
    assert signature_is_valid(deleted)
    assert deleted.json["uid"] == published.json["uid"]
    assert deleted.headers["Idempotency-Key"] != published.headers["Idempotency-Key"]


def test_withdraw_sends_one_signed_withdrawn_event_and_no_delete_event(receiver):
    story = story_save(title="Back to draft", body="Live a while.", slug="withdrawn-hook")
    article = wait_current(story_publish(story_id=story.pk), "published")
    wait_delivery(published_key(article))
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


def test_publishing_an_unchanged_story_again_sends_no_second_event(receiver):
    """ "Publish" pressed again with nothing changed (a double click), a second later: an
    undated story keeps its first publish's date, so nothing is published again and
    the webhook says `article.published` once."""
    story = story_save(title="Said once", body="Once.", slug="published-once-hook")
    article = wait_current(story_publish(story_id=story.pk), "published")
    wait_delivery(published_key(article))
    # Dates are whole seconds: from here on "now" is another date than its first one.
    wait_for(
        lambda: timezone.now().replace(microsecond=0) > article.publish_at,
        timeout=5,
        what="the clock to pass the first publish's second",
    )

    again = story_publish(story_id=story.pk)
    story_publish(story_id=story.pk)
    wait_settled()

    assert WebhookDelivery.objects.filter(article_id=article.pk).count() == 1
    events = [r.json["event"] for r in receiver.requests_for("published-once-hook")]
    assert events == ["article.published"]
    assert again.publish_at == article.publish_at


def test_attempt_of_content_edited_since_is_not_announced(receiver, make_article):
    article = wait_current(make_article(slug="edited-meanwhile", body="One."), "published")
    stale = Article.objects.get(pk=article.pk)  # what a stalled attempt of "One." holds
    article.body = "Two."
    article.save()
    wait_current(article, "published")
    wait_delivery(published_key(article))

    WebhookPublisher().publish(stale)  # the stalled attempt wakes up

    assert WebhookDelivery.objects.filter(article_id=article.pk).count() == 2
    hashes = [r.json["content_hash"] for r in receiver.requests_for("edited-meanwhile")]
    assert hashes == [stale.content_hash, article.content_hash]


def test_content_restored_by_an_edit_is_a_new_event_under_a_key_of_its_own(receiver, make_article):
    """A, then B, then A again: the third publish had A's key, found A's row in the
    outbox and sent nothing, and the receiver stayed on B for good (a review's finding).
    Each publish is an event of its own; its attempt run again adds none."""
    article = wait_current(make_article(slug="restored", title="Title A"), "published")
    first = wait_delivery(published_key(article))
    for title in ("Title B", "Title A"):
        article.title = title
        article.save()
        wait_current(article, "published")
        wait_delivery(published_key(article))

    received = receiver.requests_for("restored")
    assert [r.json["title"] for r in received] == ["Title A", "Title B", "Title A"]
    keys = [r.headers["Idempotency-Key"] for r in received]
    assert len(set(keys)) == 3 and keys[0] == first.key
    assert received[0].json["content_hash"] == received[2].json["content_hash"]

    WebhookPublisher().publish(article)  # the third publish's attempt, run again

    assert WebhookDelivery.objects.filter(article_id=article.pk).count() == 3


def test_an_attempt_run_again_adds_no_second_delivery(receiver, make_article):
    article = wait_current(make_article(slug="published-twice"), "published")
    wait_delivery(published_key(article))

    WebhookPublisher().publish(article)  # a retried or overtaken attempt of the same content

    assert WebhookDelivery.objects.filter(article_id=article.pk).count() == 1
    assert len(receiver.requests_for("published-twice")) == 1


def test_a_captured_request_replayed_with_another_key_or_late_is_refused(
    receiver, documented, make_article
):
    """Issue 8: the signature covered the body only, so a captured request replayed
    under an edited Idempotency-Key passed every check and was applied again."""
    article = wait_current(make_article(slug="captured", title="Captured"), "published")
    wait_delivery(published_key(article))
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
