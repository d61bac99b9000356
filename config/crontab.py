"""DIGEST_SCHEDULE: a crontab expression of five fields, read as Celery's `crontab`."""

from __future__ import annotations

from celery.schedules import crontab

FIELDS = ("minute", "hour", "day_of_month", "month_of_year", "day_of_week")


def parse_crontab(expression: str, *, name: str = "DIGEST_SCHEDULE") -> crontab:
    """`minute hour day-of-month month day-of-week`, as cron reads them (day of week 0-6 from
    Sunday, or names: mon-fri), in the project's TIME_ZONE. A bad expression raises ValueError with
    a message that says which field and why."""
    fields = expression.split()
    if len(fields) != len(FIELDS):
        raise ValueError(
            f"{name}={expression!r} is not a crontab expression: give 5 fields "
            f"(minute hour day-of-month month day-of-week), e.g. '0 7 * * *'; "
            f"found {len(fields)}."
        )
    try:
        schedule = crontab(**dict(zip(FIELDS, fields, strict=True)))
    except (ValueError, TypeError, IndexError) as exc:
        raise ValueError(f"{name}={expression!r} is not a crontab expression: {exc}") from exc
    for field, value in zip(FIELDS, fields, strict=True):
        if not getattr(schedule, field):  # e.g. "*/0", or a range that selects nothing
            raise ValueError(f"{name}={expression!r}: its {field} field {value!r} selects nothing.")
    return schedule
