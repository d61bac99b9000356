"""The article's life in words (blogpublish.desk.life), for every state: a pure function."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from blogpublish.desk.life import life_of, span
from publishing.models import Article, ArticleStatus

NOW = datetime(2026, 12, 1, 8, 0, 0, tzinfo=UTC)


def article(**fields) -> Article:
    fields.setdefault("title", "T")
    fields.setdefault("body", "b")
    fields.setdefault("publish_at", NOW - timedelta(hours=1))
    return Article(**fields)


def words(a: Article) -> tuple[str, str]:
    life = life_of(a, now=NOW, max_attempts=5)
    return life.kind, life.text


def test_published__live_since():
    a = article(status=ArticleStatus.PUBLISHED, published_at=NOW - timedelta(minutes=3))
    assert words(a) == ("live", "live since 1 Dec 2026 07:57 UTC (3 min ago)")


def test_scheduled__date_and_time_to_go():
    a = article(status=ArticleStatus.PENDING, publish_at=NOW + timedelta(hours=2))
    assert words(a) == ("scheduled", "scheduled for 1 Dec 2026 10:00 UTC (in 2 h)")


def test_scheduled_edit_of_a_live_article__says_the_live_version_stays():
    a = article(
        status=ArticleStatus.PENDING,
        publish_at=NOW + timedelta(days=3),
        published_hash="h",
        published_at=NOW - timedelta(days=1),
    )
    kind, text = words(a)
    assert kind == "scheduled"
    assert text == (
        "scheduled for 4 Dec 2026 08:00 UTC (in 3 d); the version live since "
        "30 Nov 2026 08:00 UTC stays online until then"
    )


def test_backing_off__attempt_and_next_try():
    a = article(
        status=ArticleStatus.PENDING,
        attempts=1,
        next_attempt_at=NOW + timedelta(seconds=14),
        last_error="webhook answered HTTP 503",
    )
    assert words(a) == (
        "publishing",
        "publishing: attempt 2 of 5, next try in 14 s (last error: webhook answered HTTP 503)",
    )


def test_running__attempt_running_now():
    a = article(
        status=ArticleStatus.PENDING, attempts=2, lease_expires_at=NOW + timedelta(seconds=5)
    )
    assert words(a) == ("publishing", "publishing: attempt 2 of 5, running now")


def test_due__waiting_for_a_worker():
    a = article(status=ArticleStatus.PENDING)
    assert words(a) == ("publishing", "publishing: attempt 1 of 5, waiting for a worker")


def test_lease_ran_out__next_attempt_waits_for_a_worker():
    a = article(
        status=ArticleStatus.PENDING,
        attempts=1,
        lease_expires_at=NOW - timedelta(seconds=1),
        last_error="",
    )
    assert words(a) == ("publishing", "publishing: attempt 2 of 5, waiting for a worker")


def test_dead__the_error():
    a = article(status=ArticleStatus.DEAD, attempts=5, last_error="disk full")
    assert words(a) == ("dead", "dead: disk full")


def test_dead_without_error__says_so():
    assert words(article(status=ArticleStatus.DEAD)) == ("dead", "dead: no error was recorded")


def test_dead_after_live__the_live_version_stays():
    a = article(
        status=ArticleStatus.DEAD,
        last_error="boom",
        published_hash="h",
        published_at=NOW - timedelta(hours=5),
    )
    assert words(a) == (
        "dead",
        "dead: boom; the version live since 1 Dec 2026 03:00 UTC stays online",
    )


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0 s"),
        (14.9, "14 s"),
        (59, "59 s"),
        (60, "1 min"),
        (3599, "59 min"),
        (3600, "1 h"),
        (7200, "2 h"),
        (47 * 3600, "47 h"),
        (48 * 3600, "2 d"),
        (-5, "0 s"),  # a clock a little behind never says "in -5 s"
    ],
)
def test_span(seconds, text):
    assert span(seconds) == text
