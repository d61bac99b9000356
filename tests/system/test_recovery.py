"""Nothing is lost when workers die, messages vanish or Redis stops.

Real processes only: `celery worker` and `celery beat` subprocesses, and a private
redis-server the test stops, kills and restarts. Times are measured and printed in the
summary, never asserted: end states are what the tests hold the system to.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from django.conf import settings
from django.db import transaction

from config.celery import app
from publishing.models import Article, ArticleStatus, AttemptOutcome
from publishing.services.publish import article_claim
from publishing.tasks import send_for_lease_end
from tests.support.processes import ROOT
from tests.support.waiting import wait_for
from tests.system.conftest import record_timing, since
from tests.system.helpers import assert_published_once, save_articles, wait_all_published

pytestmark = [pytest.mark.system, pytest.mark.django_db(transaction=True)]


def attempt_running(article: Article) -> bool:
    return article.publish_attempts.filter(outcome="").exists()


def pid_of_attempt(slug: str, attempt: int) -> int:
    pid_file = settings.RUN_DIR / "pids" / f"{slug}.{attempt}"
    return int(wait_for(lambda: pid_file.exists() and pid_file.read_text(), what=str(pid_file)))


def test_worker_killed_mid_publish_is_taken_over_after_the_lease(pipeline, chaos):
    chaos("killed-worker-0", hold=3, hold_until_attempt=2)  # never released: killed
    pipeline.beat()
    first = pipeline.worker(name="doomed")
    [article] = save_articles("killed-worker", 1)
    wait_for(lambda: attempt_running(article), what="attempt 1 to be running")

    first.signal(signal.SIGKILL)  # the main process: its pool children die with it
    killed_at = time.monotonic()
    first.popen.wait(10)
    pipeline.worker(name="successor")

    wait_all_published([article], timeout=60)
    record_timing("worker SIGKILLed mid-publish -> published by a new worker", since(killed_at))
    assert_published_once([article])
    outcomes = list(article.publish_attempts.order_by("number").values_list("outcome", flat=True))
    assert outcomes == [AttemptOutcome.RETRY, AttemptOutcome.OK]
    assert "never finished" in article.publish_attempts.order_by("number")[0].error


def test_pool_child_killed_mid_publish_is_redelivered_and_published_once(pipeline, chaos):
    """The message comes back however the pool learns of the death. Usually at once, as
    a lost worker (reject_on_worker_lost). But when the dying child's pipe closes before
    the kernel lets the master reap it, Celery's prefork pool looks once, finds it still
    running, and only its 5 s timer finds the death later: here (lease 5 s) always after
    the task's hard time limit (4.5 s), which ends the job as a time limit instead. That
    one is sent back too (acks_on_timeout=False in publishing.tasks); before it was, it
    was acked, and without Beat the article was never published (2 runs in 3 on a loaded
    machine). See docs/operations.md, "A pool child killed near its hard time limit"."""
    chaos("killed-child-0", hold=3, hold_until_attempt=2)  # never released: killed
    worker = pipeline.worker()  # no beat: redelivery alone must finish the job
    [article] = save_articles("killed-child", 1)
    child = pid_of_attempt("killed-child-0", 1)
    assert child in worker.children()

    os.kill(child, signal.SIGKILL)
    killed_at = time.monotonic()

    wait_all_published([article], timeout=60)
    record_timing("pool child SIGKILLed mid-publish -> published (redelivery)", since(killed_at))
    assert_published_once([article])
    outcomes = list(article.publish_attempts.order_by("number").values_list("outcome", flat=True))
    assert outcomes == [AttemptOutcome.RETRY, AttemptOutcome.OK]
    assert "never finished" in article.publish_attempts.order_by("number")[0].error
    assert worker.alive()


def test_attempt_stuck_past_its_hard_time_limit_is_redelivered_and_published_once(pipeline, chaos):
    """An attempt that ignores its soft time limit (stuck where Python never gets control
    back) is killed at the hard limit, and its message goes back to the queue at once
    (acks_on_timeout=False), as a lost worker's does: the article does not wait for the
    catch-up. The lease, still held for the last tenth of it, keeps the redelivered
    message from starting a second attempt until the killed one is surely gone."""
    chaos("stuck-0", hold=60, stuck=True, hold_until_attempt=2)  # only the hard limit ends it
    worker = pipeline.worker()  # no beat: redelivery alone must finish the job
    [article] = save_articles("stuck", 1)
    pid_of_attempt("stuck-0", 1)
    started = time.monotonic()

    wait_all_published([article], timeout=60)
    record_timing("attempt stuck past its hard limit -> published (redelivery)", since(started))
    assert_published_once([article])
    outcomes = list(article.publish_attempts.order_by("number").values_list("outcome", flat=True))
    assert outcomes == [AttemptOutcome.RETRY, AttemptOutcome.OK]
    assert "never finished" in article.publish_attempts.order_by("number")[0].error
    log = worker.log.read_text(errors="replace")
    assert "Hard time limit (" in log and "exceeded for publishing.tasks.publish_article" in log
    assert worker.alive()


def queue_length(name: str) -> int:
    with app.connection_for_write() as conn:
        return conn.default_channel.client.llen(name)


def test_lost_messages_are_sent_again_by_the_catch_up(pipeline):
    articles = save_articles("lost", 10)  # no worker yet: the messages wait in Redis
    queue = settings.CELERY_TASK_DEFAULT_QUEUE
    assert queue_length(queue) == 10
    with app.connection_for_write() as conn:
        conn.default_channel.client.delete(queue)  # ... and are lost

    started = time.monotonic()
    pipeline.worker()
    pipeline.beat()

    wait_all_published(articles, timeout=60)
    record_timing("10 messages purged -> all published by the catch-up", since(started))
    assert_published_once(articles)


def test_redis_down_while_saving_then_back(pipeline):
    pipeline.worker()
    pipeline.beat()
    pipeline.redis.stop()

    saved_at = time.monotonic()
    articles = save_articles("redis-down", 5)  # each save returns; nothing is sent
    save_seconds = since(saved_at)
    assert all(Article.objects.get(pk=a.pk).status == ArticleStatus.PENDING for a in articles)

    pipeline.redis.start()
    back_at = time.monotonic()
    wait_all_published(articles, timeout=90)
    record_timing("5 saves with Redis down (total time of the saves)", save_seconds)
    record_timing("Redis back -> 5 articles saved meanwhile published", since(back_at))
    assert_published_once(articles)


def run_publish_pending(pipeline) -> subprocess.CompletedProcess:
    """The backup executor in a process of its own, as cron would run it."""
    return subprocess.run(
        [sys.executable, "manage.py", "publish_pending", "--limit", "100"],
        cwd=ROOT,
        env={**os.environ, **pipeline.env, "DJANGO_SETTINGS_MODULE": "tests.settings"},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_publish_pending_publishes_with_redis_down(pipeline):
    pipeline.redis.stop()
    articles = save_articles("no-broker", 5)

    started = time.monotonic()
    out = run_publish_pending(pipeline)

    assert out.returncode == 0, out.stderr
    assert "5 published" in out.stdout
    record_timing("publish_pending, Redis down: 5 articles", since(started))
    assert_published_once(articles)


def test_redis_restarted_while_publishing_200_articles(pipeline):
    pipeline.worker()
    pipeline.beat()
    articles = save_articles("restart", 200)
    ids = [a.pk for a in articles]
    wait_for(
        lambda: Article.objects.filter(pk__in=ids, status=ArticleStatus.PUBLISHED).count() >= 20,
        what="publishing to be under way",
    )

    pipeline.redis.stop()  # SIGKILL: what was queued is gone (no persistence)
    pipeline.redis.start()
    restarted_at = time.monotonic()

    wait_all_published(articles, timeout=180)
    record_timing("Redis killed and restarted mid-run -> all 200 published", since(restarted_at))
    assert_published_once(articles)


def test_publish_pending_beside_a_worker_publishes_each_article_once(pipeline):
    pipeline.redis.stop()  # the saves send nothing: the work waits in the database
    articles = save_articles("side-by-side", 30)
    pipeline.redis.start()
    pipeline.worker()
    pipeline.beat()

    backup = run_publish_pending(pipeline)

    assert backup.returncode == 0, backup.stderr
    wait_all_published(articles)
    assert_published_once(articles)


def test_a_message_sent_for_a_leases_end_that_comes_early_comes_back(pipeline):
    """The message a redelivered attempt sends for the end of the lease its dead
    predecessor left (an ETA, one second of margin) can come early: on a host whose
    clock runs more than that second ahead of the sender's. It finds the row still
    held, and must come back for the lease's end rather than end and leave the row to
    the catch-up (none here). The dead claimer is this process, which claims the row
    in the save's transaction and never finishes; the save's own message finds it held
    and ends, as a message whose row another task holds does."""
    worker = pipeline.worker(concurrency=1)
    with transaction.atomic():
        [article] = save_articles("early-eta", 1)
        claim = article_claim(article_id=article.pk, worker="gone", task_id="gone")
        assert claim is not None
    wait_for(
        lambda: f"article {article.pk} not claimed" in worker.log.read_text(errors="replace"),
        timeout=30,
        what="the save's message to find the row held",
    )
    row = Article.objects.get(pk=article.pk)
    assert row.status == ArticleStatus.PENDING and row.lease_expires_at is not None
    # Sent for a second from now: long before the lease (PUBLISH_LEASE_SECONDS) ends.
    send_for_lease_end(article.pk, 1.0)
    wait_for(
        lambda: Article.objects.get(pk=article.pk).status == ArticleStatus.PUBLISHED,
        timeout=settings.PUBLISH_LEASE_SECONDS + 30,
        what="the early message to come back at the lease's end and publish",
    )
    assert_published_once([article])
    outcomes = list(article.publish_attempts.order_by("number").values_list("outcome", flat=True))
    assert outcomes == [AttemptOutcome.RETRY, AttemptOutcome.OK]
