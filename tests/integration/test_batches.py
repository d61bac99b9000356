"""Backlogs published by batch tasks (publishing.services.publish) on a real worker,
Redis and database: every per-row guarantee of the single path holds inside a batch."""

from __future__ import annotations

import threading
import uuid
from datetime import timedelta

import pytest
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import connection
from django.db.models import Count, Q
from django.utils import timezone

from publishing.dispatch import dispatch_batches
from publishing.models import Article, ArticleStatus, AttemptOutcome, PublishAttempt
from publishing.services import catch_up, claim_group, publish, publish_group
from publishing.tasks import publish_article
from tests.integration.test_failures import alert_mails, outcomes
from tests.support.chaos import journal_entries
from tests.support.waiting import wait_for, wait_status
from work.celery_app import celery_app

pytestmark = pytest.mark.django_db(transaction=True)


def backlog(prefix: str, n: int) -> list[Article]:
    """`n` validated due rows written without a message each (as the import writes them)."""
    articles = []
    for i in range(n):
        article = Article(title=f"{prefix} {i}", slug=f"{prefix}-{i}", body=f"Body {i}.")
        article.full_clean()
        article.content_hash = article._content_hash()
        articles.append(article)
    return Article.objects.bulk_create(articles)


def all_published(articles: list[Article]) -> bool:
    ids = [a.pk for a in articles]
    return Article.objects.filter(pk__in=ids, status=ArticleStatus.PUBLISHED).count() == len(ids)


def ok_counts(articles: list[Article]) -> dict[str, int]:
    rows = Article.objects.filter(pk__in=[a.pk for a in articles]).annotate(
        ok=Count("publish_attempts", filter=Q(publish_attempts__outcome=AttemptOutcome.OK))
    )
    return {row.slug: row.ok for row in rows}


def test_a_batch_with_a_poisoned_article__it_goes_dead_the_rest_publish(worker, chaos):
    prefix = f"poison-{uuid.uuid4().hex[:6]}"
    chaos(f"{prefix}-1", fail="transient")  # every attempt fails
    articles = backlog(prefix, 12)
    poisoned, healthy = articles[1], articles[:1] + articles[2:]

    assert dispatch_batches() == settings.PUBLISH_BATCH_TASKS

    wait_for(lambda: all_published(healthy), timeout=60, what="the healthy rows to publish")
    wait_status(poisoned, ArticleStatus.DEAD, timeout=60)
    assert poisoned.attempts == settings.PUBLISH_MAX_ATTEMPTS
    assert outcomes(poisoned) == [AttemptOutcome.RETRY] * (settings.PUBLISH_MAX_ATTEMPTS - 1) + [
        AttemptOutcome.DEAD
    ]
    assert "chaos: transient failure" in poisoned.last_error
    assert set(ok_counts(healthy).values()) == {1}
    # One attempt row per claimed article: the healthy ones were claimed once each.
    assert PublishAttempt.objects.filter(article__in=healthy).count() == len(healthy)
    assert all(len(journal_entries(a.slug)) == 1 for a in healthy)
    mails = wait_for(lambda: alert_mails(poisoned.title), what="the dead-letter alert")
    assert len(mails) == 1
    # Claimed by batches: several articles share a task id.
    task_ids = PublishAttempt.objects.filter(article__in=healthy).values_list("task_id", flat=True)
    assert len(set(task_ids)) < len(healthy)


def test_a_claim_takes_at_most_its_limit_oldest_first(transactional_db):
    prefix = f"limit-{uuid.uuid4().hex[:6]}"
    articles = backlog(prefix, 7)

    first = claim_group(limit=3)
    second = claim_group(limit=3)

    assert [c.article.pk for c in first] == [a.pk for a in articles[:3]]
    assert [c.article.pk for c in second] == [a.pk for a in articles[3:6]]
    assert [c.token for c in first + second] == [1] * 6
    assert PublishAttempt.objects.filter(article__in=articles, outcome="").count() == 6


def test_a_messages_group_takes_its_own_row_then_the_last_sent_others(transactional_db):
    """The others a message's group takes are the due rows saved (or requeued) last,
    whose messages are the queue's last, whatever their dates: the next messages are
    for rows still due (`_claimable`). Here the dates run the other way, as when the
    admin's "Publish now" sends a list sorted newest first."""
    articles = backlog(f"last-sent-{uuid.uuid4().hex[:6]}", 6)
    base = timezone.now() - timedelta(hours=1)
    for i, article in enumerate(articles):
        Article.objects.filter(pk=article.pk).update(
            updated_at=base + timedelta(minutes=i), publish_at=base - timedelta(minutes=i)
        )

    claims = claim_group(limit=3, first=articles[1].pk)

    # Its own row, then by date: the two sent last are the two oldest.
    assert [c.article.pk for c in claims] == [a.pk for a in (articles[1], articles[5], articles[4])]
    after = claim_group(limit=3, first=articles[0].pk)
    assert [c.article.pk for c in after] == [a.pk for a in (articles[0], articles[3], articles[2])]


def test_two_claimers_at_once_never_take_one_row_twice(transactional_db):
    prefix = f"race-{uuid.uuid4().hex[:6]}"
    articles = backlog(prefix, 60)
    taken: dict[str, list[int]] = {"a": [], "b": []}
    start = threading.Barrier(2)

    def claimer(name: str) -> None:
        try:
            start.wait()
            while claims := claim_group(limit=4, worker=name):
                taken[name] += [claim.article.pk for claim in claims]
        finally:
            connection.close()

    threads = [threading.Thread(target=claimer, args=(name,)) for name in taken]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    ids = sorted(a.pk for a in articles)
    assert sorted(taken["a"] + taken["b"]) == ids  # each row once, none missed
    assert not set(taken["a"]) & set(taken["b"])
    rows = Article.objects.filter(pk__in=ids)
    assert set(rows.values_list("attempts", "claims")) == {(1, 1)}
    assert PublishAttempt.objects.filter(article__in=ids).count() == len(ids)


def test_two_batch_consumers_on_one_backlog_publish_each_row_once(worker):
    """The worker's batches and this process's, on one backlog at once."""
    prefix = f"shared-{uuid.uuid4().hex[:6]}"
    articles = backlog(prefix, 40)

    dispatch_batches()
    here = 0
    while report := publish_group(retry_in=publish_article.backoff, worker="test-process"):
        if not report.claimed:
            break
        here += report.claimed

    wait_for(lambda: all_published(articles), timeout=60, what="the backlog to be published")
    assert set(ok_counts(articles).values()) == {1}
    attempts = PublishAttempt.objects.filter(article__in=articles)
    assert attempts.count() == len(articles)  # none claimed twice
    assert attempts.filter(worker="test-process").count() == here
    assert all(len(journal_entries(a.slug)) == 1 for a in articles)


def test_the_catch_up_sends_batches_for_a_large_stale_backlog(worker, settings, sent_tasks):
    """More than PUBLISH_BATCH_THRESHOLD stale rows: batches, not a message per row."""
    settings.PUBLISH_BATCH_THRESHOLD = 5
    prefix = f"stale-{uuid.uuid4().hex[:6]}"
    articles = backlog(prefix, 12)
    past = timezone.now() - timedelta(seconds=settings.PUBLISH_STALE_AFTER + 5)
    Article.objects.filter(pk__in=[a.pk for a in articles]).update(publish_at=past, updated_at=past)
    sent_tasks.clear()

    report = catch_up()

    assert report.stale_found >= 12 and report.stale_sent == report.stale_found
    assert sent_tasks == []  # no publish_article per row
    wait_for(lambda: all_published(articles), timeout=60, what="the stale backlog to publish")
    assert set(ok_counts(articles).values()) == {1}


def test_a_long_batch_completes_in_groups_each_row_once(transactional_db, monkeypatch):
    monkeypatch.setattr(publish, "COMPLETE_EVERY", 2)
    prefix = f"groups-{uuid.uuid4().hex[:6]}"
    articles = backlog(prefix, 7)

    report = publish_group(retry_in=publish_article.backoff, limit=7, worker="here")

    assert report.claimed == 7 and report.outcomes == {"published": 7}
    assert all_published(articles)
    assert set(ok_counts(articles).values()) == {1}
    assert PublishAttempt.objects.filter(article__in=articles).count() == 7


def test_a_groups_dead_row_is_alerted_after_every_row_has_its_outcome(
    transactional_db, chaos, monkeypatch
):
    """An alert (a mail, a webhook with its own timeout) is sent once the group is over,
    never inside it, where its wait would use the other rows' lease (issue 17)."""
    prefix = f"dead-in-group-{uuid.uuid4().hex[:6]}"
    articles = backlog(prefix, 4)
    chaos(articles[0].slug, fail="permanent")
    leased_at_alert = []

    def alert(*, article_ids: list[int]) -> int:
        leased = Article.objects.filter(pk__in=[a.pk for a in articles])
        leased_at_alert.append(leased.filter(lease_expires_at__isnull=False).count())
        return len(article_ids)

    monkeypatch.setattr(publish, "articles_dead_alerts", alert)

    report = publish_group(retry_in=publish_article.backoff, limit=4, worker="here")

    assert report.outcomes == {"dead": 1, "published": 3}
    assert leased_at_alert == [0]


def test_the_soft_time_limit_in_the_middle_of_a_groups_messages_loses_none(monkeypatch, sent_tasks):
    """A group may meet the soft limit while it sends the messages of the rows it let go
    (`send_next`): they are still sent (to the broker), before the hard limit, and the
    limit still reaches the group (which then completes and lets go what it must); the
    dispatch's own error handling must not swallow it (a review's finding)."""
    app = celery_app()
    real, calls = app.send_task, []

    def limit_once(*args, **kwargs):
        calls.append(args)
        if len(calls) == 1:
            raise SoftTimeLimitExceeded()
        return real(*args, **kwargs)

    monkeypatch.setattr(app, "send_task", limit_once)
    let_go = [10**9 + 1, 10**9 + 2]  # no such rows: their messages end after one read
    results = [publish.AttemptResult(publish.Outcome.RELEASED, i) for i in [10**9, *let_go]]

    with pytest.raises(SoftTimeLimitExceeded):
        publish.send_next(results, own=10**9)

    assert sent_tasks == let_go
