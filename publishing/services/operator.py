"""What an operator does from the admin: requeue a dead article, publish one now."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from django.db import transaction
from django.db.models.functions import Now

from publishing.dispatch import dispatch_batches, dispatch_many, dispatch_publish
from publishing.models import FRESH_PENDING, Article, ArticleStatus
from work import lease
from work.db import after_commit, update_returning

logger = logging.getLogger(__name__)


def article_requeue(*, article_id: int) -> bool:
    """Dead → pending with a fresh budget of attempts, and dispatched after commit: a
    requeue of one, through the same statement as many (`articles_requeue`)."""
    return articles_requeue([article_id]) == 1


# Requeued at once up to this many: a message each, as saves send them; more go as a
# backlog does, through `publish_batch` (a group of rows a message), so 10,000 rows cost
# one UPDATE a chunk and a few messages, not 10,000 of each inside one web request
# (83 s for the admin's action on 10,000 dead articles: a review's finding).
ONE_BY_ONE = 100
REQUEUE_CHUNK = 1000


def articles_requeue(article_ids: Sequence[int]) -> int:
    """`article_requeue` for many rows: the dead ones among them pending again, a chunk
    of REQUEUE_CHUNK per UPDATE; dispatched after the commit, one message each up to
    ONE_BY_ONE, as a backlog's batches beyond (whatever the broker does not take, the
    catch-up takes). Returns how many were requeued."""
    requeued: list[int] = []
    # In key order, chunks and rows within each (lease.in_lock_order): two requeues at
    # once (the admin's action on a list sorted by title, the dashboard's Requeue all)
    # deadlocked on PostgreSQL, each holding rows the other waited for (a review's finding).
    ids = sorted(set(article_ids))
    with transaction.atomic():
        for start in range(0, len(ids), REQUEUE_CHUNK):
            chunk = ids[start : start + REQUEUE_CHUNK]
            rows = lease.in_lock_order(
                Article.objects.filter(pk__in=chunk, status=ArticleStatus.DEAD)
            )
            requeued += [
                a.pk
                for a in update_returning(rows, only=("id",), **FRESH_PENDING, updated_at=Now())
            ]
    if not requeued:
        return 0
    logger.info("dead article(s) requeued: %s", _ids_said(requeued))
    if len(requeued) <= ONE_BY_ONE:
        after_commit(dispatch_many, [(pk, None) for pk in sorted(requeued)])
    else:
        after_commit(dispatch_batches)
    return len(requeued)


def _ids_said(ids: list[int]) -> str:
    """The ids for the log: each of a few, the count of many."""
    return ", ".join(map(str, sorted(ids))) if len(ids) <= 10 else f"{len(ids)} of them"


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
        now = lease.db_now()  # the clock due times are read by, not this host's (a review's)
        if article.publish_at > now:
            # The date is content (it is on the page): a save, whose receiver dispatches.
            article.publish_at = now
            article.save()
            return True
    after_commit(dispatch_publish, article_id)
    return True
