"""Dead-letter alerts: the log, the admins' mail and ALERT_WEBHOOK_URL, once per death."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from django.core import mail

from publishing.models import Article, ArticleStatus
from publishing.services import article_dead_alert
from tests.support.processes import free_port

pytestmark = pytest.mark.django_db(transaction=True)


class Receiver(BaseHTTPRequestHandler):
    received: list = []
    status = 200

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Receiver.received.append(json.loads(body))
        self.send_response(Receiver.status)
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def receiver():
    Receiver.received = []
    Receiver.status = 200
    server = HTTPServer(("127.0.0.1", 0), Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
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
