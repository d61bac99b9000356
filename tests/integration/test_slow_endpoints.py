"""The project's HTTP calls against endpoints that answer badly, real servers on
loopback (a review's findings): an alert endpoint that takes forever to answer held a
publish for its task's time limit; a receiver's huge error page was read whole into
the worker's memory."""

from __future__ import annotations

import contextlib
import logging
import re
import socket
import threading

import pytest
from django.utils import timezone

from publishing import alerts
from publishing.alerts import send_alert
from publishing.exceptions import NoAnswer, PermanentPublishError, TransientPublishError
from publishing.models import Article, DeliveryStatus, WebhookDelivery
from publishing.services.deliveries import DeliveryOutcome, webhook_deliver
from publishing.webhook_post import post_signed, seconds_asked

HUGE = 64 * 2**20  # an error page no receiver should send, and no worker should read


class Endpoint:
    """A one-connection server on loopback: reads the request's head and body, then
    `answer(conn)`; `stop` ends whatever it is still doing."""

    def __init__(self, answer):
        self.answer = answer
        self.stop = threading.Event()
        self.sent = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/hook"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.listener.accept()
        with conn:
            head = b""
            while b"\r\n\r\n" not in head:
                head += conn.recv(65536)
            length = next(
                int(line.split(b":")[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            body = head.split(b"\r\n\r\n", 1)[1]
            while len(body) < length:
                body += conn.recv(65536)
            with contextlib.suppress(OSError):  # the client closed: what the test is about
                self.answer(self, conn)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(30)
        self.listener.close()


@pytest.fixture
def endpoint():
    made: list[Endpoint] = []
    yield lambda answer: made.append(Endpoint(answer)) or made[-1]
    for one in made:
        one.close()


def huge_error_page(server: Endpoint, conn: socket.socket) -> None:
    conn.sendall(
        b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/html\r\n"
        + f"Content-Length: {HUGE}\r\n\r\n".encode()
    )
    chunk = b"<p>Something went wrong.</p>" + b" " * (2**16 - 29)
    while server.sent < HUGE and not server.stop.is_set():
        conn.sendall(chunk)
        server.sent += len(chunk)


def test_a_receivers_huge_error_page_is_not_read_whole(endpoint):
    server = endpoint(huge_error_page)

    said = re.escape("HTTP 500: <p>Something went wrong.</p>")
    with pytest.raises(TransientPublishError, match=said):
        post_signed(url=server.url, secret="s" * 32, key="k" * 64, body=b"{}", read_timeout=5)

    server.thread.join(30)
    assert not server.thread.is_alive()
    # The client closed after the first bytes: the rest could not be sent (what the
    # socket buffers held aside), where a read of the whole page took all of it.
    assert server.sent < HUGE


def headers_a_byte_at_a_time(server: Endpoint, conn: socket.socket) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\n")
    while not server.stop.wait(0.2):  # a header that never ends, a byte at a time
        conn.sendall(b"X")


def test_an_alert_endpoint_that_never_finishes_answering_is_left_at_the_deadline(
    endpoint, settings, monkeypatch, caplog
):
    server = endpoint(headers_a_byte_at_a_time)
    settings.ALERT_WEBHOOK_URL = server.url
    settings.ALERT_WEBHOOK_SECRET = "alert-secret-of-at-least-32-characters"
    settings.ADMINS = []
    monkeypatch.setattr(alerts, "ALERT_DEADLINE", 1.0)
    caplog.set_level(logging.ERROR)

    send_alert(kind="article_dead", subject="Article 7 died", message="boom", data={})

    said = [r.getMessage() for r in caplog.records]
    assert any("did not answer within 1.0 s; left" in m for m in said), said


def too_many_requests(server: Endpoint, conn: socket.socket) -> None:
    conn.sendall(
        b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 120\r\nContent-Length: 9\r\n\r\nslow down"
    )


@pytest.mark.django_db(transaction=True)
def test_a_receivers_retry_after_is_the_next_tries_wait(endpoint, settings):
    """A 429 (or a 503 in maintenance) with Retry-After: the next try waits as asked (up
    to an hour), where the backoff spent the delivery's tries in seconds and made it dead
    (a review's finding: four tries in five seconds)."""
    server = endpoint(too_many_requests)
    settings.PUBLISH_WEBHOOK_URL = server.url
    settings.PUBLISH_WEBHOOK_SECRET = "webhook-secret-of-at-least-32-characters"
    article = Article(title="Asked to wait", slug="asked-to-wait", body="Text.")
    article.full_clean()
    article.save()
    delivery = WebhookDelivery.objects.create(
        article_id=article.pk, event="article.published", key="r" * 64, body="{}"
    )

    result = webhook_deliver(delivery_id=delivery.pk)

    assert result.outcome is DeliveryOutcome.RETRY and result.retry_in == 120
    row = WebhookDelivery.objects.get(pk=delivery.pk)
    assert (row.status, row.attempts) == (DeliveryStatus.PENDING, 1)
    assert "HTTP 429: slow down" in row.last_error
    assert (row.next_attempt_at - timezone.now()).total_seconds() > 100


@pytest.mark.parametrize(
    ("header", "seconds"),
    [("120", 120.0), ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0), ("soon", None), (None, None)],
)
def test_retry_after_in_seconds_or_as_a_date(header, seconds):
    assert seconds_asked(header) == seconds


def answering(raw: bytes):
    """An endpoint's answer: these bytes, then the connection closed."""
    return lambda server, conn: conn.sendall(raw)


UNREADABLE_BODIES = {
    "an unknown charset": (
        b"Content-Type: text/plain; charset=x-nope\r\nContent-Length: 3\r\n\r\nno!"
    ),
    # Codecs that refuse errors="replace" (UnicodeError, not LookupError): a review's.
    "an idna charset": (
        b"Content-Type: text/plain; charset=idna\r\nContent-Length: 4\r\n\r\n\xff\xfeno"
    ),
    "a punycode charset": (
        b"Content-Type: text/plain; charset=punycode\r\nContent-Length: 4\r\n\r\n\xff\xfeno"
    ),
    "a broken gzip": b"Content-Encoding: gzip\r\nContent-Length: 5\r\n\r\nhello",
    "a body cut short": b"Content-Length: 100000\r\n\r\nshort",
    "a broken chunk": b"Transfer-Encoding: chunked\r\n\r\nzz\r\nbad",
}


@pytest.mark.parametrize("body", UNREADABLE_BODIES.values(), ids=UNREADABLE_BODIES.keys())
def test_an_answer_is_classified_by_its_status_whatever_its_body(endpoint, body):
    """A 404 whose body could not be read or decoded was "unreachable", and tried again,
    and a 503's Retry-After was lost with it (a review's finding): the status line and
    the headers decide; the body only adds its words, or says it could not be read."""
    refused = endpoint(answering(b"HTTP/1.1 404 Not Found\r\n" + body))
    with pytest.raises(PermanentPublishError, match="webhook answered HTTP 404"):
        post_signed(url=refused.url, secret="s" * 32, key="k" * 64, body=b"{}", read_timeout=5)

    busy = endpoint(answering(b"HTTP/1.1 503 Maintenance\r\nRetry-After: 1800\r\n" + body))
    with pytest.raises(TransientPublishError, match="webhook answered HTTP 503") as raised:
        post_signed(url=busy.url, secret="s" * 32, key="k" * 64, body=b"{}", read_timeout=5)
    assert not isinstance(raised.value, NoAnswer)
    assert raised.value.asked_wait == 1800
