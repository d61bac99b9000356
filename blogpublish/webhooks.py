"""The webhook publisher: tells another system that an article is live, or gone.

On when PUBLISH_WEBHOOK_URL is set. Each event is one POST of a JSON object, signed,
with a key that lets the receiver drop repeats (docs/site.md, "The webhook"):

    Content-Type: application/json
    Idempotency-Key: <sha256 hex of "<uid>:<content_hash>", and ":after:<id>" once
                     the article had an earlier published event>   one key per publish
    X-Blogpublish-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<key>.<raw body>">
                             with PUBLISH_WEBHOOK_SECRET (publishing/signing.py)

The POST is a delivery, not the publish: `publish`, `publish_many`, `unpublish` and
`forget` only put the event in the outbox (publishing.services.deliveries, one row per
publish and event, however often an attempt runs), and a delivery task sends
it after the publish, with retries of its own, dead after PUBLISH_WEBHOOK_MAX_ATTEMPTS
with one alert. A slow receiver, a 4xx or a long outage never changes the article's
status: `published` means its page is live.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence

from django.db import transaction

from blogpublish.site.documents import rfc3339
from blogpublish.site.paths import article_url
from publishing.models import Article
from publishing.publishers import BasePublisher
from publishing.services.deliveries import NewDelivery, deliveries_enqueue, deliveries_last

# What the digest and the tests import from here: the request is publishing's
# (publishing/webhook_post.py), shared by every webhook blogpublish sends.
from publishing.webhook_post import CONNECT_TIMEOUT, check_answer

__all__ = ["CONNECT_TIMEOUT", "WebhookPublisher", "check_answer", "encode", "idempotency_key"]

logger = logging.getLogger(__name__)

PUBLISHED = "article.published"
DELETED = "article.deleted"


def idempotency_key(uid: object, version: str, *, after: int | None = None) -> str:
    """One per event: the same at every try and every run of the attempt that made it,
    new after an edit. `version` is the content hash, or "deleted" / "withdrawn" for
    those events; `after` the outbox id of the article's previous published event, for
    each publish but its first, so content A, then B, then A again is a third event
    under a key of its own (it reused A's, and the receiver stayed on B: a review's
    finding). A first publish's key is the same as before `after` was added."""
    text = f"{uid}:{version}" if after is None else f"{uid}:{version}:after:{after}"
    return hashlib.sha256(text.encode()).hexdigest()


def encode(payload: dict) -> bytes:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def published_payload(article) -> dict:
    return {
        "event": PUBLISHED,
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
    """What readers saw of the article (its live version), never an edit not live yet:
    the title of a pending edit (an embargoed headline) went out in the delete event (a
    review's finding). An article never live has no title, slug or address to tell: its
    slug, made from an embargoed headline, went out too (a review of the mend)."""
    slug = article.published_slug
    return {
        "event": DELETED,
        "id": article.pk,
        "uid": str(article.uid),
        "slug": slug,
        "title": article.published_title or "",
        "url": article_url(slug) if slug else None,
        "published_at": None,
        "content_hash": None,
    }


def _delivery(payload: dict, *, key: str) -> NewDelivery:
    return NewDelivery(
        article_id=payload["id"],
        event=payload["event"],
        key=key,
        body=encode(payload).decode("utf-8"),
    )


def published_delivery(article, *, previous=None) -> NewDelivery:
    """The article's published event; `previous` its latest published event so far (a
    WebhookDelivery), if any. The same Article row (uid) with the same content as that
    one is the same publish (a retry, a take-over, an attempt run again): its key, so
    nothing new goes into the outbox. Another uid is a story published again after a
    withdraw or a trash (a new row of the same id): a publish of its own even with
    unchanged content, since a removal event came between (a review's finding: it took
    the old row's key, and the receiver stayed on "withdrawn")."""
    key = idempotency_key(article.uid, article.content_hash)
    if previous is not None:
        before = json.loads(previous.body)
        if before.get("uid") == str(article.uid) and (
            before.get("content_hash") == article.content_hash
        ):
            key = previous.key
        else:
            key = idempotency_key(article.uid, article.content_hash, after=previous.pk)
    return _delivery(published_payload(article), key=key)


def removed_delivery(article) -> NewDelivery:
    """`article.deleted`, or `article.withdrawn` when the writer took it back to draft
    (`article.deleted_as`); one key per Article row and kind."""
    kind = "withdrawn" if article.deleted_as == "withdrawn" else "deleted"
    payload = {**deleted_payload(article), "event": f"article.{kind}"}
    return _delivery(payload, key=idempotency_key(article.uid, kind))


def _held_if_current(articles: list) -> set[int]:
    """The ids of the articles that still have the content being announced, their rows
    locked until the caller's transaction ends, all in one statement. A delete or a
    withdraw deletes the row (so waits for the lock) before its removal event goes into
    the outbox in the same transaction: it cannot commit between this check and the
    published event's insert, which left "published" after "deleted" in the outbox, the
    receiver's last word on an article that was gone (a review's finding). On SQLite the
    transaction (IMMEDIATE) holds the database's write lock, which orders them the same.
    FOR NO KEY UPDATE: the weakest lock Django takes that a DELETE waits for. The same
    row, too (its uid): a story withdrawn and published again unchanged is a new row of
    the same id and content, and the withdrawn row's attempt, paused meanwhile, announced
    it after its withdraw (a review of the mend)."""
    rows = (
        Article.objects.select_for_update(no_key=True)
        .filter(pk__in=[a.pk for a in articles])
        .order_by("pk")  # one order everywhere: two groups never wait for each other
        .values_list("pk", "content_hash", "uid")
    )
    current = {pk: (content_hash, uid) for pk, content_hash, uid in rows}
    return {a.pk for a in articles if current.get(a.pk) == (a.content_hash, a.uid)}


class WebhookPublisher(BasePublisher):
    """Puts events in the outbox; the deliveries go out on their own (see the module)."""

    # A group's events go into the outbox in one statement; an overtaken attempt's
    # event is the same row as the newer attempt's (its key), so adds nothing.
    in_groups = True

    def publish(self, article) -> None:
        self.publish_many([article])

    def publish_many(self, articles: list, *, listed_with: Sequence = ()) -> dict[int, Exception]:
        """Announce this content of each article, unless it is no longer the article's:
        then this attempt cannot complete, and the one for the newer content announces
        that instead. An attempt that runs again (a retry, a take-over) finds its
        delivery already there and adds none."""
        with transaction.atomic():
            held = _held_if_current(articles)
            last = deliveries_last(article_ids=[a.pk for a in articles], event=PUBLISHED)
            current = []
            for article in articles:
                if article.pk in held:
                    current.append(published_delivery(article, previous=last.get(article.pk)))
                else:
                    logger.info("article %s was edited or deleted; no webhook event", article.pk)
            deliveries_enqueue(current)
        return {}

    def forget(self, article) -> None:
        """Inside the delete's transaction: the delete event is in the outbox once the
        delete commits, even if the unpublish message never arrives."""
        deliveries_enqueue([removed_delivery(article)])

    def unpublish(self, article) -> None:
        """A delete event, sent for every deleted article: a receiver ignores an id it
        never saw (an article deleted before it was ever published). Normally `forget`
        has put it in the outbox already; then this adds nothing."""
        deliveries_enqueue([removed_delivery(article)])

    def withdraw(self, article) -> None:
        """The writer took the article back to draft (publishing.services.stories): the
        delete event's fields under `article.withdrawn`, once per Article row (a story
        published again gets a new row, so a new uid and new keys). Normally `forget`
        has put it in the outbox already; then this adds nothing."""
        deliveries_enqueue([removed_delivery(article)])
