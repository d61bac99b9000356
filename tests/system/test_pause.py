"""A worker process paused longer than its lease (SIGSTOP: a paused VM, a long GC or
swap stall) in the middle of an attempt, after its page's token check and before its
rename, while the article is edited and published again by another process and other
articles publish; then resumed (SIGCONT). Issue 17, item 7: every page, the front
page, the feed, the sitemap and the tag pages (issue 21: the edit moves the article from
one tag to another meanwhile) are exact, and nothing was announced twice.

Real processes: a `celery worker` and `celery beat` on a private redis-server,
PostgreSQL, a real HTTP receiver for the webhook. The pause is the kernel's: the pool
child is stopped inside the site publisher (`hold_at: before-write`, under the page
guard), so its guard's transaction sits idle until the server ends it
(`idle_in_transaction_session_timeout`, one lease), and it writes its old page when
it resumes unless the take-back after the rename puts the newer one back.
"""

from __future__ import annotations

import os
import signal

import pytest
from django.conf import settings

from publishing.models import Article, ArticleStatus, PublishAttempt
from tests.support.chaos import release
from tests.support.settling import refresher_is_quiet, wait_settled
from tests.support.site import tagged
from tests.support.waiting import wait_for, wait_status
from tests.system.helpers import save_articles, wait_all_published
from tests.system.test_recovery import pid_of_attempt
from tests.system.test_withdraw_race import events, site_lists_exactly, start

pytestmark = [pytest.mark.system, pytest.mark.django_db(transaction=True)]


def page_of(slug: str) -> str:
    return (settings.SITE_ROOT / slug / "index.html").read_text(encoding="utf-8")


def test_a_worker_paused_past_its_lease_leaves_no_stale_page_and_no_second_event(
    pipeline, receiver, chaos
):
    start(pipeline, receiver)  # Beat, and worker A (with the webhook)
    paused_host = pipeline.procs[-1]
    before = save_articles("before-pause", 2, tags=["pause-others"])
    wait_all_published(before)
    chaos("paused-0", hold=120, hold_at="before-write")
    article = Article(title="Paused", slug="paused-0", body="Version one.", tags=["pause-old"])
    article.full_clean()
    article.save()
    child = pid_of_attempt("paused-0", 1)  # under the page guard, its token checked

    # The whole host stops: its main process (else it would kill the stopped child at
    # the task's hard time limit), then the child in the middle of the attempt.
    paused_host.signal(signal.SIGSTOP)
    os.kill(child, signal.SIGSTOP)
    try:
        release("paused-0")  # it goes on at once when it resumes; later attempts never hold
        article.body, article.tags = "Version two.", ["pause-new"]
        article.save()
        pipeline.worker(name="other-host")
        during = save_articles("during-pause", 2, tags=["pause-others"])
        # The catch-up sends the row again once the paused attempt's lease has run out;
        # the other host takes it over, and the server ends the paused guard's
        # transaction (one lease idle), which frees the page.
        wait_status(article, ArticleStatus.PUBLISHED, timeout=90, same_content=True)
        wait_all_published(during)
        slugs = {a.slug for a in [*before, *during, article]}
        # Quiet before the resume: no pass wanted or running to repair the late write.
        # Not "idle": the paused host may hold a deferred pass's message it reserved
        # before it stopped, whose `deferred_until` then stays set until it resumes
        # (runs with this wait at 60 s timed out on it; docs/testing.md).
        wait_for(
            lambda: site_lists_exactly(slugs) and refresher_is_quiet(),
            timeout=60,
            what="the site to list them all, its refresher quiet",
        )
        assert "Version two." in page_of("paused-0")
    finally:
        os.kill(child, signal.SIGCONT)  # the child first: it gets to its write

    # The resumed attempt finds itself overtaken (after its rename, the take-back) and
    # says so in its record, which the takeover had marked as never finished.
    first = PublishAttempt.objects.filter(article=article).order_by("id").first()
    try:
        wait_for(
            lambda: "then, late:" in PublishAttempt.objects.get(pk=first.pk).error,
            timeout=60,
            what="the paused attempt to end, overtaken",
        )
    finally:
        paused_host.signal(signal.SIGCONT)
    # Its rename put its old page up; finding itself overtaken, it took it back.
    page = page_of("paused-0")
    assert "Version two." in page and "Version one." not in page
    wait_settled()
    assert site_lists_exactly(slugs)
    assert page_of("paused-0") == page
    # The tag pages as the published version has them: the old tag's gone with it.
    assert tagged(settings.SITE_ROOT, "pause-new") == ["paused-0"]
    assert tagged(settings.SITE_ROOT, "pause-old") is None
    others = tagged(settings.SITE_ROOT, "pause-others")
    assert others is not None and set(others) == {a.slug for a in [*before, *during]}
    row = Article.objects.get(pk=article.pk)
    assert (row.status, row.published_hash) == (ArticleStatus.PUBLISHED, row.content_hash)
    # One announcement of the article: the published version's; none of the paused one.
    assert events(receiver, "paused-0") == ["article.published"]
    [announced] = [r for r in receiver.requests_for("paused-0") if r.status == 200]
    assert announced.json["content_hash"] == row.content_hash
    for other in [*before, *during]:
        assert events(receiver, other.slug) == ["article.published"]
