"""A burst drains in groups (services.publish), and neither killed claimers nor a slow
target leave a row behind, dead, or published twice.

Real processes: a `celery worker` subprocess and a private redis-server (the system
`pipeline` fixture), lease 5 s. No Beat runs: the catch-up is off, so what the tests see
is the messages' own doing — a killed group's redelivered message claiming the group
again once the lease ends, a group short of time sending a message for the rows it let
go.
"""

from __future__ import annotations

import os
import random
import signal
import time
import uuid
from functools import partial

import pytest
from django.conf import settings
from django.db import transaction

from publishing.models import Article, AttemptOutcome, PublishAttempt
from tests.support.chaos import journal_entries, release
from tests.support.site import assert_lists_exactly
from tests.support.waiting import wait_for
from tests.system.conftest import record_timing, since
from tests.system.helpers import (
    assert_others_dropped,
    assert_published_once,
    dropped_by,
    messages_ran,
    published_as_saved,
    save_articles,
    wait_all_published,
)

pytestmark = [pytest.mark.system, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def own_site(pipeline, settings, tmp_path):
    """A site folder of this test's own, for the worker and this process."""
    root = tmp_path / "site"
    root.mkdir()
    settings.SITE_ROOT = root
    pipeline.env["BLOGPUBLISH_TEST_SITE_ROOT"] = str(root)
    return root


def newest_first(articles: list[Article]) -> list[str]:
    rows = Article.objects.filter(pk__in=[a.pk for a in articles])
    return list(rows.order_by("-published_publish_at", "-id").values_list("slug", flat=True))


def wait_site_exact(articles: list[Article], timeout: float = 30.0) -> None:
    """The shared pages list exactly these articles (refreshed after the last publish)."""

    def exact() -> bool:
        try:
            assert_lists_exactly(settings.SITE_ROOT, newest_first(articles))
        except (AssertionError, FileNotFoundError):
            return False
        return True

    wait_for(exact, timeout=timeout, what="the site to list exactly the burst")


def progressed(articles: list[Article], attempts: int) -> bool:
    """As many attempts as `attempts` made, or nothing of `articles` left pending."""
    pending = Article.objects.filter(pk__in=[a.pk for a in articles], status="pending")
    return PublishAttempt.objects.count() >= attempts or not pending.exists()


def test_a_burst_with_pool_children_killed_every_few_seconds(pipeline, own_site, chaos):
    """Saved while no worker runs, then drained in groups of up to 10 while a pool
    child is SIGKILLed again each time the pool has claimed more rows: every article
    published once, the site exact."""
    prefix = f"gk-{uuid.uuid4().hex[:6]}"
    pipeline.env.update({"PUBLISH_BATCH_SIZE": "10"})
    articles = save_articles(prefix, 60)  # each save sends its message; none is taken yet
    for article in articles:  # a slow target: groups are under way when a kill comes
        chaos(article.slug, hold=0.15)
    worker = pipeline.worker()
    started = time.monotonic()

    kills = 0
    rng = random.Random(7)
    while kills < 5 and time.monotonic() - started < 60:
        wait_for(lambda: PublishAttempt.objects.filter(outcome="").exists(), timeout=30)
        children = worker.children()
        if children:
            os.kill(rng.choice(children), signal.SIGKILL)
            kills += 1
        wait_for(lambda: len(worker.children()) >= 2, timeout=20, what="the pool refilled")
        # The next kill once the refilled pool has claimed more rows since this one.
        claimed = PublishAttempt.objects.count()
        wait_for(
            partial(progressed, articles, claimed + 5),
            timeout=60,
            what="more rows claimed since the kill",
        )

    wait_all_published(articles, timeout=120)
    record_timing(f"burst of 60 in groups, {kills} pool children killed", since(started))
    assert kills >= 3, "the burst ended before the kills it is about"
    assert_published_once(articles)
    # Groups were claimed: some attempts share a task id.
    task_ids = PublishAttempt.objects.filter(article__in=articles).values_list("task_id", flat=True)
    assert len(set(task_ids)) < len(task_ids)
    # Killed attempts were recorded as unfinished by the claim that took their rows over.
    unfinished = PublishAttempt.objects.filter(
        article__in=articles, outcome=AttemptOutcome.RETRY, error__contains="never finished"
    )
    assert unfinished.exists()
    # Delivered at least once (a row whose group was killed after its delivery and
    # before its completion is delivered again: the webhook's Idempotency-Key is what
    # lets a receiver drop that repeat).
    assert all(journal_entries(a.slug) for a in articles)
    wait_site_exact(articles)
    assert worker.alive()


def test_a_slow_target_at_the_default_group_size_publishes_every_row_once(
    pipeline, own_site, chaos
):
    """Finding 1 of issue 17: a target taking 1 s per row, groups of the default size
    (100), a 5 s lease. A group starts no row after 0.4 of its lease, completes what
    published and lets the rest go with a message for them: every row published once,
    none dead, each delivered once (the journal, the publisher after the site)."""
    prefix = f"slow-{uuid.uuid4().hex[:6]}"
    pipeline.env.update({"PUBLISH_BATCH_SIZE": "100"})
    articles = save_articles(prefix, 12)
    for article in articles:
        chaos(article.slug, hold=1.0)  # never released: each row takes its full second
    pipeline.worker()
    started = time.monotonic()

    wait_all_published(articles, timeout=120)
    record_timing("12 rows at 1 s each, groups of 100, 5 s lease", since(started))
    assert_published_once(articles)
    dead = PublishAttempt.objects.filter(article__in=articles, outcome=AttemptOutcome.DEAD)
    assert list(dead.values_list("article__slug", "error")) == []
    assert all(len(journal_entries(a.slug)) == 1 for a in articles)
    wait_site_exact(articles)


def test_a_groups_other_messages_are_dropped_unrun_and_a_later_edit_still_publishes(
    pipeline, own_site
):
    """Saved while no worker runs, then drained: a group that has published rows
    besides its own has the workers drop those rows' messages (each save's
    Article.message_id) unrun. Only such messages are dropped: each one's row was
    published by another message's attempt. An edit saved afterwards stores and sends a
    message of a new id, which runs (no Beat: nothing else would publish it)."""
    articles = save_articles(f"drop-{uuid.uuid4().hex[:6]}", 40)
    worker = pipeline.worker()
    wait_all_published(articles)
    assert_published_once(articles)
    dropped = assert_others_dropped(worker.log, articles)

    # Its message was dropped; the edit's is its own, and runs.
    edited = Article.objects.get(message_id=sorted(dropped)[0])
    edited.title = f"{edited.title} edited"
    edited.save()
    assert edited.message_id not in dropped
    # Stored with the edit's content, for the next group that publishes it besides its own.
    assert Article.objects.get(pk=edited.pk).message_id == edited.message_id

    wait_for(lambda: published_as_saved(edited), timeout=30, what="the edit to be published")
    # Its message ran (logged as the task returns, a moment after the row's outcome).
    wait_for(
        lambda: edited.message_id in messages_ran(worker.log),
        timeout=30,
        what="the edit's message to have run",
    )
    assert edited.message_id not in dropped_by(worker.log)
    assert "edited" in (own_site / edited.slug / "index.html").read_text(encoding="utf-8")


def saved_together(*slugs: str) -> list[Article]:
    """Articles saved in one transaction: their messages go out together at its commit."""
    articles = [Article(title=slug, slug=slug, body=f"Body of {slug}.") for slug in slugs]
    with transaction.atomic():
        for article in articles:
            article.full_clean()
            article.save()
    return articles


def test_a_row_that_failed_in_a_group_keeps_its_message_when_the_groups_worker_dies_later(
    pipeline, chaos, settings
):
    """Y's group claims Z and S beside Y; Z's and S's own messages end, seeing their rows
    held. Z fails (it backs off 0–2 s), then S kills the group's pool child. Z's next
    message must not wait for the end of the group: sent once Z's outcome commits, it
    publishes Z after its backoff, with no catch-up running. (Sent at the group's end,
    it died with the child: Z stayed pending with no lease and no message; a review's
    reproduction.)"""
    lease = 20
    settings.PUBLISH_LEASE_SECONDS = lease
    tag = uuid.uuid4().hex[:6]
    b, y, z, s = (f"{name}-{tag}" for name in ("blocker", "lead", "failer", "crasher"))
    chaos(b, hold=60)
    chaos(z, hold=60, hold_until_attempt=2, fail="transient", until_attempt=2)
    chaos(s, fail="crash", until_attempt=2)
    worker = pipeline.worker(concurrency=2, env={"PUBLISH_LEASE_SECONDS": str(lease)})
    pids = settings.RUN_DIR / "pids"
    [blocker] = saved_together(b)
    wait_for(lambda: (pids / f"{b}.1").exists(), timeout=30, what="B held in one child")
    lead, failer, crasher = saved_together(y, z, s)  # one commit: their messages after it
    wait_for(lambda: (pids / f"{z}.1").exists(), timeout=30, what="Z held in Y's group")
    assert PublishAttempt.objects.get(article=failer).task_id == lead.message_id
    release(b)  # the other child frees up: Z's and S's messages run and end
    log = partial(worker.log.read_text, errors="replace")
    wait_for(
        lambda: (
            f"article {failer.pk} not claimed" in log()
            and f"article {crasher.pk} not claimed" in log()
        ),
        timeout=30,
        what="Z's and S's own messages to end, seeing their rows held",
    )
    release(z)  # Z fails; then S kills the pool child, the group unfinished
    wait_for(lambda: published_as_saved(lead), timeout=lease + 30, what="Y published")
    wait_for(lambda: published_as_saved(crasher), timeout=30, what="S published")
    wait_for(lambda: published_as_saved(failer), timeout=20, what="Z published after its backoff")
    assert_published_once([blocker, lead, failer, crasher])
