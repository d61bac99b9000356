"""The full check's reading runs beside the passes and publishes (it holds no lease of
the refresher's); what a review of that change broke, each test failing without its
guard. In this process against the real database and a folder of the test's own (the
`site` fixture of test_site_builder.py: each outcome's pass runs at once, here)."""

from __future__ import annotations

import io
import logging
import threading
from datetime import timedelta

import pytest
from celery.exceptions import SoftTimeLimitExceeded
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.db import connection, connections
from django.db.models import F
from django.db.models.functions import Now

from blogpublish.site import build, full_check, selectors
from blogpublish.site.publisher import StaticSitePublisher
from publishing.models import Refresher
from publishing.publishers import BasePublisher, get_publishers
from publishing.services import refresh, site_reconcile
from tests.integration.test_site_builder import site  # noqa: F401  (the fixture)
from tests.support.site import moved_pages, tagged
from tests.support.waiting import wait_for
from work.models import Checkpoint, JobOutcome, JobRun

pytestmark = pytest.mark.django_db(transaction=True)

RETRY = refresh.FULL_CHECK_RETRY_AFTER

only_postgres = pytest.mark.skipif(
    "connection.vendor != 'postgresql'", reason="SQLite runs one writer at a time"
)


class CheckFails(BasePublisher):
    """A target whose storage cannot be reached during the full check."""

    def check(self) -> None:
        raise OSError("this target's storage is unreachable")


def test_a_targets_failing_check_leaves_the_others_their_pass(site, settings):  # noqa: F811
    site.add(2)
    orphan = site.root / "tag" / "no-such-tag"
    orphan.mkdir(parents=True)
    (orphan / "index.html").write_text("a tag no article carries")
    settings.PUBLISH_PUBLISHERS = ["blogpublish.site.StaticSitePublisher", f"{__name__}.CheckFails"]
    Refresher.objects.filter(pk=1).update(reconciled_at=None)

    assert site_reconcile() is False  # not done: due again, in FULL_CHECK_RETRY_AFTER

    # recorded failed, not "ok" beside a detail saying it was not done (a review's)
    run = JobRun.objects.filter(job="reconcile").latest("started_at")
    assert (run.outcome, run.detail[:8]) == (JobOutcome.FAILED, "not done")
    assert not orphan.exists()  # the site's pass ran all the same
    assert not refresh.full_check_due()  # not at every catch-up while the target is down
    Refresher.objects.update(reconciled_at=F("reconciled_at") - timedelta(seconds=RETRY + 1))
    assert refresh.full_check_due()


class ReconcileFails(BasePublisher):
    """A target whose disk is full: every pass of its fails the same way."""

    calls: list[str] = []

    def check(self) -> None:
        type(self).calls.append("check")

    def reconcile(self, *, fence=None):
        type(self).calls.append("reconcile")
        raise OSError(28, "No space left on device")


def test_a_pass_failing_on_its_own_is_not_tried_again_at_once(site, settings):  # noqa: F811
    """Only a conflict with a concurrent write is tried again at once (PASS_TRIES); a full
    disk would fail the same way, and the healthy target's pass would be run again."""
    site.add(1)
    ReconcileFails.calls.clear()
    settings.PUBLISH_PUBLISHERS = [
        "blogpublish.site.StaticSitePublisher",
        f"{__name__}.ReconcileFails",
    ]

    assert site_reconcile() is False

    assert ReconcileFails.calls == ["check", "reconcile"]


class CheckOutOfTime(BasePublisher):
    def check(self) -> None:
        raise SoftTimeLimitExceeded()


def test_the_tasks_time_limit_in_a_check_is_raised_not_taken_for_a_failure(
    site,  # noqa: F811
    settings,
):
    site.add(1)
    settings.PUBLISH_PUBLISHERS = [
        f"{__name__}.CheckOutOfTime",
        "blogpublish.site.StaticSitePublisher",
    ]
    passes = Refresher.objects.get(pk=1).passes

    with pytest.raises(SoftTimeLimitExceeded):
        site_reconcile()

    # Neither the next target's check nor a pass began after it.
    assert Refresher.objects.get(pk=1).passes == passes


class PreviousInterface:
    """A target written before `check` was added, not a BasePublisher."""

    in_groups = False

    def publish(self, article) -> None:
        return None

    def publish_many(self, articles, *, listed_with=()):
        return {}

    def unpublish(self, article) -> None:
        return None

    def withdraw(self, article) -> None:
        return None

    def forget(self, article) -> None:
        return None

    def readdress(self, article_ids) -> None:
        return None

    def refresh(self, *, fence=None, busy=False):
        return None

    def reconcile(self, *, fence=None):
        return None

    def rerender(self, *, fence=None, force=False, again=False):
        return None

    def rerender_due(self) -> bool:
        return False

    def rerender_status(self):
        return None


class NoPublish(PreviousInterface):
    publish = None  # type: ignore[assignment]  # a target missing a method of its own


def test_a_publisher_written_before_check_keeps_publishing(site, settings, caplog):  # noqa: F811
    settings.PUBLISH_PUBLISHERS = [
        "blogpublish.site.StaticSitePublisher",
        f"{__name__}.PreviousInterface",
    ]
    caplog.set_level(logging.WARNING, logger="publishing.publishers")
    call_command("check", stdout=io.StringIO())
    (article,) = site.add(1, slug="after-the-upgrade")  # its attempt, through both

    assert article.status == "published"
    assert any("has no check()" in r.getMessage() for r in caplog.records)
    assert site_reconcile() is True  # its full check: its reconcile pass alone
    run = JobRun.objects.filter(job="reconcile").latest("started_at")
    assert (run.outcome, run.detail) == (JobOutcome.OK, "full check done")


def test_a_publisher_missing_a_method_stops_the_system_check(settings):
    settings.PUBLISH_PUBLISHERS = ["blogpublish.site.StaticSitePublisher", f"{__name__}.NoPublish"]
    get_publishers.cache_clear()

    with pytest.raises(SystemCheckError, match=r"publishing\.E001.*NoPublish lacks publish"):
        call_command("check", stdout=io.StringIO(), stderr=io.StringIO())


def test_a_reconcile_pass_past_its_lease_removes_no_tag_folder_a_newer_pass_wrote(
    site,  # noqa: F811
    monkeypatch,
    settings,
):
    """It read which tags are in use, then stopped past its lease while a newer pass
    wrote a new tag's folder: the folder stays (its removal is fenced by the pass's
    token, and decided again on the database just before)."""
    settings.PUBLISH_REFRESH_LEASE_SECONDS = 2  # short for the test
    site.add(1, slug="old", tags=["Old"])
    assert tagged(site.root, "Old") == ["old"]
    original = selectors.tags_in_use
    reading, resume = threading.Event(), threading.Event()

    def paused_after_reading():
        found = original()
        reading.set()
        resume.wait(30)  # a GC pause, a slow bucket listing, SIGSTOP: past its lease
        return found

    monkeypatch.setattr(selectors, "tags_in_use", paused_after_reading)
    outcome: list = []

    def reconcile_pass() -> None:
        try:
            outcome.append(refresh._forced_pass(full=True))
        finally:
            connections.close_all()

    paused = threading.Thread(target=reconcile_pass)
    paused.start()
    try:
        assert reading.wait(10)
        monkeypatch.setattr(selectors, "tags_in_use", original)
        wait_for(
            lambda: not Refresher.objects.filter(pk=1, lease_expires_at__gt=Now()).exists(),
            what="the paused pass's lease to run out",
        )
        site.add(1, slug="new", tags=["Fresh"])  # its pass writes tag/fresh/
        # On a loaded host that pass may stop at its budget (a second, with this lease)
        # and leave the tag's pages to the next: passes run here until they are written
        # (the final rehearsal of 2026-12-07 met one such pass).
        wait_for(
            lambda: (
                tagged(site.root, "Fresh") == ["new"] or (refresh.shared_views_pass() and False)
            ),
            what="a newer pass to write tag/fresh/",
        )
    finally:
        resume.set()
        paused.join(30)

    assert tagged(site.root, "Fresh") == ["new"]  # not removed by the paused pass
    assert outcome  # it ended (overtaken at the removal, or having found the tag in use)


@only_postgres
def test_two_checks_ending_together_make_one_checkpoint(site):  # noqa: F811
    """restore_check --repair beside the catch-up's check: both save the first checkpoint."""
    site.add(3)
    Checkpoint.objects.filter(name=full_check.FULL_CHECK_CHECKPOINT).delete()
    barrier = threading.Barrier(2)
    errors: list[Exception] = []
    original = full_check.scope_done

    def scope_done(scope, **counts):
        barrier.wait(10)  # both have read every page; they save at the same moment
        return original(scope, **counts)

    def one_check() -> None:
        try:
            StaticSitePublisher().check()
        except Exception as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    full_check.scope_done = scope_done
    try:
        checks = [threading.Thread(target=one_check) for _ in range(2)]
        for thread in checks:
            thread.start()
        for thread in checks:
            thread.join(30)
    finally:
        full_check.scope_done = original
    assert not errors, errors
    assert Checkpoint.objects.filter(name=full_check.FULL_CHECK_CHECKPOINT).count() == 1


@only_postgres
def test_a_check_beside_a_pass_settling_a_delete_does_not_fail_that_pass(
    site,  # noqa: F811
    monkeypatch,
    caplog,
):
    """The check forgot the former addresses of articles gone, rows the pass settling
    a delete deletes in its snapshot: the pass failed on the conflict (and waited for
    the next). They are the reconcile pass's now, under the lease."""
    (article,) = site.add(1, slug="was-here")
    site.edit(article, slug="is-here")
    assert moved_pages(site.root) == {"was-here": "is-here"}
    original = build.settle

    def check_beside(state):
        def check() -> None:
            try:
                StaticSitePublisher().check()
            finally:
                connections.close_all()

        beside = threading.Thread(target=check)  # the pass's snapshot is taken
        beside.start()
        beside.join(30)
        return original(state)

    monkeypatch.setattr(build, "settle", check_beside)
    caplog.set_level(logging.WARNING)

    site.delete(article)

    assert connection.vendor == "postgresql"
    # Failed, or met a concurrent write: either says another pass is wanted.
    assert not [r for r in caplog.records if "another is wanted" in r.getMessage()]
    assert "is-here" not in (site.root / "index.html").read_text()


class BuiltOnlyWhenUsed(BasePublisher):
    """A target whose constructor needs what `migrate` is about to make, or a network
    target that may be down at a deploy."""

    def __init__(self) -> None:
        raise RuntimeError("built by the system check")


def test_the_system_check_looks_at_the_publishers_classes_without_building_them(settings):
    settings.PUBLISH_PUBLISHERS = [
        "blogpublish.site.StaticSitePublisher",
        f"{__name__}.BuiltOnlyWhenUsed",
    ]

    call_command("check", stdout=io.StringIO())  # no SystemCheckError
