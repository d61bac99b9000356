"""publishing.db's dates as integers (EpochMicroseconds reads them so on both
databases): epoch_micros and utc_datetime give the same UTC moments back, to the
microsecond."""

from datetime import UTC, datetime, timedelta, timezone

from publishing.db import EPOCH, epoch_micros, utc_datetime


def test_microseconds_since_1970_are_the_same_moment_to_the_microsecond():
    moment = datetime(2026, 12, 3, 14, 5, 6, 123457, tzinfo=UTC)
    micros = (moment - EPOCH) // timedelta(microseconds=1)

    assert utc_datetime(micros) == moment
    assert utc_datetime(micros + 1) - moment == timedelta(microseconds=1)
    assert utc_datetime(micros).tzinfo is UTC
    assert utc_datetime(-1) == EPOCH - timedelta(microseconds=1)  # before 1970 too


def test_an_aware_datetime_in_any_zone_gives_its_utc_microseconds():
    moment = datetime(2026, 12, 3, 14, 5, 6, 123457, tzinfo=UTC)
    paris = moment.astimezone(timezone(timedelta(hours=1)))
    micros = (moment - EPOCH) // timedelta(microseconds=1)

    assert epoch_micros(moment) == epoch_micros(paris) == micros
    assert utc_datetime(epoch_micros(paris)) == paris
