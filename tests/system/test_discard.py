"""What the drop of a group's other messages (publish_discard, docs/design.md) must not
do to the rest of the pipeline; found by a review that set out to break it.

Real processes: `celery worker` subprocesses (one pool child each) and a private
redis-server (the system `pipeline` fixture). No Beat: the catch-up is off, so what the
tests see is the messages' own doing.
"""

from __future__ import annotations

import os
import signal
import time
import uuid

import pytest
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from publishing.dispatch import discard_messages
from publishing.models import Article, AttemptOutcome, PublishAttempt
from tests.support.chaos import release
from tests.support.waiting import wait_for
from tests.system.helpers import published_as_saved

pytestmark = [pytest.mark.system, pytest.mark.django_db(transaction=True)]


def save_together(*slugs: str) -> list[Article]:
    """Saved in one transaction: their messages go after the commit, in this order, so
    the first one's group claims the others (one pool child takes one at a time)."""
    articles = []
    with transaction.atomic():
        for slug in slugs:
            article = Article(title=slug, slug=slug, body=f"Body of {slug}.")
            article.full_clean()
            article.save()
            articles.append(article)
    return articles


def failed_once(article: Article) -> bool:
    return PublishAttempt.objects.filter(
        article=article, outcome=AttemptOutcome.RETRY, finished_at__isnull=False
    ).exists()


def test_a_killed_workers_group_is_taken_over_by_a_message_queued_behind_it(pipeline, chaos):
    """A group on worker W1 claims Y (its own row) and Z; W1 is killed whole (SIGKILL
    to the main process: a host or a container lost), so Y's message stays unacked
    until the broker's visibility timeout. Z's message is still queued (W3, which has
    been listening all along, takes the publish queue only after the group's lease ran
    out): it claims Z, a row left leased, and sends a message for Y, and both are
    published. It must not have been dropped: the group published nothing, so it named
    no message (a broadcast at the claim did, and the two stayed pending)."""
    from config.celery import app

    tag = uuid.uuid4().hex[:6]
    y, z = f"own-{tag}", f"other-{tag}"
    chaos(y, hold=60)  # never released: its worker is killed
    rerender = [q.name for q in settings.CELERY_TASK_QUEUES if q.name.endswith(".rerender")]
    w3 = pipeline.worker(name="w3", concurrency=1, queues=rerender)
    w1 = pipeline.worker(name="w1", concurrency=1)
    own, other = save_together(y, z)
    wait_for(lambda: (settings.RUN_DIR / "pids" / f"{y}.1").exists(), what="Y's attempt held")
    attempt = PublishAttempt.objects.get(article=other)
    assert attempt.task_id == own.message_id, "Z was claimed in Y's group"
    z_message = Article.objects.get(pk=other.pk).message_id

    w1.signal(signal.SIGKILL)  # the main process: its pool child dies with it
    w1.popen.wait(10)
    chaos(y)  # no rule: Y publishes at its next attempt

    def lease_over() -> bool:
        row = Article.objects.get(pk=other.pk)
        return row.lease_expires_at is not None and row.lease_expires_at < timezone.now()

    wait_for(lease_over, timeout=30, interval=0.2, what="Z's lease to run out")
    app.control.add_consumer(
        settings.CELERY_TASK_DEFAULT_QUEUE, destination=[w3.hostname], reply=True, timeout=5
    )
    wait_for(
        lambda: f"[{z_message}]" in w3.log.read_text(errors="replace"),
        timeout=30,
        what="W3 to take Z's message",
    )
    wait_for(
        lambda: published_as_saved(own) and published_as_saved(other),
        timeout=30,
        what="Y and Z published by the message queued behind the killed group",
    )
    assert "Discarding revoked task" not in w3.log.read_text(errors="replace")


def test_a_failed_row_of_a_group_gets_its_next_message_after_a_broker_blip(pipeline, chaos):
    """After a broker blip that opened a pool child's dispatch breaker, and well after
    its window, a group claims C (its own row) and D; D fails once. The group's
    follow-up sends D's next message, and D is published. A discard that took the
    breaker's half-open trial and never reported it kept the breaker open, window after
    window: the follow-up was skipped, and D stayed pending."""
    tag = uuid.uuid4().hex[:6]
    worker = pipeline.worker(concurrency=1)

    # A group whose follow-up send meets a broker that does not answer.
    a, b = f"blip-a-{tag}", f"blip-b-{tag}"
    chaos(a, hold=30)
    chaos(b, fail="transient", until_attempt=2)
    save_together(a, b)
    wait_for(
        lambda: (settings.RUN_DIR / "pids" / f"{a}.1").exists(),
        timeout=30,
        what="A's attempt to be held",
    )
    pipeline.redis.proc.signal(signal.SIGSTOP)  # silent, a few seconds
    try:
        release(a)
        wait_for(
            lambda: "the broker is unreachable" in worker.log.read_text(errors="replace"),
            timeout=20,
            what="the pool child's send to fail (its breaker opens)",
        )
    finally:
        pipeline.redis.proc.signal(signal.SIGCONT)
    back = time.monotonic()
    # Past the breaker's window: the broker has been up for longer than the breaker
    # keeps a process away from it.
    window = settings.PUBLISH_DISPATCH_BREAKER_SECONDS + 3
    wait_for(lambda: time.monotonic() - back > window, timeout=window + 5, interval=0.2)

    c, d = f"grp-c-{tag}", f"grp-d-{tag}"
    chaos(d, fail="transient", until_attempt=2)
    own, other = save_together(c, d)
    wait_for(lambda: failed_once(other), timeout=30, what="D's first attempt to fail")
    first = PublishAttempt.objects.filter(article=other).order_by("id").first()
    assert first.task_id == own.message_id, "D was claimed in C's group"
    wait_for(
        lambda: published_as_saved(own) and published_as_saved(other),
        timeout=30,
        what="C and D published",
    )
    assert worker.alive()


def test_hostile_publish_discard_arguments_leave_the_consumer_running(pipeline):
    """Anyone with the broker's password can broadcast `publish_discard`: arguments
    missing, of the wrong type, or odd items are refused or taken as text, each is
    answered, and the worker goes on consuming (a save after them is published)."""
    from config.celery import app

    worker = pipeline.worker(concurrency=1)
    replies = {}
    for name, arguments in {
        "missing": {},
        "int": {"task_ids": 5},
        "none": {"task_ids": None},
        "string": {"task_ids": "abc"},
        "odd items": {"task_ids": [{"a": [1, 2]}, None, 3.5, True]},
        "extra": {"task_ids": ["x"], "other": 1},
        "many": {"task_ids": [f"id-{n}" for n in range(50_000)]},
        "long items": {"task_ids": ["x" * 1_000_000] * 3},
    }.items():
        replies[name] = app.control.broadcast(
            "publish_discard",
            arguments=arguments,
            destination=[worker.hostname],
            reply=True,
            timeout=5,
        )
    assert all(replies.values()), replies  # every one answered
    article = Article(title="after", slug=f"after-{uuid.uuid4().hex[:6]}", body="B.")
    article.full_clean()
    article.save()
    wait_for(lambda: published_as_saved(article), timeout=30, what="a save after them")
    assert worker.alive()


def test_a_retry_of_a_message_dropped_meanwhile_still_comes(pipeline, chaos):
    """A save's message runs and fails once; while it runs, the workers are told to drop
    its id (as a group that published the row besides its own tells them, and as a
    message that ran on a worker the broadcast had not reached yet then finds). Its
    retry must still come: Celery's retry keeps the message's id, which the worker
    would drop as revoked, and the row would wait for the catch-up (none here)."""
    from config.celery import app

    worker = pipeline.worker(concurrency=1)
    slug = f"retried-{uuid.uuid4().hex[:6]}"
    chaos(slug, hold=60, hold_until_attempt=2, fail="transient", until_attempt=2)
    (article,) = save_together(slug)
    wait_for(
        lambda: (settings.RUN_DIR / "pids" / f"{slug}.1").exists(),
        timeout=30,
        what="the first attempt to be held",
    )
    assert discard_messages([article.message_id])

    def dropped_there() -> bool:
        replies = app.control.inspect(destination=[worker.hostname], timeout=2).revoked()
        return article.message_id in (replies or {}).get(worker.hostname, [])

    wait_for(dropped_there, timeout=20, what="the worker to hold the id as dropped")
    release(slug)
    wait_for(lambda: published_as_saved(article), timeout=30, what="the retry to publish")
    attempts = list(PublishAttempt.objects.filter(article=article).order_by("number"))
    assert [a.outcome for a in attempts] == [AttemptOutcome.RETRY, AttemptOutcome.OK]
    assert attempts[0].task_id == article.message_id != attempts[1].task_id
    assert worker.alive()


def test_a_row_published_by_another_group_after_failing_in_its_own_keeps_that_groups_message(
    pipeline, chaos, settings
):
    """B's message claims B and X (its group); B fails once, X hangs. Once B is due
    again, C's group on another worker publishes B. It must not name B's message to be
    dropped: that message is B's group, still running X. When its pool child dies, its
    redelivery comes back for X at the lease's end (a review: it was dropped as revoked,
    and X waited for the catch-up; there is none here)."""
    from config.celery import app

    lease = 20  # room for B's failure and C's group inside X's hard time limit
    settings.PUBLISH_LEASE_SECONDS = lease
    pipeline.env["PUBLISH_LEASE_SECONDS"] = str(lease)
    tag = uuid.uuid4().hex[:6]
    b, x, c = f"own-{tag}", f"held-{tag}", f"third-{tag}"
    chaos(b, fail="transient", until_attempt=2)
    chaos(x, hold=300, stuck=True, hold_until_attempt=2)  # never released: killed
    rerender = [q.name for q in settings.CELERY_TASK_QUEUES if q.name.endswith(".rerender")]
    w2 = pipeline.worker(name="w2", concurrency=1, queues=rerender)  # publishes later
    w1 = pipeline.worker(name="w1", concurrency=1)
    own, held = save_together(b, x)
    pid_file = settings.RUN_DIR / "pids" / f"{x}.1"
    wait_for(pid_file.exists, timeout=30, what="X's attempt held")
    assert PublishAttempt.objects.get(article=held).task_id == own.message_id, "X in B's group"
    wait_for(lambda: failed_once(own), timeout=15, what="B's first attempt to fail")
    wait_for(
        lambda: Article.objects.get(pk=own.pk).next_attempt_at <= timezone.now(),
        timeout=10,
        interval=0.05,
        what="B due again",
    )
    app.control.add_consumer(
        settings.CELERY_TASK_DEFAULT_QUEUE, destination=[w2.hostname], reply=True, timeout=5
    )
    [third] = save_together(c)
    wait_for(lambda: published_as_saved(own), timeout=20, what="B published by C's group")
    assert PublishAttempt.objects.filter(article=own, outcome=AttemptOutcome.OK).get().task_id == (
        third.message_id
    )
    wait_for(
        lambda: f"[{third.message_id}] succeeded" in w2.log.read_text(errors="replace"),
        timeout=20,
        what="C's group to end (a drop it names is sent before)",
    )
    # A control message after any drop: answered, so W1 has taken the drop in.
    assert app.control.ping(destination=[w1.hostname], timeout=5)

    os.kill(int(pid_file.read_text().split()[0]), signal.SIGKILL)
    wait_for(
        lambda: published_as_saved(held),
        timeout=lease + 25,
        what="X published by B's group's redelivered message, after the lease",
    )
    assert "Discarding revoked task" not in w1.log.read_text(errors="replace")
