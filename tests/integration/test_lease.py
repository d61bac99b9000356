"""The one fenced lease (work.lease) on its own, against the real database: rows of
the digest (a lease with a token and an attempt budget) and job leases (no budget).
The callers' tests (articles, batches, the refresher, runs, the digest) hold it to
their scenarios; these hold the module's own promises."""

from __future__ import annotations

from datetime import date

import pytest
from django.db.models import Case, Value, When

from work import lease
from work.models import Digest, DigestState, JobLease

pytestmark = pytest.mark.django_db

JOB = lease.LeaseFields(token="takes", attempts=None)


def make_days(*days: int) -> None:
    Digest.objects.bulk_create(
        Digest(day=date(2026, 1, d), state=DigestState.PENDING) for d in days
    )


def day(d: int):
    return Digest.objects.filter(day=date(2026, 1, d))


def test_claim__once_until_released_then_again_with_a_new_token():
    JobLease.objects.create(name="job")
    rows = JobLease.objects.filter(name="job")

    first = lease.claim_token(rows, seconds=60, fields=JOB)
    held = lease.claim_token(rows, seconds=60, fields=JOB)
    released = lease.release(rows, first, fields=JOB)
    second = lease.claim_token(rows, seconds=60, fields=JOB)

    assert (first, held, released, second) == (1, None, True, 2)


def test_claim__a_lease_that_ran_out_is_free():
    JobLease.objects.create(name="job", lease_expires_at=None)
    rows = JobLease.objects.filter(name="job")
    lease.claim_token(rows, seconds=60, fields=JOB)
    rows.update(lease_expires_at=lease.now_plus(-1))

    assert lease.claim_token(rows, seconds=60, fields=JOB) == 2


def test_an_overtaken_token__renews_releases_and_writes_nothing():
    JobLease.objects.create(name="job")
    rows = JobLease.objects.filter(name="job")
    old = lease.claim_token(rows, seconds=60, fields=JOB)
    rows.update(lease_expires_at=lease.now_plus(-1))
    new = lease.claim_token(rows, seconds=60, fields=JOB)

    assert not lease.renew(rows, old, seconds=60, fields=JOB)
    assert not lease.release(rows, old, fields=JOB)
    assert not lease.fenced(rows, old, fields=JOB).update(running_job="late")
    assert lease.renew(rows, new, seconds=60, fields=JOB)
    assert rows.get().lease_expires_at is not None


def test_claim__counts_an_attempt_and_keeps_to_the_budget():
    make_days(1)

    claimed = lease.claim(day(1), seconds=60, max_attempts=2)
    lease.release(day(1), claimed[0].claims)
    again = lease.claim(day(1), seconds=60, max_attempts=2)
    lease.release(day(1), again[0].claims)
    spent = lease.claim(day(1), seconds=60, max_attempts=2)

    assert [claimed[0].attempts, again[0].attempts, spent] == [1, 2, []]
    assert day(1).filter(lease.budget_spent(2)).exists()


def test_release__refund_attempt_gives_the_try_back():
    make_days(1)
    [row] = lease.claim(day(1), seconds=60)

    assert lease.release(day(1), row.claims, refund_attempt=True)
    assert day(1).values_list("attempts", "lease_expires_at").get() == (0, None)


def test_claim_many__up_to_the_limit_oldest_first_each_with_its_token():
    make_days(5, 3, 4, 1, 2)
    day(1).update(lease_expires_at=lease.now_plus(60))  # held by another claimer

    claimed = lease.claim_many(
        Digest.objects.all(), limit=3, order_by=("day",), seconds=60, max_attempts=5
    )

    assert [row.day.day for row in claimed] == [2, 3, 4]
    assert [row.claims for row in claimed] == [1, 1, 1]
    held = [(row.pk, row.claims) for row in claimed]
    assert lease.fenced_many(Digest.objects.all(), held).count() == 3
    stale = [(row.pk, row.claims - 1) for row in claimed]
    assert not lease.fenced_many(Digest.objects.all(), stale).exists()


def test_row_state__says_how_long_by_the_database_clock():
    make_days(1)
    day(1).update(lease_expires_at=lease.now_plus(30), next_attempt_at=lease.now_plus(-60))

    state = lease.row_state(day(1), "lease_expires_at", "next_attempt_at", "sent_at")

    assert 0 < state.seconds_until("lease_expires_at") <= 30
    assert state.seconds_until("next_attempt_at") is None  # it has come
    assert state.seconds_until("sent_at") is None  # unset
    assert lease.row_state(day(2), "sent_at") is None


@pytest.mark.parametrize(
    ("attempt", "cap", "expected"),
    [
        (1, 600, 1.0),  # the first retry after a second
        (4, 600, 8.0),
        (20, 600, 600.0),  # capped
        (0, 600, 1.0),  # an attempt not counted yet
    ],
)
def test_backoff(attempt, cap, expected):
    assert lease.backoff(attempt, cap=cap) == expected


def test_describe__type_and_message_cut():
    assert lease.describe(ValueError("x" * 5000)) == ("ValueError: " + "x" * 5000)[:4000]
    assert lease.cut("abc", 2) == "ab"


def test_claim_many__an_expression_puts_one_row_first():
    """As a task that claims its own row and the others waiting with it."""
    make_days(1, 2, 3, 4)
    own = date(2026, 1, 4)
    first = Case(When(day=own, then=Value(0)), default=Value(1))

    claimed = lease.claim_many(
        Digest.objects.all(),
        limit=2,
        order_by=(first, "day"),
        seconds=60,
        sort_key=lambda row: (row.day != own, row.day),
    )

    assert [row.day.day for row in claimed] == [4, 1]


def test_seconds_left__while_held_and_none_once_overtaken():
    JobLease.objects.create(name="job")
    rows = JobLease.objects.filter(name="job")
    old = lease.claim_token(rows, seconds=30, fields=JOB)

    assert 0 < lease.seconds_left(rows, old, fields=JOB) <= 30
    rows.update(lease_expires_at=lease.now_plus(-1))
    assert lease.seconds_left(rows, old, fields=JOB) is None
    new = lease.claim_token(rows, seconds=30, fields=JOB)
    assert lease.seconds_left(rows, old, fields=JOB) is None
    assert lease.seconds_left(rows, new, fields=JOB) > 0
