"""The watchers' reads (/metrics, /status.json, the dashboard) on a database that is slow
or holds much: a statement waiting on a lock ends in a 503 instead of holding a web
thread for as long as the lock, and the stuck count counts every stuck row."""

from __future__ import annotations

import threading
from datetime import timedelta

import psycopg
import pytest
from django.db import connection, connections
from django.utils import timezone

from publishing import views
from publishing.models import Article
from publishing.selectors import pipeline_status

pytestmark = pytest.mark.django_db(transaction=True)

TOKEN = "scrape-token-0123456789"


@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="a lock held by another session")
def test_metrics_answers_503_while_a_counted_table_is_locked(client, settings, monkeypatch):
    """A migration or a long transaction holding ArticleCount: each scrape waited for
    it, and those Prometheus gave up on kept every web thread (a review's finding)."""
    settings.METRICS_TOKEN = TOKEN
    monkeypatch.setattr(views, "READ_TIMEOUT_MS", 300)
    params = connection.get_connection_params()
    answers: list = []

    def scrape_once() -> None:
        try:
            answers.append(client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}"))
        finally:
            connections.close_all()  # this thread's own

    with psycopg.connect(**params, autocommit=False) as locker:
        locker.execute("LOCK TABLE publishing_articlecount IN ACCESS EXCLUSIVE MODE")
        scrape = threading.Thread(target=scrape_once, daemon=True)
        scrape.start()
        scrape.join(timeout=30)  # a deadline for a test that would otherwise hang
        locker.rollback()  # the lock goes: a scrape still waiting ends now
    scrape.join(timeout=30)

    assert answers, "the scrape never answered"
    assert answers[0].status_code == 503
    assert answers[0].content.startswith(b"the database is unavailable")
    # And once the lock is gone, the next scrape is answered in full.
    assert client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 200


def test_the_stuck_count_counts_past_the_hundred_it_lists(quiet_article, settings):
    long_ago = timezone.now() - timedelta(seconds=settings.PUBLISH_STUCK_AFTER + 60)
    made = [quiet_article(publish_at=long_ago) for _ in range(130)]
    Article.objects.filter(pk__in=[a.pk for a in made]).update(updated_at=long_ago)

    assert pipeline_status()["stuck"] == 130
