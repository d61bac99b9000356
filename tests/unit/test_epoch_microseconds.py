"""publishing.db.utc_datetime: the dates of a read that takes them as integers
(EpochMicroseconds on PostgreSQL) or as SQLite's text come back as the same UTC
datetimes, to the microsecond, whatever the form."""

from datetime import UTC, datetime, timedelta, timezone

from publishing.db import EPOCH, epoch_micros, utc_datetime


def test_microseconds_since_1970_are_the_same_moment_to_the_microsecond():
    moment = datetime(2026, 12, 3, 14, 5, 6, 123457, tzinfo=UTC)
    micros = (moment - EPOCH) // timedelta(microseconds=1)

    assert utc_datetime(micros) == moment
    assert utc_datetime(micros + 1) - moment == timedelta(microseconds=1)
    assert utc_datetime(micros).tzinfo is UTC
    assert utc_datetime(-1) == EPOCH - timedelta(microseconds=1)  # before 1970 too


def test_sqlite_text_is_utc_and_an_aware_datetime_is_kept():
    assert utc_datetime("2026-12-03 14:05:06.123457") == datetime(
        2026, 12, 3, 14, 5, 6, 123457, tzinfo=UTC
    )
    paris = datetime(2026, 12, 3, 15, 5, 6, tzinfo=timezone(timedelta(hours=1)))
    assert utc_datetime(paris) == paris


def test_every_form_gives_the_same_microseconds():
    moment = datetime(2026, 12, 3, 14, 5, 6, 123457, tzinfo=UTC)
    micros = (moment - EPOCH) // timedelta(microseconds=1)

    assert epoch_micros(micros) == micros
    assert epoch_micros(moment) == micros
    assert epoch_micros("2026-12-03 14:05:06.123457") == micros
