"""The straight line with real parts: a celery worker process, Redis, the database."""

from __future__ import annotations

import threading

import pytest
from django.conf import settings
from django.db import connection

from publishing.models import Article, ArticleStatus, AttemptOutcome, PublishAttempt
from publishing.services import Outcome, article_publish
from publishing.tasks import publish_article
from tests.support.chaos import journal_entries, release
from tests.support.settling import queue_is_drained
from tests.support.site import without_json_ld
from tests.support.waiting import wait_for, wait_status

pytestmark = pytest.mark.django_db(transaction=True)


def page_of(slug: str):
    return settings.SITE_ROOT / slug / "index.html"


def status_of(article: Article) -> str:
    return Article.objects.values_list("status", flat=True).get(pk=article.pk)


def test_saved_article_is_published_with_rendered_sanitised_page(worker, make_article):
    article = make_article(
        title="Hello, world",
        body=(
            "# Heading\n\nSome **bold** text.\n\n<script>alert('x')</script>\n\n"
            '<img src="x.png" onerror="alert(1)">'
        ),
    )

    wait_status(article, ArticleStatus.PUBLISHED)

    html = page_of(article.slug).read_text(encoding="utf-8")
    assert "<strong>bold</strong>" in html
    assert "<h1>Heading</h1>" in html
    assert "<script" not in without_json_ld(html)
    assert "onerror" not in html
    assert '<img src="x.png" alt="" loading="lazy" decoding="async">' in html
    assert article.published_hash == article.content_hash
    assert article.lease_expires_at is None
    assert [a.outcome for a in article.publish_attempts.all()] == [AttemptOutcome.OK]


def test_chinese_title_gives_a_working_slug_and_page(worker, make_article):
    article = make_article(title="你好，世界：第一篇文章", slug="")

    assert article.slug == "你好世界第一篇文章"
    wait_status(article, ArticleStatus.PUBLISHED)
    assert "你好，世界：第一篇文章" in page_of(article.slug).read_text(encoding="utf-8")


def test_fifty_concurrent_calls_publish_once(worker, make_article, chaos):
    slug = "fifty-at-once"
    chaos(slug, hold=6)  # the first attempt holds its lease until every call was made
    article = make_article(slug=slug)
    wait_for(
        lambda: article.publish_attempts.filter(outcome="").exists(),
        what="the first attempt to be under way",
    )

    held = f"article {article.pk} not claimed: another attempt holds its lease"
    before = worker.log.read_text().count(held)  # ids come back after a flush
    for _ in range(40):
        publish_article.delay(article.pk)

    results = []

    def call() -> None:
        try:
            results.append(article_publish(article_id=article.pk, retry_in=lambda n: 0))
        finally:
            connection.close()

    threads = [threading.Thread(target=call) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wait_for(
        lambda: worker.log.read_text().count(held) >= before + 40,
        what="the 40 messages to meet it",
    )
    release(slug)

    wait_status(article, ArticleStatus.PUBLISHED)
    wait_for(lambda: len(journal_entries(slug)) >= 1, what="the page write")
    # Let every message be consumed before counting: the queue drains, nothing is running.
    wait_for(lambda: queue_is_drained(), timeout=60, what="the queue to drain")
    attempts = list(PublishAttempt.objects.filter(article=article))
    assert [a.outcome for a in attempts] == [AttemptOutcome.OK]
    assert len(journal_entries(slug)) == 1
    # Every call in this process met the attempt under way, none published.
    assert all(r.outcome is Outcome.SKIPPED and "holds its lease" in r.reason for r in results)


def test_edit_republishes_and_unchanged_save_publishes_nothing(worker, make_article, sent_tasks):
    article = make_article(body="First version.")
    wait_status(article, ArticleStatus.PUBLISHED)

    article.body = "Second version."
    article.save()
    wait_for(
        lambda: article.publish_attempts.filter(outcome=AttemptOutcome.OK).count() == 2,
        what="the second version to be published",
    )
    article = wait_status(article, ArticleStatus.PUBLISHED)
    assert "Second version." in page_of(article.slug).read_text(encoding="utf-8")
    assert [e[1] for e in journal_entries(article.slug)] == [
        PublishAttempt.objects.filter(article=article).order_by("id")[0].content_hash,
        article.content_hash,
    ]

    sent_before = sent_tasks.count(article.pk)
    article.full_clean()
    article.save()  # nothing changed

    assert status_of(article) == ArticleStatus.PUBLISHED
    assert sent_tasks.count(article.pk) == sent_before
    assert PublishAttempt.objects.filter(article=article).count() == 2
