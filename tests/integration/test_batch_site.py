"""The static site's batch path (StaticSitePublisher.publish_many, driven by
publishing.services.publish) on a real database and SITE_ROOT: each row keeps the single
path's guarantees, and the shared views are right once a backlog has drained."""

from __future__ import annotations

import errno
import os
import re
import uuid
from collections.abc import Callable

import pytest
from django.conf import settings
from django.db.models import F
from django.utils import timezone

from blogpublish import files
from blogpublish.models import PageNote
from blogpublish.rendering import MarkdownTooLargeError
from blogpublish.site import StaticSitePublisher, documents, paths
from publishing.models import Article, ArticleStatus, AttemptOutcome, PublishAttempt, Refresher
from publishing.services import publish, publish_group
from publishing.services.refresh import (
    PassOutcome,
    shared_views_deferred,
    shared_views_request,
)
from publishing.tasks import publish_article
from tests.integration.test_batches import all_published, backlog, ok_counts
from tests.support.settling import wait_session_worker_quiet
from tests.support.site import assert_lists_exactly, run_full_check
from tests.support.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def page(article: Article):
    return settings.SITE_ROOT / paths.page_file(article.slug)


def edit(article: Article) -> None:
    """An edit committed by someone else: new content, so a new content hash."""
    row = Article.objects.get(pk=article.pk)
    row.body += "\n\nEdited while its batch was running."
    row.content_hash = row._content_hash()
    Article.objects.filter(pk=row.pk).update(body=row.body, content_hash=row.content_hash)


@pytest.fixture
def quiet_site(transactional_db):
    """A site holding only what these tests publish, and a refresher with no pass due."""
    run_full_check(StaticSitePublisher())
    Refresher.objects.update_or_create(
        pk=1,
        defaults={
            "lease_expires_at": None,
            "wanted": False,
            "deferred_until": None,
            "last_pass_at": None,
        },
    )
    return settings.SITE_ROOT


def test_a_row_edited_mid_batch_is_fenced_and_the_others_publish(quiet_site, monkeypatch):
    prefix = f"fence-{uuid.uuid4().hex[:6]}"
    articles = backlog(prefix, 6)
    edited, others = articles[2], articles[:2] + articles[3:]
    stage_many = files.stage_many

    def edit_then_stage(*args, **kwargs):
        # After the batch rendered the old content, before its page guard.
        edit(edited)
        return stage_many(*args, **kwargs)

    monkeypatch.setattr(files, "stage_many", edit_then_stage)

    report = publish_group(retry_in=publish_article.backoff, limit=6, worker="here")

    assert report.claimed == 6
    assert report.outcomes == {"published": 5, "changed": 1}
    assert all_published(others)
    row = Article.objects.get(pk=edited.pk)
    assert row.status == ArticleStatus.PENDING and row.published_hash == ""
    assert not page(edited).exists()  # the old content's page never went live
    assert not PageNote.objects.filter(article_id=edited.pk).exists()
    for article in others:
        assert f"Body {article.slug.rsplit('-', 1)[1]}." in page(article).read_text()
    assert set(ok_counts(others).values()) == {1}
    assert not PublishAttempt.objects.filter(article=edited, outcome=AttemptOutcome.OK).exists()


def test_a_link_where_one_page_goes_makes_that_row_dead_not_the_batch(
    quiet_site, tmp_path, mailoutbox, request
):
    prefix = f"link-{uuid.uuid4().hex[:6]}"
    articles = backlog(prefix, 5)
    linked, others = articles[3], articles[:3] + articles[4:]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    link = settings.SITE_ROOT / linked.slug
    link.symlink_to(elsewhere, target_is_directory=True)
    request.addfinalizer(link.unlink)  # the full check leaves links alone

    report = publish_group(retry_in=publish_article.backoff, limit=5, worker="here")

    assert report.outcomes == {"published": 4, "dead": 1}
    assert all_published(others) and all(page(a).is_file() for a in others)
    row = Article.objects.get(pk=linked.pk)
    assert row.status == ArticleStatus.DEAD and linked.slug in row.last_error
    assert list(elsewhere.iterdir()) == []  # nothing written through the link
    assert PublishAttempt.objects.filter(article=linked).count() == 1
    # Its alert, sent in this process after the commit: one, for it alone.
    assert [m.subject for m in mailoutbox] == [
        f"[Django] [blogpublish] article {linked.pk} is dead after 1 attempt(s)"
    ]


def test_a_row_the_renderer_refuses_goes_dead_alone(quiet_site, monkeypatch):
    """No Markdown the database can hold fails to render any more (issue 20: the body's
    one limit is its size, held by a constraint too), so the renderer's refusal is made
    for one body; the batch around it is the real thing."""

    def refusing(real):
        def render(text: str, *args):
            if text.startswith("UNRENDERABLE"):
                raise MarkdownTooLargeError("Not rendered: made to fail by the test.")
            return real(text, *args)

        return render

    # A page renders its body alone, or with its excerpt when it has no description.
    for name in ("render_markdown", "render_markdown_and_excerpt"):
        monkeypatch.setattr(documents, name, refusing(getattr(documents, name)))
    prefix = f"refused-{uuid.uuid4().hex[:6]}"
    articles = backlog(prefix, 4)
    refused, others = articles[0], articles[1:]
    Article.objects.filter(pk=refused.pk).update(body="UNRENDERABLE body")

    report = publish_group(retry_in=publish_article.backoff, limit=4, worker="here")

    assert report.outcomes == {"published": 3, "dead": 1}
    assert all_published(others)
    row = Article.objects.get(pk=refused.pk)
    assert row.status == ArticleStatus.DEAD and "Not rendered" in row.last_error
    assert not page(refused).exists()


@pytest.mark.parametrize("rows", [23, 20])  # the last batch short, or full then empty
def test_the_shared_views_are_right_once_the_backlog_drains(quiet_site, rows, settings):
    """Full batches ask for a pass per PUBLISH_REFRESH_BACKLOG_INTERVAL (here longer
    than the test); the batch that finds the backlog short or empty brings the pass
    forward, so the views list every article without waiting for that interval."""
    settings.PUBLISH_BATCH_SIZE = 5
    settings.PUBLISH_REFRESH_INTERVAL = 0
    settings.PUBLISH_REFRESH_BACKLOG_INTERVAL = 3600
    passes = Refresher.objects.values_list("passes", flat=True).get(pk=1)
    articles = backlog(f"drain-{uuid.uuid4().hex[:6]}", rows)

    batches = 0
    while publish_group(retry_in=publish_article.backoff, worker="here").claimed:
        batches += 1

    assert all_published(articles)
    assert batches == -(-rows // 5)
    # One pass for the first full batch (none had run lately), then none until the last.
    assert Refresher.objects.values_list("passes", flat=True).get(pk=1) - passes == 2
    live = Article.objects.exclude(published_hash="").order_by("-publish_at", "-id")
    assert_lists_exactly(quiet_site, [a.slug for a in live])
    assert not PageNote.objects.exists()  # every note settled by the last pass


def test_a_pass_ending_mid_drain_leaves_the_next_to_the_backlogs_interval(
    quiet_site, settings, monkeypatch
):
    """A full batch whose request finds a pass running leaves the next pass to it (the
    running pass's lease covers the request). That pass, ending wanted again while a full
    group of due rows still waits, defers the next by the backlog's interval, as the
    batch asked; by the ordinary interval once less than a group waits, when an ordinary
    request (a delete's) came meanwhile too, and when the pass stopped at its budget."""
    wait_session_worker_quiet()  # no watchdog of an earlier test's pass runs one here
    settings.PUBLISH_BATCH_SIZE = 5
    # The ordinary interval long enough that the deferred pass's message (sent to the
    # session's worker, which clears `deferred_until` as it begins) never comes before
    # the test reads the row: at 0.2 s it did once, in a loaded CI rehearsal.
    settings.PUBLISH_REFRESH_INTERVAL = 5
    settings.PUBLISH_REFRESH_BACKLOG_INTERVAL = 3600
    articles = backlog(f"mid-drain-{uuid.uuid4().hex[:6]}", 7)
    refresh = StaticSitePublisher.refresh
    meanwhile: list[Callable[[], object]] = []  # what happens while the pass runs
    budget_spent = [False]  # the pass stops at its budget (a rebuild's slice)

    def requested_meanwhile(self, *args, **kwargs):
        for event in meanwhile:
            event()
        done = refresh(self, *args, **kwargs)
        return False if budget_spent[0] else done

    monkeypatch.setattr(StaticSitePublisher, "refresh", requested_meanwhile)

    def deferred_pass(*events: Callable[[], object], outcome=PassOutcome.DONE) -> float:
        """The deferred pass run now (its interval since the last one over), with
        `events` while it runs: the seconds until the pass it leaves."""
        meanwhile[:] = events
        budget_spent[0] = outcome is PassOutcome.MORE
        ran: list[PassOutcome] = []

        def ran_here() -> bool:
            # A pass of the session worker's (an earlier test's watchdog) may hold the
            # lease a moment: BUSY runs nothing here, so it is tried again.
            Refresher.objects.filter(pk=1).update(wanted=True, last_pass_at=None)
            ran[:] = [shared_views_deferred()]
            return ran[0] is not PassOutcome.BUSY

        wait_for(ran_here, timeout=30, what="the refresher's lease free for this pass")
        assert ran[0] is outcome
        row = Refresher.objects.get(pk=1)
        assert row.wanted and row.deferred_until is not None
        return (row.deferred_until - timezone.now()).total_seconds()

    def batch() -> None:  # a full batch's request
        shared_views_request(backlog=True)

    def delete() -> None:  # an ordinary request
        shared_views_request()

    def its_deferred_pass_due() -> None:  # the backlog's deferred pass about to come
        Refresher.objects.filter(pk=1).update(deferred_until=timezone.now())

    def its_deferred_pass_came() -> None:  # it came, found the lease held (a watchdog)
        Refresher.objects.filter(pk=1).update(deferred_until=None)

    assert deferred_pass(batch) > 600  # seven due, a group is five
    assert deferred_pass(batch, delete) < 60
    assert deferred_pass(batch, its_deferred_pass_due, delete, its_deferred_pass_came) < 60
    assert deferred_pass(batch, outcome=PassOutcome.MORE) < 60
    assert publish_group(retry_in=publish_article.backoff, worker="here").claimed == 5
    assert deferred_pass(batch) < 60  # two due
    publish_group(retry_in=publish_article.backoff, worker="here")
    assert all_published(articles)


def test_a_row_overtaken_mid_batch_is_not_written_by_the_batch(quiet_site, monkeypatch):
    """A newer attempt took the row over (its lease ran out and another claim raised the
    token) after the batch rendered it: the batch writes no page over the newer one's,
    and does not complete it; the others publish."""
    articles = backlog(f"overtaken-{uuid.uuid4().hex[:6]}", 4)
    overtaken, others = articles[0], articles[1:]
    stage_many = files.stage_many

    def overtake_then_stage(*args, **kwargs):
        Article.objects.filter(pk=overtaken.pk).update(claims=F("claims") + 1)
        return stage_many(*args, **kwargs)

    monkeypatch.setattr(files, "stage_many", overtake_then_stage)

    report = publish_group(retry_in=publish_article.backoff, limit=4, worker="here")

    assert report.outcomes["published"] == 3 and all_published(others)
    row = Article.objects.get(pk=overtaken.pk)
    assert row.status == ArticleStatus.PENDING and row.published_hash == ""
    assert not page(overtaken).exists()
    assert not PageNote.objects.filter(article_id=overtaken.pk).exists()


def test_a_groups_slices_link_to_each_other_from_the_start(quiet_site, settings, monkeypatch):
    """A group's pages are written a slice at a time (publish.SLICE) and listed at one
    commit: each slice's pages name the rest of the group as their neighbours from the
    start (`listed_with`), so the pass after it writes none of them again. Given only
    its own slice, the pages at each slice's ends named articles outside the group."""
    settings.PUBLISH_REFRESH_INTERVAL = 0
    monkeypatch.setattr(publish, "SLICE", 3)
    articles = backlog(f"sliced-{uuid.uuid4().hex[:6]}", 9)
    written_again = []
    again = StaticSitePublisher._write_live_pages

    def counted(self, article_ids):
        written_again.extend(article_ids)
        return again(self, article_ids)

    monkeypatch.setattr(StaticSitePublisher, "_write_live_pages", counted)

    report = publish_group(retry_in=publish_article.backoff, limit=9, worker="here")

    assert report.claimed == 9 and all_published(articles)
    assert written_again == []  # the pass after the group found every page right
    newest_first = [a.slug for a in sorted(articles, key=lambda a: (a.publish_at, a.pk))][::-1]
    for i, slug in enumerate(newest_first):
        html = page(Article(slug=slug)).read_text(encoding="utf-8")
        found = dict(re.findall(r'<a rel="(prev|next)" href="([^"]*)">', html))
        if i > 0:
            assert found["next"] == paths.article_href(newest_first[i - 1]), slug
        if i + 1 < len(newest_first):
            assert found["prev"] == paths.article_href(newest_first[i + 1]), slug


@pytest.mark.parametrize("cause", [errno.EROFS, errno.ENOSPC], ids=["read-only", "full"])
def test_a_site_root_that_cannot_be_written_spends_no_attempt(
    quiet_site, monkeypatch, cause, caplog
):
    """SITE_ROOT read-only (or full): every pending article failed its budget within
    minutes and went dead, each with an alert and a requeue to make (a review's
    finding). No page can be written, so the attempts are given back: the articles wait,
    pending, one alert says why, and they go out once it can be written."""

    def cannot(*_args, **_kwargs):
        raise OSError(cause, os.strerror(cause))

    monkeypatch.setattr(files, "stage", cannot)
    monkeypatch.setattr(files, "stage_many", cannot)
    articles = backlog(f"unwritable-{uuid.uuid4().hex[:6]}", 3)
    ids = [a.pk for a in articles]

    for _ in range(settings.PUBLISH_MAX_ATTEMPTS + 1):
        Article.objects.filter(pk__in=ids).update(next_attempt_at=None)  # due again
        publish_group(retry_in=publish_article.backoff, limit=3, worker="here")

    rows = Article.objects.filter(pk__in=ids)
    assert set(rows.values_list("status", "attempts")) == {(ArticleStatus.PENDING, 0)}
    assert all("SITE_ROOT cannot be written" in row.last_error for row in rows)
    alerts = [r for r in caplog.records if "the site cannot be written" in r.getMessage()]
    assert len(alerts) == 1 and os.strerror(cause) in alerts[0].getMessage()
    monkeypatch.undo()
    Article.objects.filter(pk__in=ids).update(next_attempt_at=None)
    publish_group(retry_in=publish_article.backoff, limit=3, worker="here")
    assert all_published(articles)
