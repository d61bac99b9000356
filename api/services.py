"""What the API does beyond the publishing services: create once per Idempotency-Key."""

from __future__ import annotations

import hashlib
import json

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from api.exceptions import IdempotencyConflict
from api.models import IdempotencyKey
from publishing.models import Article
from publishing.services import article_create


def request_digest(data: dict) -> str:
    """The identity of a request body: its JSON with the keys sorted and no spaces, so
    the same fields in another order or layout are the same request."""
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


def article_create_once(
    *, user: User, key: str, digest: str, fields: dict, former_digest: str | None = None
) -> tuple[Article, bool]:
    """(article, created): the article this user's `key` created, if it made one with
    this request (`digest`, or `former_digest`, the same request's as a key spent before
    it was digested so was stored), else a new one made by `article_create` and recorded
    with the key (and `digest`) in the same transaction. IdempotencyConflict for the key
    with another request, or whose article was deleted; ValidationError (nothing stored)
    as `article_create` raises it."""
    digests = {digest, former_digest or digest}
    done = _spent(user, key)
    if done is not None:
        return _replay(done, digests), False
    try:
        with transaction.atomic():
            article = article_create(**fields)
            IdempotencyKey.objects.create(
                user=user, key=key, request_digest=digest, article=article
            )
    except (IntegrityError, ValidationError):
        # A request with the same key committed meanwhile: the unique constraint on the
        # key decided, or its article took the slug first (a ValidationError of the slug,
        # or the slug's unique index). Its answer is this one's too. Without such a key,
        # the error is this request's own.
        done = _spent(user, key)
        if done is None:
            raise
        return _replay(done, digests), False
    return article, True


def _spent(user: User, key: str) -> IdempotencyKey | None:
    return IdempotencyKey.objects.filter(user=user, key=key).first()


def _replay(done: IdempotencyKey, digests: set[str]) -> Article:
    if done.request_digest not in digests:
        raise IdempotencyConflict(
            "This Idempotency-Key was already used with another request body; use a new "
            "key for a new article."
        )
    article = Article.objects.filter(pk=done.article_id).first() if done.article_id else None
    if article is None:
        raise IdempotencyConflict(
            "The article created with this Idempotency-Key has been deleted or withdrawn "
            "since (a withdrawn one is a draft now: GET /api/drafts); use a new key to "
            "create it again."
        )
    return article
