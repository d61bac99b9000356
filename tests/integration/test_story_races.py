"""A story's services racing deletes and the clock (issue 22 review), on PostgreSQL's
row locks: two transactions that take a story's row and its article's row must take
them in one order, or the database kills one of them as a deadlock. No worker: the
races are in the database, before anything is sent."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from django.core.exceptions import ValidationError
from django.db import connection, connections

from publishing import signals
from publishing.models import Article, Story
from publishing.services import (
    story_publish,
    story_save,
    story_trash,
    story_withdraw,
)
from tests.support.waiting import wait_for

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="row locks: SQLite has one writer at a time"
    ),
]


def another_is_waiting_on_a_lock() -> bool:
    """Some other session of the test database waits for a lock. (The statistics are
    read once per transaction unless cleared: the caller is inside one.)"""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'"
        )
        return cursor.fetchone()[0] > 0


class Racer(threading.Thread):
    """Runs `action` on a connection of its own; its outcome or error kept."""

    def __init__(self, action: Callable[[], object]):
        super().__init__(daemon=True)
        self.action, self.error, self.result = action, None, None

    def run(self) -> None:
        try:
            self.result = self.action()
        except Exception as exc:  # kept for the assertion
            self.error = exc
        finally:
            connections.close_all()


def published_story(slug: str) -> Story:
    story = story_save(title=f"Story {slug}", body="Text.", slug=slug)
    story_publish(story_id=story.pk)
    return Story.objects.get(pk=story.pk)


@pytest.mark.parametrize(
    "service",
    [
        pytest.param(lambda pk: story_publish(story_id=pk), id="publish"),
        pytest.param(lambda pk: story_withdraw(article_id=pk), id="withdraw"),
        pytest.param(lambda pk: story_trash(story_id=pk), id="trash"),
    ],
)
def test_an_article_delete_racing_a_story_service_is_no_deadlock(monkeypatch, service):
    """The Article list's delete takes the article's row (its cascade's order), then the
    story's (the trash); the story services take the story's, then the article's. The
    service starts while the delete holds its first lock and the delete goes on once
    the service waits for a lock: with opposite orders that is a deadlock."""
    story = published_story("raced")
    story_save(story_id=story.pk, title="Raced, edited", body="New text.", slug="raced")
    racer = Racer(lambda: service(story.pk))
    real = signals.article_to_trash

    def trash_once_the_service_waits(*, article):
        racer.start()
        wait_for(another_is_waiting_on_a_lock, timeout=20, what="the service to wait on a lock")
        real(article=article)

    monkeypatch.setattr(signals, "article_to_trash", trash_once_the_service_waits)
    Article.objects.get(pk=story.pk).delete()
    racer.join(timeout=30)

    assert not racer.is_alive()
    # After the delete the story is in the trash: the service is refused, or (withdraw)
    # finds no article; never killed as a deadlock.
    assert racer.error is None or isinstance(racer.error, ValidationError | Article.DoesNotExist), (
        repr(racer.error)
    )
    assert not Article.objects.filter(pk=story.pk).exists()
    assert Story.objects.get(pk=story.pk).trashed_at is not None
