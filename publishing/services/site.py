"""The site as a whole: a deleted article leaves every target; the full check."""

from __future__ import annotations

import logging
from datetime import datetime

from django.conf import settings
from django.db import transaction

from publishing.models import Article
from publishing.publishers import each_publisher, get_publishers
from publishing.services.refresh import (
    shared_views_pass,
    shared_views_request,
    shared_views_whole,
)
from work.runs import scheduled_run

logger = logging.getLogger(__name__)

# The live title beside the current one: a removal tells receivers what readers saw, never
# an edit that was not live yet (a message sent before it was added has none).
UNPUBLISH_FIELDS = ("id", "uid", "slug", "published_slug", "title", "published_title")


def unpublish_snapshot(article: Article) -> dict:
    """What the targets need of an article being deleted, once its row is gone: JSON,
    for the unpublish message (publishing.signals.article_deleted)."""
    snapshot = {field: getattr(article, field) for field in UNPUBLISH_FIELDS}
    snapshot["uid"] = str(snapshot["uid"])
    # Where it was listed (ISO): the site rewrites the pages that link to it there.
    listed_at = article.published_publish_at
    snapshot["listed_at"] = listed_at.isoformat() if listed_at else ""
    # "deleted", or "withdrawn" (back to draft): the targets tell their readers which.
    snapshot["event"] = article.deleted_as
    return snapshot


def _article(snapshot: dict) -> Article:
    article = Article(**{k: snapshot.get(k) for k in UNPUBLISH_FIELDS})
    if snapshot.get("listed_at"):  # where it was listed, to its neighbours (article_deleted)
        article.published_publish_at = datetime.fromisoformat(snapshot["listed_at"])
    # What the removal means to readers: a delete, or a withdraw (back to draft).
    article.deleted_as = snapshot.get("event") or "deleted"
    return article


def article_forget(*, snapshot: dict) -> None:
    """Inside the delete's transaction: every target records what must go, so the next
    refresh takes the article off even if the unpublish message never arrives."""
    article = _article(snapshot)
    each_publisher(lambda publisher: publisher.forget(article), what="forget", raising=True)


def articles_readdress(article_ids: list[int]) -> None:
    """These live articles have former addresses that no publish will write (an
    import's aliases of articles it left unchanged): every target notes them, and the
    next pass writes their pages, not the next full check (docs/site.md, "Former
    addresses")."""
    if not article_ids:
        return
    each_publisher(lambda publisher: publisher.readdress(article_ids), what="readdress")
    transaction.on_commit(shared_views_request, robust=True)


def article_unpublish(*, snapshot: dict) -> None:
    """A deleted article leaves every target. `snapshot` holds UNPUBLISH_FIELDS, since
    the row is gone, and `event`: "withdrawn" when the writer took it back to draft
    (each target's `withdraw`), else a delete; publishers raise TransientPublishError
    to be retried."""
    withdrawn = snapshot.get("event") == "withdrawn"
    try:
        for publisher in get_publishers():
            if withdrawn:
                publisher.withdraw(_article(snapshot))
            else:
                publisher.unpublish(_article(snapshot))
    finally:
        # The row is gone whatever a later target answered: the index and feed drop it
        # at the next pass, not after that target's retries.
        shared_views_request()
    logger.info(
        "article %s (%s) %s",
        snapshot.get("id"),
        snapshot.get("slug"),
        "withdrawn" if withdrawn else "unpublished",
    )


def site_reconcile(*, whole: bool = False) -> bool | None:
    """The full check (targets drop what the database no longer has, every view is
    rebuilt): run by the catch-up every PUBLISH_RECONCILE_EVERY. A run of its own, one
    at a time and never beside another heavy job (work.runs); one that finds the
    previous still running, or a large catch-up batch, is skipped (None) and due again
    at the next catch-up. False when the check failed or its pass was not done (another
    pass held the refresher's lease past the wait, or it failed or was overtaken): the
    caller runs a refresh. `whole` (`restore_check --repair`): passes until the views
    are whole, a long rebuild's last slice included (shared_views_whole)."""
    with scheduled_run(
        "reconcile", lease_seconds=settings.PUBLISH_CATCHUP_TIME_LIMIT, heavy=True
    ) as run:
        if run.skipped:
            return None
        done = shared_views_whole(full=True) if whole else shared_views_pass(full=True)
        run.failed = not done
        run.detail = (
            "full check done"
            if done
            else "not done: the check failed, or another pass held the refresher's lease, "
            "or its pass failed or was overtaken"
        )
    return done
