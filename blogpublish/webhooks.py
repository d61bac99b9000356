"""The webhook publisher: tells another system that an article is live, or gone.

On when PUBLISH_WEBHOOK_URL is set. Each event is one POST of a JSON object, signed,
with a key that lets the receiver drop repeats (docs/site.md, "The webhook"):

    Content-Type: application/json
    Idempotency-Key: <sha256 hex of "<uid>:<content_hash>">   same content, same key
    X-Blogpublish-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<key>.<raw body>">
                             with PUBLISH_WEBHOOK_SECRET (publishing/signing.py)

A timeout, a connection error, 408, 429 or 5xx is transient (the attempt is retried);
any other answer outside 2xx is permanent (the article goes dead, the status code in
its last error).
"""

from __future__ import annotations

import hashlib
import json
import logging

import requests
from django.conf import settings

from blogpublish.site.documents import rfc3339
from blogpublish.site.paths import article_url
from blogpublish.site.selectors import has_content
from publishing.exceptions import PermanentPublishError, TransientPublishError
from publishing.publishers import BasePublisher
from publishing.signing import signed_headers

logger = logging.getLogger(__name__)

TRANSIENT_STATUSES = frozenset({408, 429})
CONNECT_TIMEOUT = 3.05  # a little over a multiple of 3 s, the TCP retransmission window
ANSWER_EXCERPT_CHARS = 200


def idempotency_key(uid: object, version: str) -> str:
    """The same for the same article and content; new after an edit. `version` is the
    content hash, or "deleted" / "withdrawn" for those events."""
    return hashlib.sha256(f"{uid}:{version}".encode()).hexdigest()


def encode(payload: dict) -> bytes:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def published_payload(article) -> dict:
    return {
        "event": "article.published",
        "id": article.pk,
        "uid": str(article.uid),
        "slug": article.slug,
        "title": article.title,
        "url": article_url(article.slug),
        # The article's date, as its page shows it: the same in every retry.
        "published_at": rfc3339(article.publish_at),
        "content_hash": article.content_hash,
    }


def deleted_payload(article) -> dict:
    slug = article.published_slug or article.slug
    return {
        "event": "article.deleted",
        "id": article.pk,
        "uid": str(article.uid),
        "slug": slug,
        "title": article.title,
        "url": article_url(slug),
        "published_at": None,
        "content_hash": None,
    }


def check_answer(status: int, text: str) -> None:
    """Raise what the pipeline needs to know about the receiver's answer."""
    if 200 <= status < 300:
        return
    message = f"webhook answered HTTP {status}"
    answer = " ".join(text.split())[:ANSWER_EXCERPT_CHARS]
    if answer:
        message = f"{message}: {answer}"
    if status in TRANSIENT_STATUSES or status >= 500:
        raise TransientPublishError(message)
    # Other 4xx: the receiver refuses this event. 3xx: the URL is wrong (a POST must not
    # be followed to another address). Retrying cannot help either.
    raise PermanentPublishError(message)


class WebhookPublisher(BasePublisher):
    def __init__(self, url: str | None = None, secret: str | None = None):
        self.url = url or settings.PUBLISH_WEBHOOK_URL
        self.secret = settings.PUBLISH_WEBHOOK_SECRET if secret is None else secret
        read = settings.PUBLISH_WEBHOOK_TIMEOUT
        self.timeout = (min(CONNECT_TIMEOUT, read), read)

    def publish(self, article) -> None:
        """Announce this content, unless it is no longer the article's: then this attempt
        cannot complete, and the one for the newer content announces that instead. (A
        receiver may still, rarely, get an older version after a newer one: docs/site.md.)"""
        if not has_content(article_id=article.pk, content_hash=article.content_hash):
            logger.info("article %s was edited or deleted; webhook not sent", article.pk)
            return
        key = idempotency_key(article.uid, article.content_hash)
        self.send(published_payload(article), key=key)

    def unpublish(self, article) -> None:
        """A delete event, sent for every deleted article: a receiver ignores an id it
        never saw (an article deleted before it was ever published)."""
        self.send(deleted_payload(article), key=idempotency_key(article.uid, "deleted"))

    def withdraw(self, article) -> None:
        """The writer took the article back to draft (publishing.services.stories): the
        delete event's fields under `article.withdrawn`, once per Article row (a story
        published again gets a new row, so a new uid and new keys)."""
        payload = {**deleted_payload(article), "event": "article.withdrawn"}
        self.send(payload, key=idempotency_key(article.uid, "withdrawn"))

    def send(self, payload: dict, *, key: str) -> None:
        body = encode(payload)
        # Signed at each try, so a retry's timestamp is fresh and its key the same.
        headers = {
            **signed_headers(secret=self.secret, key=key, body=body),
            "User-Agent": "blogpublish-webhook/1",
        }
        try:
            response = requests.post(
                self.url, data=body, headers=headers, timeout=self.timeout, allow_redirects=False
            )
        except requests.Timeout as exc:
            raise TransientPublishError(f"webhook timed out: {exc}") from exc
        except requests.RequestException as exc:  # connection refused, DNS, TLS, …
            raise TransientPublishError(f"webhook unreachable: {exc}") from exc
        check_answer(response.status_code, response.text)
        logger.info(
            "webhook %s for article %s: HTTP %s",
            payload["event"],
            payload["id"],
            response.status_code,
        )
