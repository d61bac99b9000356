"""The site as a whole: a deleted article leaves every target; the full check."""

from __future__ import annotations

import logging

from publishing.models import Article
from publishing.publishers import get_publishers, run_optional_hook

logger = logging.getLogger(__name__)

UNPUBLISH_FIELDS = ("id", "uid", "slug", "published_slug", "title")


def article_unpublish(*, snapshot: dict) -> None:
    """A deleted article leaves every target. `snapshot` holds UNPUBLISH_FIELDS, since
    the row is gone; publishers raise TransientPublishError to be retried."""
    article = Article(**{k: snapshot.get(k) for k in UNPUBLISH_FIELDS})
    try:
        for publisher in get_publishers():
            publisher.unpublish(article)
    finally:
        # The row is gone whatever a later target answered: the index and feed drop it
        # now, not after that target's retries.
        run_optional_hook("refresh")
    logger.info("article %s (%s) unpublished", snapshot.get("id"), snapshot.get("slug"))


def site_reconcile() -> None:
    """The catch-up's full check: targets drop what the database no longer has."""
    run_optional_hook("reconcile")
