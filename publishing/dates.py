"""Dates shown in the site's TIME_ZONE, whatever is stored (issue 19).

Validation holds `publish_at` to the years 1900-9000 (publishing.validators), which
every zone can show. A row written past validation (`QuerySet.update`, raw SQL, a row
older than the rule) can hold any date Python can, and the calendar's first and last
hours have no local time in a zone behind or ahead of UTC: 9999-12-31T23:30Z is in
year 10000 at UTC+14, and Django's `localtime()` raises OverflowError. The admin shows
such a date in UTC instead, marked as such, rather than answering 500.
"""

from __future__ import annotations

from datetime import UTC, datetime

from django.db.models import Q
from django.utils import formats, timezone

from publishing.validators import PUBLISH_AT_MAX_YEAR, PUBLISH_AT_MIN_YEAR

# The first moment past the range, and the range's first: what every zone can show.
RANGE_START = datetime(PUBLISH_AT_MIN_YEAR, 1, 1, tzinfo=UTC)
RANGE_END = datetime(PUBLISH_AT_MAX_YEAR + 1, 1, 1, tzinfo=UTC)


def outside_range(field: str = "publish_at") -> Q:
    """Rows whose `field` is outside the years validation allows."""
    return Q(**{f"{field}__lt": RANGE_START}) | Q(**{f"{field}__gte": RANGE_END})


def localtime_or_utc(value: datetime) -> tuple[datetime, bool]:
    """(`value` in the current time zone, False), or (`value` in UTC, True) when the zone
    cannot show it."""
    try:
        return timezone.localtime(value), False
    except OverflowError:
        return value.astimezone(UTC), True


def shown(value: datetime | None, empty: str = "-") -> str:
    """A stored date as the admin shows one (localized, in the current time zone), or
    in UTC with " UTC" after it when the zone cannot show it."""
    if value is None:
        return empty
    moment, in_utc = localtime_or_utc(value)
    return formats.localize(moment) + (" UTC" if in_utc else "")
