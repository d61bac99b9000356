"""The operators' reads and bulk writes (/metrics, /status.json, the dashboard, a bulk
requeue) on a database that is slow or holds much: a statement waiting on a lock ends in
a 503 instead of holding a web thread for as long as the lock, the stuck count counts
every stuck row, and two bulk requeues at once both end."""

from __future__ import annotations

import re
import threading
from datetime import timedelta

import psycopg
import pytest
from django.db import connection, connections
from django.utils import timezone

from publishing import views
from publishing.models import Article, ArticleStatus, content_hash_of
from publishing.selectors import pipeline_status
from publishing.services import operator

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


def test_oldest_due__waits_since_its_save_or_requeue_not_since_an_old_publish_at(
    quiet_article, client, settings
):
    """An old article edited, requeued or imported is work since then: by publish_at
    alone it had waited 400 days a second after its save (a review's finding)."""
    now = timezone.now()
    quiet_article("edited-old", publish_at=now - timedelta(days=400), pending_since=now)
    assert pipeline_status()["oldest_due_pending"]["waiting_seconds"] < 3600

    # Saved two hours ago for an hour ago: work for an hour, the longest wait of the two.
    quiet_article(
        "due-an-hour-ago",
        publish_at=now - timedelta(hours=1),
        pending_since=now - timedelta(hours=2),
    )
    oldest = pipeline_status()["oldest_due_pending"]
    assert oldest["title"] == "due-an-hour-ago"
    assert 3600 <= oldest["waiting_seconds"] < 2 * 3600

    settings.METRICS_TOKEN = TOKEN
    text = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").content.decode()
    gauge = re.search(r"^blogpublish_oldest_due_pending_seconds (\S+)$", text, re.M)
    assert gauge and 3600 <= float(gauge.group(1)) < 2 * 3600


def _dead(count: int, prefix: str) -> list[int]:
    past = timezone.now().replace(microsecond=0) - timedelta(hours=1)
    rows = []
    for n in range(count):
        slug = f"{prefix}-{n}"
        rows.append(
            Article(
                title=slug,
                slug=slug,
                slug_key=slug,
                body="Body.",
                publish_at=past,
                content_hash=content_hash_of(title=slug, slug=slug, body="Body.", publish_at=past),
                status=ArticleStatus.DEAD,
                attempts=5,
                last_error="x",
            )
        )
    Article.objects.bulk_create(rows, batch_size=500)
    return list(Article.objects.filter(status=ArticleStatus.DEAD).values_list("pk", flat=True))


def test_two_bulk_requeues_at_once_in_opposite_orders_both_end(monkeypatch):
    """The admin's action on a list in one order, the dashboard's Requeue all in
    another: on PostgreSQL each held rows the other waited for, and one admin got a
    500 (a review's finding). Each ends now, and every row is requeued once."""
    monkeypatch.setattr(operator, "after_commit", lambda *args, **kwargs: None)  # no sends
    ids = sorted(_dead(2400, "twice"))
    barrier = threading.Barrier(2)
    out: dict[str, object] = {}

    def requeue(name: str, order: list[int]) -> None:
        try:
            barrier.wait()
            out[name] = operator.articles_requeue(order)
        except Exception as exc:
            out[name] = repr(exc)
        finally:
            connections.close_all()

    runs = [
        threading.Thread(target=requeue, args=(name, order))
        for name, order in (("ascending", ids), ("descending", ids[::-1]))
    ]
    for run in runs:
        run.start()
    for run in runs:
        run.join(timeout=120)

    assert sorted(out) == ["ascending", "descending"], out
    assert all(isinstance(done, int) for done in out.values()), out
    assert sum(out.values()) == 2400  # type: ignore[arg-type]
    assert not Article.objects.filter(status=ArticleStatus.DEAD).exists()
