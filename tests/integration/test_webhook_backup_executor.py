"""The webhook's deliveries sent by the backup executor (`publish_pending`), in this
process, with no worker: against real receivers on local ports (tests/support/receiver.py)
that trickle, stay silent or are down (docs/operations.md, "When the broker is down"),
and what their errors and alerts say of the URLs."""

from __future__ import annotations

import io
import json
import uuid

import pytest
from django.core.management import call_command

from digest.delivery import post_digest
from digest.exceptions import DigestSendError
from publishing.alerts import send_alert
from publishing.models import DeliveryStatus, WebhookDelivery
from tests.support.processes import free_port
from tests.support.receiver import Receiver
from tests.support.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "test-webhook-secret-of-at-least-32-characters"


@pytest.fixture
def receiver():
    receiver = Receiver().start()
    yield receiver
    receiver.stop()


def webhook_on(settings, url: str, **extra) -> None:
    settings.PUBLISH_WEBHOOK_URL = url
    settings.PUBLISH_WEBHOOK_SECRET = SECRET
    for name, value in extra.items():
        setattr(settings, name, value)


def outbox(*slugs: str) -> list[WebhookDelivery]:
    """A due delivery per slug, of articles of their own, as a publish leaves them (no
    message sent: nothing but the backup executor takes them)."""
    rows = WebhookDelivery.objects.bulk_create(
        WebhookDelivery(
            article_id=10_000 + n,
            event="article.published",
            key=uuid.uuid4().hex,
            body=json.dumps({"event": "article.published", "slug": slug}),
        )
        for n, slug in enumerate(slugs)
    )
    return sorted(rows, key=lambda row: row.pk)


def run_backup_executor() -> str:
    out = io.StringIO()
    call_command("publish_pending", stdout=out)
    return out.getvalue()


def test_publish_pending__a_trickling_receiver_is_stopped_inside_the_delivery_lease(
    settings, receiver
):
    """Each byte inside the read timeout: only the try's time limit (80 % of its lease)
    ends it, before a worker could take the delivery over and POST it again."""
    webhook_on(settings, receiver.url, PUBLISH_WEBHOOK_TIMEOUT=1.0, PUBLISH_WEBHOOK_LEASE_SECONDS=2)
    receiver.plan("bx-trickle", "trickle")
    [row] = outbox("bx-trickle")

    out = run_backup_executor()

    row.refresh_from_db()
    assert "webhook deliveries: 1 retry" in out
    assert (row.status, row.attempts, row.lease_expires_at) == (DeliveryStatus.PENDING, 1, None)
    assert "time limit" in row.last_error
    [posted] = receiver.requests_for("bx-trickle")
    assert posted.answered_at is None  # still trickling when the pass was over


def test_publish_pending__a_silent_receiver_costs_one_try_a_pass_and_leaves_the_rest(
    settings, receiver
):
    """A pass took every due delivery again while any was due: with a receiver that
    never answers, each try waited its timeout, until every delivery was dead."""
    webhook_on(
        settings,
        receiver.url,
        PUBLISH_WEBHOOK_TIMEOUT=0.5,
        PUBLISH_WEBHOOK_MAX_ATTEMPTS=2,
        PUBLISH_RETRY_BACKOFF_MAX=1,
    )
    slugs = [f"bx-silent-{n}" for n in range(3)]
    for slug in slugs:
        receiver.plan(slug, *["stall"] * 3)
    rows = outbox(*slugs)

    out = run_backup_executor()

    assert "webhook deliveries: 2 left for the next pass, 1 retry" in out
    attempts = dict(WebhookDelivery.objects.values_list("pk", "attempts"))
    assert [attempts[row.pk] for row in rows] == [1, 0, 0]
    assert not WebhookDelivery.objects.filter(status=DeliveryStatus.DEAD).exists()

    run_backup_executor()  # the next pass: the first backs off, the next is tried

    attempts = dict(WebhookDelivery.objects.values_list("pk", "attempts"))
    assert [attempts[row.pk] for row in rows] == [1, 1, 0]


def test_a_secret_in_the_webhooks_urls_is_in_no_error_alert_or_log(settings, caplog):
    """Slack-style URLs carry their secret in the path or query: requests' errors repeat
    the URL, and it went into last_error (the dashboard, the admin), the logs and the
    alerts (a review's finding). The error names the setting and the reason."""
    alerts = Receiver().start()
    port = free_port()  # nothing listens there: connection refused
    try:
        webhook_on(
            settings,
            f"http://127.0.0.1:{port}/services/T0/B0/SEKRET-PATH?token=SEKRET-QUERY",
            PUBLISH_WEBHOOK_MAX_ATTEMPTS=1,
            ALERT_WEBHOOK_URL=alerts.url,
            ALERT_WEBHOOK_SECRET=SECRET,
            ADMINS=[],
        )
        [row] = outbox("bx-secret")

        run_backup_executor()

        row.refresh_from_db()
        assert row.status == DeliveryStatus.DEAD
        assert row.last_error == "PUBLISH_WEBHOOK_URL unreachable: connection refused"
        [alert] = wait_for(lambda: alerts.received, what="the delivery's dead alert")
        assert "connection refused" in alert.body.decode()

        # The alert webhook's own failure, logged.
        settings.ALERT_WEBHOOK_URL = f"http://127.0.0.1:{port}/hooks/SEKRET-ALERT?k=SEKRET"
        send_alert(kind="test", subject="test", message="test", data={})
        assert "ALERT_WEBHOOK_URL failed: connection refused" in caplog.text
    finally:
        alerts.stop()
    with alerts.lock:
        assert not any(b"SEKRET" in r.body for r in alerts.received)
    assert "SEKRET" not in caplog.text


def test_the_digests_webhook_error_names_its_setting_not_its_url():
    url = f"http://127.0.0.1:{free_port()}/SEKRET-PATH?token=SEKRET"
    with pytest.raises(DigestSendError) as failed:
        post_digest({"day": "2026-12-06"}, url=url, secret=SECRET)
    assert str(failed.value) == "digest DIGEST_WEBHOOK_URL unreachable: connection refused"
