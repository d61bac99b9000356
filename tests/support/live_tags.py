"""Listed articles with tags, made in the database without the pipeline (bulk_create:
no signals, nothing dispatched), with their live tags' rows as a completion writes them
(publishing.services.live_tags): for the tests of what reads the tags in use."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from publishing.models import Article, ArticleStatus
from publishing.services.live_tags import live_tags_write


def listed_with_tags(*tag_lists: list[str], slug: str = "tagged") -> list[Article]:
    """One listed article per list of tags, a minute apart, oldest first."""
    base = timezone.now() - timedelta(days=1)
    articles = []
    for n, tags in enumerate(tag_lists):
        at = base + timedelta(minutes=n)
        article = Article(
            title=f"Tagged {n}",
            slug=f"{slug}-{n}",
            body="Text.",
            publish_at=at,
            tags=tags,
            status=ArticleStatus.PUBLISHED,
            published_title=f"Tagged {n}",
            published_slug=f"{slug}-{n}",
            published_body="Text.",
            published_publish_at=at,
            published_at=at,
            published_tags=tags,
        )
        article.fill_slug_keys()
        article.content_hash = article.published_hash = article._content_hash()
        articles.append(article)
    made = Article.objects.bulk_create(articles)
    live_tags_write(made)
    return made
