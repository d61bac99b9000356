"""The digest's day and its lease (issue 17, finding 9): "yesterday" by the database's
clock, not the worker's, and the tasks stopped inside the day's lease, so no second try
can take a day over while the first still sends."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.db.models.functions import Now
from django.utils import timezone

from digest.days import digest_yesterday
from digest.tasks import digest_daily, digest_resume
from work.lease import db_now
from work.models import JobOutcome, JobRun


@pytest.mark.django_db
@pytest.mark.parametrize("skew", [timedelta(hours=25), -timedelta(hours=25)])
def test_yesterday_comes_from_the_database_clock_not_the_workers(monkeypatch, skew):
    real = db_now()
    # This host's clock runs ahead (or behind) of the database's by more than a day.
    monkeypatch.setattr(timezone, "now", lambda: real + skew)

    assert digest_yesterday() == timezone.localdate(real) - timedelta(days=1)


@pytest.mark.django_db
def test_db_now_is_aware_and_agrees_with_now_in_the_database():
    moment = db_now()
    assert moment.utcoffset() == timedelta(0)
    run = JobRun.objects.create(
        job="clock-check", outcome=JobOutcome.OK, started_at=Now(), finished_at=Now()
    )
    run.refresh_from_db()
    assert abs(run.started_at - moment) < timedelta(seconds=30)


@pytest.mark.parametrize("task", [digest_daily, digest_resume])
def test_the_digest_tasks_stop_inside_the_days_lease(task):
    assert task.soft_time_limit < task.time_limit < settings.DIGEST_LEASE_SECONDS
