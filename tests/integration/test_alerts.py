"""Dead-letter alerts: the log, the admins' mail and ALERT_WEBHOOK_URL, once per death.
The alert webhook is signed like the publishing webhook and follows no redirect."""

from __future__ import annotations

import json
import logging
import socket
import threading
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from django.core import mail
from django.db.models import F

from publishing import alerts as alert_channels
from publishing.exceptions import TIME_LIMITS
from publishing.models import Alarm, Article, ArticleStatus, WebhookDelivery
from publishing.services import article_dead_alert
from publishing.services.alarms import (
    ALERT_WINDOW,
    ALERTS_PER_WINDOW,
    articles_dead_alerts,
    death_alerts_pass,
    death_key,
    delivery_dead_alert,
    storm_follow_ups,
)
from publishing.services.deliveries import deliveries_catch_up
from publishing.time_limits import attempt_time_limit
from tests.support import documented_receiver
from tests.support.processes import free_port
from tests.support.receiver import Receiver as LiveReceiver
from tests.support.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

ALERT_SECRET = "alert-secret-of-at-least-32-characters"


class Receiver(BaseHTTPRequestHandler):
    """Records what it gets; answers `status`, with `location` when that is set."""

    received: list = []
    requests: list = []  # (headers, raw body)
    status = 200
    location = ""

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        type(self).requests.append((dict(self.headers.items()), body))
        type(self).received.append(json.loads(body) if body else None)
        self.send_response(type(self).status)
        if type(self).location:
            self.send_header("Location", type(self).location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST  # a followed 302 arrives as a GET

    def log_message(self, *args) -> None:
        pass


def serve(handler: type[Receiver]):
    handler.received, handler.requests = [], []
    server = HTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def receiver(settings):
    Receiver.status, Receiver.location = 200, ""
    server = serve(Receiver)
    settings.ALERT_WEBHOOK_SECRET = ALERT_SECRET
    yield f"http://127.0.0.1:{server.server_port}/alerts", Receiver
    server.shutdown()
    server.server_close()


def dead_article(make_article) -> Article:
    article = make_article(title="Doomed")
    Article.objects.filter(pk=article.pk).update(
        status=ArticleStatus.DEAD, attempts=3, last_error="TransientPublishError: boom"
    )
    return article


def test_dead_alert_goes_to_log_mail_and_webhook_once(make_article, receiver, settings, caplog):
    url, handler = receiver
    settings.ALERT_WEBHOOK_URL = url
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    article = dead_article(make_article)

    assert article_dead_alert(article_id=article.pk) is True
    assert article_dead_alert(article_id=article.pk) is False  # a second caller: nothing

    assert [m["article_id"] for m in handler.received] == [article.pk]
    assert handler.received[0]["kind"] == "article_dead"
    assert handler.received[0]["last_error"] == "TransientPublishError: boom"
    assert len(mail.outbox) == 1 and "Doomed" in mail.outbox[0].body
    assert any("is dead after 3 attempt(s)" in r.getMessage() for r in caplog.records)


def test_alert_webhook_is_signed_as_the_documented_receiver_verifies(
    make_article, receiver, settings, tmp_path
):
    url, handler = receiver
    settings.ALERT_WEBHOOK_URL = url
    documented = documented_receiver.load(secret=ALERT_SECRET, workdir=tmp_path)

    assert article_dead_alert(article_id=dead_article(make_article).pk) is True

    [(headers, body)] = handler.requests
    assert documented["verify"](headers, body)
    assert len(headers["Idempotency-Key"]) == 32
    edited = {**headers, "Idempotency-Key": "another-key"}
    assert not documented["verify"](edited, body)
    wrong_secret = documented_receiver.load(secret="x" * 32, workdir=tmp_path)
    assert not wrong_secret["verify"](headers, body)


class RedirectTarget(Receiver):
    """Where the alert receiver's 302 points: nothing may arrive here."""

    received: list = []
    requests: list = []


def test_a_redirect_from_the_alert_hook_is_not_followed(make_article, receiver, settings, caplog):
    url, handler = receiver
    target = serve(RedirectTarget)
    try:
        handler.status = 302
        handler.location = f"http://127.0.0.1:{target.server_port}/elsewhere"
        settings.ALERT_WEBHOOK_URL = url
        article = dead_article(make_article)

        assert article_dead_alert(article_id=article.pk) is True

        assert len(handler.requests) == 1
        assert RedirectTarget.requests == []
        assert any("ALERT_WEBHOOK_URL failed: HTTP 302" in r.getMessage() for r in caplog.records)
    finally:
        target.shutdown()
        target.server_close()


@pytest.mark.parametrize("failure", ["500 from the hook", "nothing listening"])
def test_failing_alert_hook_is_logged_and_changes_nothing(
    failure, make_article, receiver, settings, caplog
):
    url, handler = receiver
    handler.status = 500
    settings.ALERT_WEBHOOK_URL = (
        url if failure == "500 from the hook" else (f"http://127.0.0.1:{free_port()}/alerts")
    )
    article = dead_article(make_article)

    assert article_dead_alert(article_id=article.pk) is True

    article.refresh_from_db()
    assert article.status == ArticleStatus.DEAD and article.alerted_at is not None
    assert any("ALERT_WEBHOOK_URL failed" in r.getMessage() for r in caplog.records)


def test_a_storm_of_deaths_sends_ten_alerts_then_one_that_counts_them(
    make_article, receiver, settings
):
    """A target down through an import of thousands: a mail per death would bury the
    admins. At most ALERTS_PER_WINDOW of one kind a window, then one that counts them;
    every death is stamped once all the same, and the next window alerts again."""
    url, handler = receiver
    settings.ALERT_WEBHOOK_URL = url
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    doomed = [dead_article(make_article) for _ in range(ALERTS_PER_WINDOW + 5)]

    sent = [article_dead_alert(article_id=article.pk) for article in doomed]

    assert sent == [True] * (ALERTS_PER_WINDOW + 1) + [False] * 4  # 10, the count, then quiet
    kinds = [alert["kind"] for alert in handler.received]
    assert kinds == ["article_dead"] * ALERTS_PER_WINDOW + ["article_dead_many"]
    assert [a["article_id"] for a in handler.received[:-1]] == [
        a.pk for a in doomed[:ALERTS_PER_WINDOW]
    ]
    assert handler.received[-1]["dead"] == len(doomed)
    assert f"{len(doomed)} articles are dead" in mail.outbox[-1].subject
    assert len(mail.outbox) == ALERTS_PER_WINDOW + 1
    assert not Article.objects.filter(alerted_at__isnull=True).exists()
    assert storm_follow_ups() == 0  # its window is not over

    # The window over (as ALERT_WINDOW seconds later): the catch-up's follow-up says how
    # many more died in it, once; then a death has its own alert again.
    earlier = timedelta(seconds=ALERT_WINDOW + 1)
    Alarm.objects.update(raised_at=F("raised_at") - earlier)
    Article.objects.update(alerted_at=F("alerted_at") - earlier)
    assert storm_follow_ups() == 1
    assert handler.received[-1]["kind"] == "article_dead_many"
    assert (handler.received[-1]["more"], handler.received[-1]["dead"]) == (4, len(doomed))
    assert storm_follow_ups() == 0
    later = dead_article(make_article)
    assert article_dead_alert(article_id=later.pk)
    assert handler.received[-1]["kind"] == "article_dead"
    assert handler.received[-1]["article_id"] == later.pk


def test_a_death_whose_alert_no_channel_took_is_alerted_by_a_later_catch_up(settings):
    """The death was stamped before its alert was sent, and a send that failed was only
    logged: an alert webhook down at that moment (no mail set) lost it for good (a
    review's finding). Unstamped, the catch-up sends it once the hook is up, under
    the same Idempotency-Key, once."""
    alerts = LiveReceiver().start()
    try:
        settings.ADMINS = []
        settings.ALERT_WEBHOOK_URL = alerts.url
        settings.ALERT_WEBHOOK_SECRET = ALERT_SECRET
        delivery = WebhookDelivery.objects.create(
            article_id=1, event="article.published", key="k" * 64, body="{}", status="dead"
        )
        alerts.go_down()

        assert delivery_dead_alert(delivery_id=delivery.pk) is False

        delivery.refresh_from_db()
        assert delivery.alerted_at is None
        alerts.come_up()
        assert deliveries_catch_up(limit=10) == (0, 1)
        assert deliveries_catch_up(limit=10) == (0, 0)
        with alerts.lock:
            [received] = alerts.received
        assert received.json["kind"] == "webhook_delivery_dead"
        assert received.json["delivery_id"] == delivery.pk
        assert received.headers["Idempotency-Key"] == death_key(
            "webhook_delivery_dead", delivery.pk, delivery.claims
        )
    finally:
        alerts.stop()


def test_a_pass_of_deaths_alerts_sends_no_more_after_one_no_channel_took(
    settings, make_article, receiver
):
    """A review's finding: with the alert channels down (or hung to their deadlines),
    a catch-up over a thousand unalerted deaths waited out every deadline once a row,
    each unstamped again for the next catch-up to do the same. The pass stops at the
    first, leaves the rest unstamped, and gives back the window's slot it took."""
    url, handler = receiver
    settings.ADMINS = []
    settings.ALERT_WEBHOOK_URL = url
    handler.status = 503
    doomed = [dead_article(make_article) for _ in range(3)]

    with death_alerts_pass():
        sent = [article_dead_alert(article_id=a.pk) for a in doomed]

    assert sent == [False, False, False]
    assert len(handler.received) == 1  # one try, not one a death
    assert not Article.objects.filter(alerted_at__isnull=False).exists()
    assert not Alarm.objects.filter(name__startswith="article_dead:", raised_at__isnull=False)
    handler.status = 200
    with death_alerts_pass():
        sent = [article_dead_alert(article_id=a.pk) for a in doomed]
    assert sent == [True, True, True]
    assert [r["article_id"] for r in handler.received[1:]] == [a.pk for a in doomed]


def test_a_mail_server_that_trickles_is_left_at_the_mails_deadline(settings, monkeypatch, caplog):
    """A review's finding: EMAIL_TIMEOUT bounds each read of the SMTP exchange, and a
    server that sends its greeting a byte at a time held the backup executor (and the
    catch-up, to its time limit) as long as it liked."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def trickle() -> None:
        connection, _ = listener.accept()
        with connection:
            for byte in b"220 mail.example.com ESMTP at its own pace" * 4:
                if stop.wait(0.5):
                    return
                connection.sendall(bytes([byte]))

    threading.Thread(target=trickle, daemon=True).start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", listener.getsockname()[1]
    settings.ADMINS = [("Ops", "ops@example.com")]
    settings.ALERT_WEBHOOK_URL = ""
    monkeypatch.setattr(alert_channels, "MAIL_DEADLINE", 1.0)
    caplog.set_level(logging.ERROR, logger="publishing.alerts")
    try:
        sent = alert_channels.send_alert(kind="test", subject="s", message="m", data={})
    finally:
        stop.set()
        listener.close()

    assert sent is alert_channels.Sent.LATE  # it may yet arrive: not sent again
    assert "did not take the mail within 1.0 s" in caplog.text


def test_an_alert_still_under_way_at_its_deadline_is_sent_again_and_ends_the_pass(
    settings, make_article, monkeypatch
):
    """Reviews of the mends: a channel still at it past its deadline (a slow hook, a
    mail server, a DNS lookup that hangs) may deliver the alert, or never: taken for
    sent, a late send that then failed lost the death for good. It is sent again by a
    later pass, under the same Idempotency-Key (at least once), and it ends its pass:
    the group's other deaths wait for the next (one wait a pass, not one a death)."""
    hook = LiveReceiver().start()
    try:
        settings.ADMINS = []
        settings.ALERT_WEBHOOK_URL = hook.url
        settings.ALERT_WEBHOOK_SECRET = ALERT_SECRET
        monkeypatch.setattr(alert_channels, "ALERT_DEADLINE", 0.5)
        doomed = [dead_article(make_article) for _ in range(3)]
        hook.plan(doomed[0].slug, "slow")  # answers 200 after SLOW_SECONDS

        assert articles_dead_alerts(article_ids=[a.pk for a in doomed]) == 0

        assert not Article.objects.filter(alerted_at__isnull=False).exists()
        monkeypatch.setattr(alert_channels, "ALERT_DEADLINE", 5.0)
        assert articles_dead_alerts(article_ids=[a.pk for a in doomed]) == 3
        late = wait_for(
            lambda: (
                len(hook.requests_for(doomed[0].slug)) == 2 and hook.requests_for(doomed[0].slug)
            ),
            what="the late one and its second send",
        )
        assert len({r.headers["Idempotency-Key"] for r in late}) == 1  # one alert, twice
        assert [len(hook.requests_for(a.slug)) for a in doomed[1:]] == [1, 1]
    finally:
        hook.stop()


def test_a_time_limit_during_a_deaths_alert_leaves_it_for_a_later_pass(settings, make_article):
    """A review of the mends: a delivery's death is alerted inside its try, under the
    try's time limit; a limit that came during the send left the death stamped and the
    alert unsent, for good. Now unstamped (and its slot given back), and raised on."""
    hook = LiveReceiver().start()
    try:
        settings.ADMINS = []
        settings.ALERT_WEBHOOK_URL = hook.url
        settings.ALERT_WEBHOOK_SECRET = ALERT_SECRET
        article = dead_article(make_article)
        hook.plan(article.slug, "stall")

        with pytest.raises(TIME_LIMITS), attempt_time_limit(soft=0.5, hard=4, lease=5):
            article_dead_alert(article_id=article.pk)

        assert Article.objects.get(pk=article.pk).alerted_at is None
        assert not Alarm.objects.filter(name__startswith="article_dead:", raised_at__isnull=False)
    finally:
        hook.stop()
