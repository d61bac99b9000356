"""Assertions on end states shared by the system tests."""

from __future__ import annotations

from django.conf import settings
from django.db.models import Count, Q

from publishing.models import Article, ArticleStatus, AttemptOutcome
from tests.support.waiting import wait_for


def save_articles(prefix: str, n: int, **fields) -> list[Article]:
    articles = []
    for i in range(n):
        article = Article(title=f"{prefix} {i}", slug=f"{prefix}-{i}", body=f"Body {i}.", **fields)
        article.full_clean()
        article.save()
        articles.append(article)
    return articles


def wait_all_published(articles: list[Article], timeout: float = 60.0) -> None:
    ids = [a.pk for a in articles]

    def all_published() -> bool:
        done = Article.objects.filter(pk__in=ids, status=ArticleStatus.PUBLISHED).count()
        return done == len(ids)

    wait_for(all_published, timeout=timeout, what=f"{len(ids)} article(s) to be published")


def assert_published_once(articles: list[Article]) -> None:
    """Published, page on disk, and exactly one successful attempt per content."""
    ids = [a.pk for a in articles]
    rows = Article.objects.filter(pk__in=ids).annotate(
        ok=Count("publish_attempts", filter=Q(publish_attempts__outcome=AttemptOutcome.OK))
    )
    problems = [
        f"{r.slug}: status={r.status} ok_attempts={r.ok}"
        for r in rows
        if r.status != ArticleStatus.PUBLISHED or r.ok != 1
    ]
    missing = [r.slug for r in rows if not (settings.SITE_ROOT / r.slug / "index.html").exists()]
    assert not problems, problems
    assert not missing, f"pages missing: {missing}"
    assert len(rows) == len(ids)
