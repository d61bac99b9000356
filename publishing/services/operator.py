"""What an operator does from the admin: requeue a dead article, publish one now."""

from __future__ import annotations

import logging

from django.db import transaction
from django.db.models.functions import Now
from django.utils import timezone

from publishing.dispatch import dispatch_publish
from publishing.models import FRESH_PENDING, Article, ArticleStatus
from work.db import after_commit

logger = logging.getLogger(__name__)


def article_requeue(*, article_id: int) -> bool:
    """Dead → pending with a fresh budget of attempts, and dispatched after commit."""
    requeued = Article.objects.filter(pk=article_id, status=ArticleStatus.DEAD).update(
        **FRESH_PENDING, updated_at=Now()
    )
    if requeued:
        logger.info("article %s requeued", article_id)
        after_commit(dispatch_publish, article_id)
    return bool(requeued)


def article_publish_now(*, article_id: int) -> bool:
    """A pending row goes out now: no waiting for its schedule or its backoff."""
    with transaction.atomic():
        article = (
            Article.objects.select_for_update()
            .filter(pk=article_id, status=ArticleStatus.PENDING)
            .first()
        )
        if article is None:
            return False
        Article.objects.filter(pk=article_id).update(next_attempt_at=None, updated_at=Now())
        if article.publish_at > timezone.now():
            # The date is content (it is on the page): a save, whose receiver dispatches.
            article.publish_at = timezone.now()
            article.save()
            return True
    after_commit(dispatch_publish, article_id)
    return True
