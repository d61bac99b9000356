"""`send_digest --date` takes a day as YYYY-MM-DD, from 1900 on (a review's finding:
0001-01-01 overflowed in a zone east of UTC; 20261201 and 2026-W49-1 were taken)."""

from __future__ import annotations

from argparse import ArgumentTypeError
from datetime import date

import pytest

from digest.management.commands.send_digest import _day


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("0001-01-01", "before 1900-01-01"),
        ("1899-12-31", "before 1900-01-01"),
        ("20261201", "not a date"),
        ("2026-W49-1", "not a date"),
        ("2026-02-30", "not a date"),
        ("2026-12-1", "not a date"),
    ],
)
def test_a_day_that_is_not_one_is_refused_saying_why(value, why):
    with pytest.raises(ArgumentTypeError, match=why):
        _day(value)


def test_a_day_is_read():
    assert _day("2026-12-01") == date(2026, 12, 1)
