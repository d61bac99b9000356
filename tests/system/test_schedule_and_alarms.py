"""Beat as a safety net: doubled, on time for scheduled articles, and raising alarms."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from config.celery import app
from publishing.models import Article, ArticleStatus, AttemptOutcome
from publishing.services import article_requeue
from tests.support.waiting import wait_for
from tests.system.conftest import record_timing, since
from tests.system.helpers import (
    assert_published_once,
    log_count,
    mails,
    save_articles,
    wait_all_published,
)

pytestmark = [pytest.mark.system, pytest.mark.django_db(transaction=True)]


def test_two_beats_for_several_intervals_publish_nothing_twice(pipeline):
    articles = save_articles("two-beats", 8)  # no worker yet; then their messages are lost
    with app.connection_for_write() as conn:
        conn.default_channel.client.delete(settings.CELERY_TASK_DEFAULT_QUEUE)
    soon = timezone.now() + timedelta(seconds=3)
    scheduled = save_articles("two-beats-later", 2, publish_at=soon)

    worker = pipeline.worker()
    beats = [pipeline.beat(name="beat-a"), pipeline.beat(name="beat-b")]
    wait_all_published(articles + scheduled, timeout=60)
    # Keep both Beats going for several more intervals before counting.
    runs = log_count(worker, "catch-up:")
    wait_for(
        lambda: log_count(worker, "catch-up:") >= runs + 6,
        timeout=60,
        what="six more catch-up runs",
    )
    sent = [log_count(beat, "Sending due task publish-catch-up") for beat in beats]
    assert min(sent) >= 3, f"both Beats must have been sending: {sent}"

    assert_published_once(articles + scheduled)


def test_beat_started_while_the_broker_is_down_checks_for_stuck_work_and_sends_when_it_is_back(
    pipeline,
):
    """Celery opens Beat's connection at its first send, retrying for as long as the
    broker is down; a Beat started during an outage must still run its stuck check every
    interval (the alarm is for exactly such times), and send the catch-up, due since its
    start, once the broker answers."""
    pipeline.redis.stop()
    try:
        beat = pipeline.beat()
        wait_for(
            lambda: log_count(beat, "stuck check done") >= 3,
            timeout=60,
            what="three stuck checks with the broker down",
        )
        assert log_count(beat, "Sending due task publish-catch-up") == 0
    finally:
        pipeline.redis.start()
    wait_for(
        lambda: log_count(beat, "Sending due task publish-catch-up") >= 1,
        timeout=60,
        what="the catch-up sent once the broker answers",
    )


def test_scheduled_article_is_published_at_its_time_not_before(pipeline):
    pipeline.worker()  # no beat: the save itself arms the message with an ETA
    [article] = save_articles("scheduled", 1, publish_at=timezone.now() + timedelta(seconds=4))
    publish_at = article.publish_at  # as saved: in whole seconds
    assert Article.objects.get(pk=article.pk).is_scheduled

    wait_all_published([article], timeout=60)
    article.refresh_from_db()
    record_timing(
        "scheduled article: published after its publish_at by",
        (article.published_at - publish_at).total_seconds(),
    )
    assert article.published_at >= publish_at
    assert_published_once([article])


def test_poison_article_dies_alone_alerts_once_and_recovers_when_requeued(pipeline, chaos):
    chaos("poison-0", fail="transient")
    worker = pipeline.worker()
    pipeline.beat()
    [poison] = save_articles("poison", 1)
    healthy = save_articles("healthy", 5)

    wait_for(
        lambda: Article.objects.get(pk=poison.pk).status == ArticleStatus.DEAD,
        timeout=60,
        what="the poison article to be dead",
    )
    wait_all_published(healthy)
    runs = log_count(worker, "catch-up:")
    wait_for(
        lambda: log_count(worker, "catch-up:") >= runs + 3,
        timeout=60,
        what="three catch-up runs after the death",
    )

    poison.refresh_from_db()
    assert poison.attempts == settings.PUBLISH_MAX_ATTEMPTS
    assert len(mails("(poison-0)")) == 1
    assert_published_once(healthy)

    chaos("poison-0")  # the target recovers
    assert article_requeue(article_id=poison.pk)
    wait_all_published([poison])
    outcomes = list(poison.publish_attempts.order_by("id").values_list("outcome", flat=True))
    assert outcomes == [
        AttemptOutcome.RETRY,
        AttemptOutcome.RETRY,
        AttemptOutcome.DEAD,
        AttemptOutcome.OK,
    ]


def test_article_that_kills_its_worker_every_time_ends_dead_with_one_alert(pipeline, chaos):
    chaos("crasher-0", fail="crash")
    worker = pipeline.worker()
    pipeline.beat()
    [crasher] = save_articles("crasher", 1)
    healthy = save_articles("beside-crasher", 3)

    wait_for(
        lambda: Article.objects.get(pk=crasher.pk).status == ArticleStatus.DEAD,
        timeout=120,
        what="the crashing article to be dead",
    )
    wait_all_published(healthy)

    crasher.refresh_from_db()
    assert "never finished" in crasher.last_error
    outcomes = list(crasher.publish_attempts.order_by("id").values_list("outcome", flat=True))
    assert outcomes == [AttemptOutcome.RETRY] * (settings.PUBLISH_MAX_ATTEMPTS - 1) + [
        AttemptOutcome.DEAD
    ]
    wait_for(lambda: mails("(crasher-0)"), what="the dead-letter alert")
    runs = log_count(worker, "catch-up:")
    wait_for(lambda: log_count(worker, "catch-up:") >= runs + 2, what="two more catch-ups")
    assert len(mails("(crasher-0)")) == 1
    assert worker.alive()  # the pool replaced its children; the worker itself lives on


def test_stuck_alarm_sounds_once_with_no_worker_running(pipeline):
    [article] = save_articles("stuck", 1)
    long_ago = timezone.now() - timedelta(seconds=120)
    Article.objects.filter(pk=article.pk).update(publish_at=long_ago, updated_at=long_ago)
    started = time.monotonic()

    beat = pipeline.beat()  # Beat checks for stuck work itself; no worker is running
    wait_for(lambda: log_count(beat, "stuck check done") >= 4, timeout=60, what="four stuck checks")

    alarms = mails("publishing is stuck")
    assert len([m for m in alarms if f"oldest is {article.pk} " in m]) == 1
    assert Article.objects.get(pk=article.pk).status == ArticleStatus.PENDING
    record_timing("stuck alarm: beat start -> four checks, one alarm", since(started))
