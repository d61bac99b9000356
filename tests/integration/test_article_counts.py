"""Articles per status as the database keeps them (ArticleCount, kept by triggers):
equal to counting the table after every way of writing rows (save, bulk_create,
update(), the services, delete), so /metrics and the dashboard need not count."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.db.models import Count
from django.utils import timezone

from publishing.models import Article, ArticleStatus
from publishing.selectors import article_counts, pipeline_status
from publishing.services import article_requeue

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def make_scheduled(make_article):
    """Articles due tomorrow: no worker that runs meanwhile (the session's, started by
    another test) publishes them under the test's feet."""

    def make(**fields) -> Article:
        return make_article(publish_at=timezone.now() + timedelta(days=1), **fields)

    return make


def counted() -> dict[str, int]:
    by_status = dict(
        Article.objects.values_list("status").annotate(n=Count("id")).values_list("status", "n")
    )
    return {status: by_status.get(status, 0) for status in ArticleStatus}


def test_counts_follow_every_way_of_writing_rows(make_scheduled):
    articles = [make_scheduled() for _ in range(5)]
    assert article_counts() == counted() == {"pending": 5, "published": 0, "dead": 0}

    bulk = Article.objects.bulk_create(
        [
            Article(title=f"Bulk {i}", slug=f"bulk-{i}", body="x", content_hash="0" * 64)
            for i in range(3)
        ]
    )
    Article.objects.filter(pk__in=[a.pk for a in articles[:3]]).update(
        status=ArticleStatus.PUBLISHED
    )
    Article.objects.filter(pk=articles[3].pk).update(status=ArticleStatus.DEAD)
    Article.objects.filter(pk=articles[0].pk).update(status=ArticleStatus.PUBLISHED)  # no change
    assert article_counts() == counted() == {"pending": 4, "published": 3, "dead": 1}

    assert article_requeue(article_id=articles[3].pk)
    edited = Article.objects.get(pk=articles[1].pk)
    edited.body = "Edited, so pending again."
    edited.save()
    Article.objects.filter(pk=articles[2].pk).delete()
    Article.objects.filter(pk__in=[a.pk for a in bulk]).delete()
    with connection.cursor() as cursor:  # raw SQL too
        cursor.execute(
            "UPDATE publishing_article SET status = 'dead' WHERE id = %s", [articles[4].pk]
        )
    assert article_counts() == counted() == {"pending": 2, "published": 1, "dead": 1}
    assert pipeline_status()["counts"]["dead"] == 1


def test_impossible_counts_are_recounted_after_a_flush_or_migrate(make_scheduled):
    from publishing.counts import article_counts_repair
    from publishing.models import ArticleCount

    make_scheduled()
    make_scheduled()
    assert not article_counts_repair()  # right: nothing to do
    ArticleCount.objects.all().delete()  # as a flush that empties the counts first
    Article.objects.filter(pk=Article.objects.first().pk).delete()  # the trigger: -1

    assert article_counts_repair()
    assert article_counts() == counted() == {"pending": 1, "published": 0, "dead": 0}
