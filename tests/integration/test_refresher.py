"""The coalescing refresher of the shared views, with a real worker (prefork,
concurrency 2) through Redis: publishes never wait for it, a burst costs a few passes,
and a pass held elsewhere or a refresher that died delays the front page, never a
publish, and loses nothing.

Its guards (issue 17), each test failing without its guard:

- a pass stopped (SIGSTOP) past its lease while a newer pass lists a new article writes
  nothing of its older snapshot when it resumes (its token is checked at each write);
- a pass that fails, or whose process is killed, is followed by another without the
  catch-up (the failed pass sends the next; the killed one's watchdog does);
- a rebuild that cannot finish within a pass's budget keeps its progress (a checkpoint)
  and the next pass resumes it, the front page and the feed right after every pass.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
from django.conf import settings
from django.db import connections
from django.db.models.functions import Now
from django.utils import timezone

from blogpublish.site import StaticSitePublisher
from blogpublish.site.build import REBUILD_CHECKPOINT
from blogpublish.site.pagination import full_pages
from publishing.models import Article, ArticleStatus, Refresher, content_hash_of
from publishing.services import catch_up, refresh, site_reconcile
from publishing.services.refresh import FIELDS
from tests.support import processes
from tests.support.chaos import RECONCILE_RULE, REFRESH_RULE, release, release_file
from tests.support.settling import wait_session_worker_quiet, wait_settled
from tests.support.site import (
    assert_lists_exactly,
    read_feed,
    read_listing,
    read_site,
    run_full_check,
    slug_of,
)
from tests.support.waiting import wait_for
from work import lease
from work.checkpoints import checkpoint_read
from work.job_leases import HEAVY, Busy, lease_release, lease_take

pytestmark = pytest.mark.django_db(transaction=True)


def passes() -> int:
    return Refresher.objects.values_list("passes", flat=True).get(pk=1)


def published(article: Article) -> bool:
    return Article.objects.filter(pk=article.pk, status=ArticleStatus.PUBLISHED).exists()


def on_front_page(article: Article) -> bool:
    return article.slug in read_listing(settings.SITE_ROOT / "index.html").slugs


def hold_lease(seconds: float) -> None:
    """As a pass running on another host holds it (or one whose refresher died)."""
    Refresher.objects.filter(pk=1).update(
        lease_expires_at=timezone.now() + timedelta(seconds=seconds)
    )


def test_burst_is_listed_by_a_few_passes_not_one_per_publish(site, make_article):
    before = passes()
    burst = [make_article(slug=f"burst-{n}") for n in range(60)]

    wait_settled()

    assert all(published(a) for a in burst)
    view = read_site(site)
    newest_first = [a.slug for a in Article.objects.order_by("-publish_at", "-id")]
    assert view.front.slugs == newest_first[:50]
    assert view.feed_slugs == newest_first[:50]
    assert set(view.sitemap) == set(newest_first)
    # One pass per publish would be 60; requests made during a pass, or within the
    # interval after one, fold into the next.
    assert passes() - before < len(burst) / 2


def test_publish_does_not_wait_for_a_pass_held_elsewhere(site, make_article):
    hold_lease(60)
    article = make_article(slug="while-held")

    wait_for(lambda: published(article), what="the publish, with the refresher's lease held")
    assert (site / "while-held" / "index.html").exists()
    assert not on_front_page(article)  # no pass could run: the request waits for one

    Refresher.objects.filter(pk=1).update(lease_expires_at=None)  # the other pass ends

    wait_for(lambda: on_front_page(article), what="the deferred pass after the lease")
    wait_settled()


def test_refresher_that_died_mid_pass_is_taken_over_when_its_lease_runs_out(site, make_article):
    hold_lease(2)  # its refresher was killed: nobody will let go of the lease
    article = make_article(slug="after-a-dead-refresher")

    wait_for(lambda: published(article), what="the publish")
    wait_for(lambda: on_front_page(article), timeout=20, what="a pass after the dead lease")
    wait_settled()


def test_catch_up_runs_the_pass_whose_message_was_lost(site, make_article):
    article = make_article(slug="lost-pass")
    wait_for(lambda: published(article) and on_front_page(article), what="the first listing")
    wait_settled()
    # What only a pass can show: the front page is written from the database each pass.
    Article.objects.filter(pk=article.pk).update(published_title="Shown by the catch-up")
    # A pass is wanted and was "deferred", but its message is gone (a Redis restart).
    # The full check not due: the catch-up's refresh is the pass counted (tried again at
    # once if it fails on a concurrent write, as a re-render beginning in the worker).
    Refresher.objects.filter(pk=1).update(
        wanted=True, deferred_until=timezone.now(), reconciled_at=timezone.now()
    )
    before = passes()

    catch_up()

    assert before + 1 <= passes() <= before + refresh.PASS_TRIES
    assert "Shown by the catch-up" in read_listing(site / "index.html").titles
    assert not Refresher.objects.filter(pk=1, wanted=True).exists()


def test_catch_up_runs_a_pass_when_its_full_check_is_skipped(site, make_article):
    article = make_article(slug="full-check-skipped")
    wait_for(lambda: published(article) and on_front_page(article), what="the first listing")
    wait_settled()
    Article.objects.filter(pk=article.pk).update(published_title="Shown by the catch-up")
    Refresher.objects.filter(pk=1).update(reconciled_at=None)  # the full check is due
    held = lease_take(name=HEAVY, job="import", seconds=60)  # a heavy job: it is skipped
    assert not isinstance(held, Busy)
    before = passes()
    try:
        catch_up()
    finally:
        lease_release(held)

    # One pass, tried again at once if it met a concurrent write (a re-render beginning
    # in the worker: a CI run's, serialization failure and all), as the test above.
    assert before + 1 <= passes() <= before + refresh.PASS_TRIES
    assert "Shown by the catch-up" in read_listing(site / "index.html").titles


def test_publish_reaches_the_front_page_while_a_full_check_reads_the_site(
    site, make_article, chaos
):
    """The full check reads every page (minutes at a million, or in a bucket) holding
    no lease of the refresher's: a publish meanwhile is listed by its own pass, not
    after the check. Held for the test inside the site's own check, at its listing."""
    held = settings.RUN_DIR / "pids" / RECONCILE_RULE
    held.unlink(missing_ok=True)
    release_file(RECONCILE_RULE).unlink(missing_ok=True)
    chaos(RECONCILE_RULE, hold=60, hold_at="site-listing")
    Refresher.objects.filter(pk=1).update(reconciled_at=None)  # the full check is due
    done: list[bool] = []

    def full_check_in_thread() -> None:
        try:
            done.append(site_reconcile())
        finally:
            connections.close_all()  # this thread's connection, or PostgreSQL keeps the DB

    checking = threading.Thread(target=full_check_in_thread)
    checking.start()
    try:
        wait_for(held.exists, what="the full check to be reading the site")
        article = make_article(slug="during-the-full-check")
        # Within a lease: a check holding the refresher's lease (its own, or as long as
        # the catch-up's time limit, as before) is taken over no sooner than that.
        wait_for(
            lambda: published(article) and on_front_page(article),
            timeout=settings.PUBLISH_REFRESH_LEASE_SECONDS,
            what="the publish's pass while the full check reads",
        )
        assert checking.is_alive() and not done  # still reading: the pass did not wait
    finally:
        chaos(RECONCILE_RULE)
        release(RECONCILE_RULE)
        checking.join(60)
        held.unlink(missing_ok=True)
        release_file(RECONCILE_RULE).unlink(missing_ok=True)  # the next hold holds
    assert done == [True]  # its own pass after the reading, with the other passes done
    assert Refresher.objects.filter(pk=1, reconciled_at__isnull=False).exists()
    wait_settled()
    assert_lists_exactly(site, listed_slugs())


# --- the guards of issue 17 (findings 2, 3 and 8) ---------------------------------------


def listed_slugs() -> list[str]:
    """What the shared views must list, newest first."""
    rows = Article.objects.exclude(published_hash="").order_by("-published_publish_at", "-id")
    return list(rows.values_list("published_slug", flat=True))


def front_and_feed(root) -> tuple[list[str], list[str]]:
    """What the front page and the feed list (the archive may be mid-rebuild)."""
    feed = read_feed(root)
    return read_listing(root / "index.html").slugs, [slug_of(e.link) for e in feed.entries]


def lists_on_top(root, slug: str) -> bool:
    try:
        front, feed = front_and_feed(root)
    except FileNotFoundError:  # the failed-pass test's feed, removed and not yet written
        return False
    return bool(front) and front[0] == slug and feed[0] == slug


def refresher_lease_ran_out() -> bool:
    return not Refresher.objects.filter(pk=1, lease_expires_at__gt=Now()).exists()


# --- a pass stopped past its lease -------------------------------------------------------


@pytest.mark.skipif(
    os.environ.get("BLOGPUBLISH_TEST_DB") != "postgres",
    reason="on SQLite a pass holds the database's write lock for its whole snapshot, so "
    "nothing commits while it is stopped: no newer pass can overtake it",
)
def test_pass_stopped_past_its_lease_writes_nothing_stale(site, make_article):
    first = make_article(slug="before-the-pause")
    wait_for(lambda: lists_on_top(site, first.slug), what="the first article on the front page")
    wait_settled()
    ready, go = settings.RUN_DIR / "paused-pass.ready", settings.RUN_DIR / "paused-pass.go"
    for path in (ready, go):
        path.unlink(missing_ok=True)

    # A pass that has read its snapshot (the feed's entries) and is about to write.
    paused = processes.spawn(
        "paused-pass",
        [sys.executable, "-m", "tests.support.paused_pass", str(ready), str(go)],
        env={"DJANGO_SETTINGS_MODULE": "tests.settings"},
    )
    wait_for(ready.exists, timeout=60, what="the pass to read its snapshot")
    paused.signal(signal.SIGSTOP)
    go.touch()  # seen only once it runs again
    try:
        lease_seconds = settings.PUBLISH_REFRESH_LEASE_SECONDS
        wait_for(refresher_lease_ran_out, timeout=3 * lease_seconds, what="the lease to run out")
        newer = make_article(slug="after-the-pause")
        wait_for(
            lambda: lists_on_top(site, newer.slug),
            timeout=3 * lease_seconds,
            what="a newer pass to list the new article",
        )
    finally:
        paused.signal(signal.SIGCONT)
    wait_for(lambda: not paused.alive(), timeout=60, what="the paused pass to end")

    # Right as it ends (a failed pass is tried again only seconds later): it wrote
    # nothing of its snapshot, which did not have the new article.
    assert lists_on_top(site, newer.slug)
    log = paused.log.read_text()
    assert "pass done: False" in log, log  # it does not report success
    assert "overtaken" in log, log
    wait_settled()
    assert lists_on_top(site, newer.slug)
    assert_lists_exactly(site, listed_slugs())


# --- a failed or killed pass -------------------------------------------------------------


def test_failed_pass_is_followed_by_another_without_the_catch_up(site, worker, make_article):
    failures = "the refresh pass failed"
    before = worker.log.read_text(errors="replace").count(failures)
    feed = site / "feed.xml"
    feed.unlink()
    feed.mkdir()  # the feed cannot be written: the pass fails before the front page

    try:
        article = make_article(slug="after-a-failed-pass")
        wait_for(
            lambda: worker.log.read_text(errors="replace").count(failures) > before,
            what="the pass to fail",
        )
        assert article.slug not in read_listing(site / "index.html").slugs
    finally:
        feed.rmdir()  # repaired; no catch-up runs here, and nothing else asks for a pass
    wait_for(lambda: lists_on_top(site, article.slug), what="the pass after the failed one")
    wait_settled()
    assert_lists_exactly(site, listed_slugs())


def test_killed_pass_is_followed_by_another_without_the_catch_up(site, make_article, chaos):
    held = settings.RUN_DIR / "pids" / REFRESH_RULE
    held.unlink(missing_ok=True)
    release_file(REFRESH_RULE).unlink(missing_ok=True)
    chaos(REFRESH_RULE, hold=120)

    article = make_article(slug="after-a-killed-pass")

    # The pass that the publish's outcome asked for holds the lease, the request
    # cleared; it is killed as the OOM killer would.
    wait_for(held.exists, what="the pass to begin")
    wait_for(lambda: published(article), what="the publish")
    chaos(REFRESH_RULE)
    os.kill(int(held.read_text()), signal.SIGKILL)

    lease_seconds = settings.PUBLISH_REFRESH_LEASE_SECONDS
    wait_for(
        lambda: lists_on_top(site, article.slug),
        timeout=4 * lease_seconds,
        what="the pass after the killed one (no catch-up runs)",
    )
    wait_settled()
    assert_lists_exactly(site, listed_slugs())


def test_no_message_loop_while_a_pass_runs(site, worker, make_article, chaos):
    # An earlier test's watchdog still on its way would be counted below (it follows
    # this test's held lease): the worker's scheduled messages come and go first.
    wait_session_worker_quiet()
    held = settings.RUN_DIR / "pids" / REFRESH_RULE
    held.unlink(missing_ok=True)
    release_file(REFRESH_RULE).unlink(missing_ok=True)
    chaos(REFRESH_RULE, hold=60)
    first = make_article(slug="its-pass-is-held")
    wait_for(held.exists, what="the pass to begin")
    received = "publishing.tasks.refresh_site["
    before = worker.log.read_text(errors="replace").count(received)

    try:
        waiting = make_article(slug="waits-for-the-held-pass")
        wait_for(lambda: published(waiting), what="the second publish")
        # A window of 5 s (20 intervals) while the pass holds the lease: what the
        # refresher sends meanwhile, not how fast anything is.
        window_ends = time.monotonic() + 5
        wait_for(lambda: time.monotonic() > window_ends, interval=0.1)
        sent = worker.log.read_text(errors="replace").count(received) - before
    finally:
        chaos(REFRESH_RULE)
        release(REFRESH_RULE)
    # The second publish's request sends one deferred pass, which finds the lease held
    # and sends one watchdog for PUBLISH_REFRESH_LOST_AFTER (5.5 s) later (a message
    # with an ETA is received when it is sent); with the held pass's own watchdog, if
    # it came late: at most 4 (without the guard: 37 in one run).
    assert sent <= 4, sent
    wait_for(lambda: on_front_page(waiting) and on_front_page(first), what="the next pass")
    wait_settled()


# --- a rebuild longer than a pass --------------------------------------------------------


def make_listed(count: int) -> None:
    """`count` articles published long ago (rows only: the full check writes their pages)."""
    start = datetime(2020, 1, 1, tzinfo=UTC)
    rows = []
    for n in range(count):
        slug, title, body = f"old-{n}", f"Old article {n}", f"Old text {n}."
        at = start + timedelta(hours=n)
        digest = content_hash_of(title=title, slug=slug, body=body, publish_at=at)
        rows.append(
            Article(
                title=title,
                slug=slug,
                slug_key=slug,
                body=body,
                publish_at=at,
                status=ArticleStatus.PUBLISHED,
                content_hash=digest,
                published_hash=digest,
                published_slug=slug,
                published_slug_key=slug,
                published_title=title,
                published_body=body,
                published_publish_at=at,
                published_at=at,
            )
        )
    Article.objects.bulk_create(rows)


def test_rebuild_longer_than_a_pass_resumes_from_its_checkpoint(site, make_article):
    make_listed(300)
    run_full_check(StaticSitePublisher())
    # This test is the pass: it holds the refresher's lease, so the worker's passes (the
    # delete's and the publish's requests) wait, and runs the site's passes itself with
    # a budget that is spent at once: each pass writes the front page, the feed and
    # ONE archive page, then keeps its checkpoint.
    rows = Refresher.objects.filter(pk=1)
    token = lease.claim_token(rows, seconds=300, fields=FIELDS)
    assert token is not None
    try:
        Article.objects.get(slug="old-10").delete()  # every position above it shifts
        newer = make_article(slug="new-during-the-rebuild")
        wait_for(lambda: published(newer), what="the publish")
        expected = listed_slugs()
        pages = full_pages(len(expected))
        assert pages == 6

        progress = []
        for _ in range(pages + 2):
            fence = lease.Fence(rows, token, fields=FIELDS, deadline=time.monotonic())
            done = StaticSitePublisher().refresh(fence=fence)
            fence.close()
            # Right after every pass, finished or not: the new article on top, the
            # deleted one gone.
            assert front_and_feed(site) == (expected[:50], expected[:50])
            if done:
                break
            progress.append(checkpoint_read(REBUILD_CHECKPOINT)["page"])
        assert done, progress
        # Each pass went on where the last one stopped, instead of starting over.
        assert progress == list(range(1, pages))
        assert checkpoint_read(REBUILD_CHECKPOINT) is None
    finally:
        lease.release(rows, token, fields=FIELDS)
    wait_settled()
    assert_lists_exactly(site, listed_slugs())
