"""The catch-up in-process: what it sends, and that doubling it changes nothing."""

from __future__ import annotations

from datetime import timedelta

import psycopg
import pytest
from django.db import connection
from django.utils import timezone

from publishing.dispatch import eta_horizon
from publishing.models import Article
from publishing.services import catch_up

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.broker,  # the catch-up's sends are the subject: runs again on RabbitMQ
]


def backdate(article: Article, seconds: float) -> None:
    past = timezone.now() - timedelta(seconds=seconds)
    Article.objects.filter(pk=article.pk).update(publish_at=past, updated_at=past)


def test_catch_up_sends_stale_due_rows_once_per_stale_period(quiet_article, sent_tasks, settings):
    stale = quiet_article()
    fresh = quiet_article()
    backdate(stale, settings.PUBLISH_STALE_AFTER + 5)
    sent_tasks.clear()

    first = catch_up()
    second = catch_up()  # a second Beat, or a second run soon after

    assert sent_tasks == [stale.pk]
    assert (first.stale_found, first.stale_sent) == (1, 1)
    assert (second.stale_found, second.stale_sent) == (0, 0)
    assert fresh.pk not in sent_tasks


def test_catch_up_arms_scheduled_rows_before_they_are_due(quiet_article, sent_tasks, settings):
    soon = quiet_article(publish_at=timezone.now() + timedelta(seconds=eta_horizon() / 2))
    later = quiet_article(publish_at=timezone.now() + timedelta(days=1))
    sent_tasks.clear()

    report = catch_up()

    assert report.armed == 1
    assert sent_tasks == [soon.pk]
    assert later.pk not in sent_tasks


def test_catch_up_ignores_leased_and_backing_off_rows(quiet_article, sent_tasks, settings):
    leased = quiet_article()
    backing_off = quiet_article()
    for article in (leased, backing_off):
        backdate(article, settings.PUBLISH_STALE_AFTER + 5)
    in_a_minute = timezone.now() + timedelta(minutes=1)
    Article.objects.filter(pk=leased.pk).update(lease_expires_at=in_a_minute)
    Article.objects.filter(pk=backing_off.pk).update(next_attempt_at=in_a_minute)
    sent_tasks.clear()

    assert catch_up().stale_found == 0
    assert sent_tasks == []


def test_catch_up_stops_sending_at_the_first_failure(quiet_article, sent_tasks, settings):
    from tests.support.broker import broker
    from tests.support.processes import free_port

    for _ in range(3):
        backdate(quiet_article(), settings.PUBLISH_STALE_AFTER + 5)
    sent_tasks.clear()

    with broker(f"redis://127.0.0.1:{free_port()}/0"):  # nothing listens there
        report = catch_up()

    assert (report.stale_found, report.stale_sent) == (3, 0)
    assert len(sent_tasks) == 1  # one try; the other two wait for the next run
    assert Article.objects.filter(dispatched_at__isnull=False).count() == 0


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="row locks: on SQLite a writer locks the file"
)
def test_catch_up_passes_by_a_row_a_save_holds_and_sends_the_others(
    quiet_article, sent_tasks, settings
):
    """An edit under way holds its row (the API's PATCH locks it while it validates):
    the catch-up sends the other stale rows and leaves that one to the save, which
    sends its own message as it commits (a review's finding: the catch-up waited for
    it, 207 s behind a slow PATCH)."""
    held, other = quiet_article(), quiet_article()
    for article in (held, other):
        backdate(article, settings.PUBLISH_STALE_AFTER + 5)
    sent_tasks.clear()
    with psycopg.connect(**connection.get_connection_params()) as editor:
        editor.execute("SET lock_timeout = '30s'")
        editor.execute("SELECT id FROM publishing_article WHERE id = %s FOR UPDATE", [held.pk])
        with connection.cursor() as cursor:  # a wait for the lock fails, not hangs, here
            cursor.execute("SET lock_timeout = '5s'")
        try:
            report = catch_up()
        finally:
            with connection.cursor() as cursor:
                cursor.execute("RESET lock_timeout")

        assert (report.stale_found, report.stale_sent) == (2, 1)
        assert sent_tasks == [other.pk]
    assert Article.objects.get(pk=held.pk).dispatched_at is None
