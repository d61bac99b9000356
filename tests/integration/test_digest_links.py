"""What the digest names and links: the live version of an article, published by the
real pipeline (the session's worker), not an edit that never went live."""

from __future__ import annotations

import uuid

import pytest
from django.conf import settings
from django.utils import timezone

from digest.content import digest_build
from publishing.models import ArticleStatus
from tests.support.waiting import wait_status

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_digest_names_and_links_the_live_version_not_an_edit_that_never_went_live(
    worker, make_article, chaos
):
    """A review's finding: the digest listed an article's current title and slug, so a
    rename whose publish failed linked to a page that does not exist."""
    article = make_article(title="Live title", slug=f"live-{uuid.uuid4().hex[:8]}")
    wait_status(article, ArticleStatus.PUBLISHED)
    live_slug = article.slug
    renamed = f"renamed-{uuid.uuid4().hex[:8]}"
    chaos(renamed, fail="permanent")  # the rename's publish is refused: dead
    article.title, article.slug = "Unpublished new title", renamed
    article.full_clean()
    article.save()
    article = wait_status(article, ArticleStatus.DEAD)
    assert (article.published_slug, article.published_title) == (live_slug, "Live title")

    content = digest_build(day=timezone.localdate())
    [listed] = [a for a in content["published"] if a["id"] == article.pk]
    assert listed["url"] == f"{settings.SITE_URL}/{live_slug}/"
    assert listed["title"] == "Live title"
    assert [a["title"] for a in content["slowest"] if a["id"] == article.pk] == ["Live title"]
