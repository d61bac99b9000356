"""An article scheduled for tomorrow, moved to now (its attempt claims it and stages its
page), then back to tomorrow while the attempt is held under the page guard after its
check: the page is written, the completion finds the content changed. That page must
not stay public until tomorrow: the next pass settles the row as nobody's page (due
later, its lease free) and takes it down, and the full check leaves it down (a review
found it public until its date: a pending row's slug counted as an attempt's)."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.conf import settings
from django.db import connection
from django.utils import timezone

from publishing.models import Article, AttemptOutcome, PublishAttempt
from publishing.services.refresh import shared_views_request
from publishing.services.site import site_reconcile
from tests.support.chaos import release
from tests.support.waiting import wait_for

pytestmark = [
    pytest.mark.django_db(transaction=True),
    # On SQLite the page guard is the database's write lock: the edit waits for the
    # write, and the race cannot happen.
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the page guard's race"),
]


def test_a_page_written_as_the_date_moved_back_goes_before_its_date(site, chaos):
    slug = f"sched-{uuid.uuid4().hex[:6]}"
    chaos(slug, hold=60, hold_at="before-write", hold_until_attempt=2)
    later = (timezone.now() + timedelta(days=1)).replace(microsecond=0)
    article = Article(title="Embargoed", slug=slug, body="Not before tomorrow.", publish_at=later)
    article.full_clean()
    article.save()
    article.publish_at = timezone.now() - timedelta(seconds=1)  # "now"
    article.full_clean()
    article.save()
    wait_for(
        (settings.RUN_DIR / "pids" / f"{slug}.1").exists,
        timeout=30,
        what="the attempt held before its write",
    )
    article.publish_at = later  # "no, tomorrow after all"
    article.full_clean()
    article.save()
    release(slug)
    wait_for(
        lambda: (
            PublishAttempt.objects.filter(article=article)
            .exclude(outcome="")
            .filter(outcome=AttemptOutcome.RETRY)
            .exists()
        ),
        timeout=30,
        what="the attempt to end as changed",
    )
    page = site / slug / "index.html"
    assert page.exists(), "the held write went through (the race this test is about)"

    shared_views_request()  # the next pass, as any publish's or the catch-up's
    wait_for(lambda: not page.exists(), timeout=30, what="the pass to take the page down")
    site_reconcile()
    assert not page.exists()
    row = Article.objects.get(pk=article.pk)
    assert row.status == "pending" and row.published_hash == ""
