"""A batch whose worker is SIGKILLed mid-batch: every row is published, none twice.

Real processes: a `celery worker` subprocess and a private redis-server (the system
`pipeline` fixture). The rows the dead batch held keep their lease until it runs out.
A pool child killed: its batch message goes back to the queue (reject_on_worker_lost,
or acks_on_timeout when the pool sees the death only at the hard time limit, see
publishing/tasks.py), and the redelivered batch comes back for those rows when their
lease has run out; no Beat runs, so redelivery alone must finish the job. A whole
worker killed leaves its message with Redis until the visibility timeout: the catch-up
takes the rows. The fencing token keeps each row to one completed attempt.
"""

from __future__ import annotations

import os
import signal
import time
import uuid

import pytest

from publishing.dispatch import dispatch_batches
from publishing.models import AttemptOutcome
from tests.integration.test_batches import backlog
from tests.support.chaos import journal_entries
from tests.system.conftest import record_timing, since
from tests.system.helpers import assert_published_once, wait_all_published
from tests.system.test_recovery import pid_of_attempt

pytestmark = [pytest.mark.system, pytest.mark.django_db(transaction=True)]

BATCH = {"PUBLISH_BATCH_SIZE": "5", "PUBLISH_BATCH_TASKS": "2"}


def held_batch_outcomes(articles) -> dict[str, list[str]]:
    return {
        a.slug: list(a.publish_attempts.order_by("number").values_list("outcome", flat=True))
        for a in articles
    }


def test_pool_child_killed_mid_batch__all_published_none_twice(pipeline, chaos):
    prefix = f"kb-{uuid.uuid4().hex[:6]}"
    chaos(f"{prefix}-2", hold=30, hold_until_attempt=2)  # never released: killed
    pipeline.env.update(BATCH)
    worker = pipeline.worker()  # no beat: redelivery alone must finish the job
    articles = backlog(prefix, 23)
    dispatch_batches()
    child = pid_of_attempt(f"{prefix}-2", 1)
    assert child in worker.children()

    os.kill(child, signal.SIGKILL)
    killed_at = time.monotonic()

    wait_all_published(articles, timeout=90)
    record_timing("pool child SIGKILLed mid-batch -> backlog published", since(killed_at))
    assert_published_once(articles)
    # The rows of the killed batch (the first five): an unfinished attempt, then one ok.
    first = held_batch_outcomes(articles[:5])
    assert first == {a.slug: [AttemptOutcome.RETRY, AttemptOutcome.OK] for a in articles[:5]}
    assert all(len(journal_entries(a.slug)) == 1 for a in articles[5:])
    assert worker.alive()


def test_whole_worker_killed_mid_batch__the_catch_up_takes_the_rows(pipeline, chaos):
    prefix = f"kw-{uuid.uuid4().hex[:6]}"
    chaos(f"{prefix}-2", hold=30, hold_until_attempt=2)  # never released: killed
    pipeline.env.update(BATCH)
    pipeline.beat()
    doomed = pipeline.worker(name="doomed")
    articles = backlog(prefix, 23)
    dispatch_batches()
    pid_of_attempt(f"{prefix}-2", 1)

    doomed.signal(signal.SIGKILL)  # the main process: its pool children die with it
    killed_at = time.monotonic()
    doomed.popen.wait(10)
    pipeline.worker(name="successor")

    wait_all_published(articles, timeout=90)
    record_timing("worker SIGKILLed mid-batch -> backlog published", since(killed_at))
    assert_published_once(articles)
    first = held_batch_outcomes(articles[:5])
    assert first == {a.slug: [AttemptOutcome.RETRY, AttemptOutcome.OK] for a in articles[:5]}
