"""Tags written past validation with a lone surrogate: SQLite keeps the JSON escape
`\\ud800` that PostgreSQL's jsonb refuses, and the text read back could not be encoded
(the content hash, a query's parameter). One such row made every group it was claimed
in raise, so the healthy articles beside it went dead after their leases ran out, "the
last attempt never finished" (a review's finding). Read back, a lone surrogate is
U+FFFD, as the rendering makes invalid UTF-8; the row costs nothing to the others."""

from __future__ import annotations

import pytest
from django.db import connection

from publishing.models import Article, ArticleStatus
from publishing.services.catch_up import publish_pending

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "sqlite", reason="jsonb refuses a lone surrogate"),
]


def test_a_lone_surrogate_in_a_rows_tags_costs_the_articles_beside_it_nothing(
    quiet_article, settings, tmp_path
):
    settings.SITE_ROOT = tmp_path / "site"
    settings.PUBLISH_PUBLISHERS = ["blogpublish.site.StaticSitePublisher"]
    healthy = [quiet_article(tags=["fine"]) for _ in range(3)]
    odd = quiet_article(tags=["fine"])
    Article.objects.filter(pk=odd.pk).update(tags=["lone\ud800x", "fine"])

    assert Article.objects.get(pk=odd.pk).tags == ["lone\ufffdx", "fine"]
    outcomes = publish_pending(limit=10, retry_in=lambda attempt: 0.0)

    assert outcomes["published"] == 4, outcomes
    statuses = Article.objects.filter(pk__in=[a.pk for a in [*healthy, odd]]).values_list(
        "status", flat=True
    )
    assert set(statuses) == {ArticleStatus.PUBLISHED}
    assert "lone\ufffdx" in (settings.SITE_ROOT / odd.slug / "index.html").read_text()
