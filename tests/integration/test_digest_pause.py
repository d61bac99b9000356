"""A digest try that was paused (a host stopped past its lease, which no time limit of
the worker's ends; `send_digest --date`, which has none) and goes on after another run
decided its day: it sends nothing and records nothing (a review's findings). In this
process, on the real database: the "pause" is the try's own claim, its lease run out,
and another run's decision, before the try goes on."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core import mail

from digest.content import digest_build
from digest.days import (
    DayOutcome,
    digest_claim,
    digest_deliver,
    digest_reopen,
    digest_send,
    digest_yesterday,
)
from work import lease
from work.models import Digest, DigestState

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def day(settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.DIGEST_RECIPIENTS = ["editors@example.com"]
    settings.DIGEST_WEBHOOK_URL = ""
    settings.DIGEST_MAX_ATTEMPTS = 1
    settings.ADMINS = [("Ops", "ops@example.com")]
    day = digest_yesterday() - timedelta(days=40)
    Digest.objects.create(day=day, state=DigestState.PENDING)
    return day


def digests_mailed(day) -> list:
    return [m for m in mail.outbox if f"Digest of {day.isoformat()}" in m.subject]


def paused_try(day) -> int:
    """A try claimed the day (its last try: DIGEST_MAX_ATTEMPTS is 1) and built its
    content, then stopped before its mail until its lease ran out."""
    token = digest_claim(day=day, now=True)
    assert token is not None
    Digest.objects.filter(day=day, claims=token).update(content=digest_build(day=day))
    Digest.objects.filter(day=day).update(lease_expires_at=lease.now_plus(-1))
    return token


def test_a_paused_last_try_mails_nothing_once_the_day_was_given_up(day):
    token = paused_try(day)
    outcome, words = digest_send(day=day)  # another run: the budget spent, the lease free
    assert outcome is DayOutcome.FAILED, words
    assert Digest.objects.get(day=day).state == DigestState.FAILED  # and alerted "not sent"

    assert digest_deliver(day=day, token=token) is DayOutcome.OVERTAKEN
    assert digests_mailed(day) == []  # the alert said "not sent": it was not
    assert Digest.objects.get(day=day).state == DigestState.FAILED


def test_a_try_from_before_send_digest_date_is_not_the_days_any_more(day):
    token = paused_try(day)
    digest_send(day=day)  # given up as failed
    digest_reopen(day=day)  # `send_digest --date`, before its own claim

    assert digest_deliver(day=day, token=token) is DayOutcome.OVERTAKEN
    row = Digest.objects.get(day=day)
    assert (row.state, row.attempts, row.mailed_at) == (DigestState.PENDING, 0, None)
    assert digests_mailed(day) == []
    # The command's own try sends it, once.
    assert digest_send(day=day, now=True)[0] is DayOutcome.SENT
    assert len(digests_mailed(day)) == 1
