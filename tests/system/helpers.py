"""Assertions on end states shared by the system tests."""

from __future__ import annotations

import re
from pathlib import Path

from django.conf import settings
from django.db.models import Count, Q

from publishing.models import Article, ArticleStatus, AttemptOutcome, PublishAttempt
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

    try:
        wait_for(all_published, timeout=timeout, what=f"{len(ids)} article(s) to be published")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; not published: {unpublished_rows(ids)}") from None


def unpublished_rows(ids: list[int], most: int = 10) -> str:
    """The rows of `ids` not published, by status, and the first few as they stand: what a
    failed wait needs to say where the work stopped."""
    rows = Article.objects.filter(pk__in=ids).exclude(status=ArticleStatus.PUBLISHED)
    by_status = dict(rows.values_list("status").annotate(n=Count("id")).order_by())
    fields = ("id", "status", "attempts", "next_attempt_at", "lease_expires_at", "last_error")
    first = list(rows.order_by("id").values(*fields)[:most])
    return f"{by_status}, first {len(first)}: {first}"


def published_as_saved(article: Article) -> bool:
    """Published, and what is live is its content as last saved."""
    row = Article.objects.get(pk=article.pk)
    return row.status == ArticleStatus.PUBLISHED and row.published_hash == row.content_hash


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


DROPPED = re.compile(r"Discarding revoked task: publishing\.tasks\.publish_article\[([^\]]+)\]")
RAN = re.compile(r"Task publishing\.tasks\.publish_article\[([^\]]+)\] succeeded")


def messages_ran(log: Path) -> set[str]:
    """The task ids of the publish messages a worker ran (its log)."""
    return set(RAN.findall(log.read_text(errors="replace")))


def dropped_by(log: Path) -> set[str]:
    """The task ids of the publish messages a worker dropped unrun (its log)."""
    return set(DROPPED.findall(log.read_text(errors="replace")))


def assert_others_dropped(log: Path, articles: list[Article]) -> set[str]:
    """Once each save's message of `articles` was run or dropped by the worker whose log
    this is: some were dropped, only saves' messages were, and each one's row was
    published by another message's attempt (publishing.tasks.publish_discard). The ids
    dropped."""
    ids = [a.pk for a in articles]
    message_ids = set(Article.objects.filter(pk__in=ids).values_list("message_id", flat=True))
    assert "" not in message_ids and len(message_ids) == len(articles)

    wait_for(
        lambda: message_ids <= dropped_by(log) | messages_ran(log),
        what="each save's message run or dropped",
    )
    assert dropped_by(log) & message_ids, "no message of the burst was dropped"
    assert dropped_by(log) <= message_ids
    published_by = dict(
        PublishAttempt.objects.filter(article_id__in=ids, outcome=AttemptOutcome.OK).values_list(
            "article__message_id", "task_id"
        )
    )
    assert all(published_by[message_id] != message_id for message_id in dropped_by(log))
    return dropped_by(log)


def log_count(proc, needle: str) -> int:
    """How many times `needle` is in the process's log so far."""
    return proc.log.read_text(errors="replace").count(needle)


def mails(needle: str) -> list[str]:
    """The run's mails containing `needle` (the mail folder is the whole run's: name an
    article by its slug in parentheses, as the alert does, so `poison-0` does not also
    match another test's `poison-0b89e5-1`)."""
    mail_dir = settings.EMAIL_FILE_PATH
    if not mail_dir.exists():
        return []
    return [t for p in mail_dir.iterdir() if needle in (t := p.read_text(errors="replace"))]
