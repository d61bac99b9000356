"""`manage.py send_digest [--date YYYY-MM-DD]`: the daily digest by hand or from cron.

Without --date, what Beat does at DIGEST_SCHEDULE: yesterday's digest and the missed
days the policy wants (DIGEST_CATCHUP_DAYS), each sent once however many runs are at it.
With --date, that day's digest now, also when it was skipped or failed; a day sent
already is not sent again. Needs the database and the mail server, not the broker.
Exit 1 when a day failed to send (it is tried again later).
"""

from __future__ import annotations

from datetime import date

from django.conf import settings
from django.core.management.base import CommandError

from digest.days import (
    DayOutcome,
    digest_enabled,
    digest_reopen,
    digest_run,
    digest_send,
)
from digest.exceptions import DigestDateError, DigestRetry
from work.commands import DatabaseCommand
from work.runs import scheduled_run


class Command(DatabaseCommand):
    help = "Send the editors' daily digest (yesterday's and missed days, or --date's)."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--date",
            type=_day,
            help="the day (YYYY-MM-DD, in TIME_ZONE) whose digest to send, also if skipped",
        )

    def handle(self, *args, date: date | None = None, **options) -> None:
        if not digest_enabled():
            raise CommandError("set DIGEST_RECIPIENTS or DIGEST_WEBHOOK_URL: nobody to send to.")
        if date is None:
            self._as_scheduled()
        else:
            self._one_day(date)

    def _as_scheduled(self) -> None:
        try:
            report = digest_run(plan=True)
        except DigestRetry as exc:
            raise CommandError(f"{exc}; it is tried again later") from exc
        if report is None:
            self.stdout.write("another digest run is going on; it sends what is due")
            return
        for day, outcome in report.days.items():
            self.stdout.write(f"{day}: {outcome}")
        for day in report.skipped:
            self.stdout.write(f"{day}: skipped (older than DIGEST_CATCHUP_DAYS)")
        if not report.days:
            self.stdout.write("nothing to send: the digests up to yesterday are sent")

    def _one_day(self, day: date) -> None:
        try:
            digest_reopen(day=day)
        except DigestDateError as exc:
            raise CommandError(str(exc)) from exc
        # Not exclusive: a day is guarded by its own row, so a manual run for one day
        # never waits for, or skips because of, the scheduled job.
        with scheduled_run(
            "digest", lease_seconds=settings.DIGEST_LEASE_SECONDS, exclusive=False
        ) as run:
            outcome, words = digest_send(day=day, now=True)
            run.detail = f"--date {day}: {outcome}"
            self.stdout.write(words)
            if outcome in (DayOutcome.RETRY, DayOutcome.FAILED):
                # Inside the run: recorded failed, not "ok" (a review's finding).
                raise CommandError(words)


# The first day a digest may be asked for: before it, a day's bounds in a time zone east
# of UTC fall before the first date there is (0001-01-01 in Tokyo: an OverflowError).
FIRST_DAY = date(1900, 1, 1)


def _day(value: str) -> date:
    from argparse import ArgumentTypeError

    # YYYY-MM-DD only: fromisoformat alone takes 20261201 and 2026-W49-1 too.
    if len(value) != 10 or value[4] != "-" or value[7] != "-":
        raise ArgumentTypeError(f"{value!r} is not a date (YYYY-MM-DD)")
    try:
        day = date.fromisoformat(value)
    except ValueError:
        raise ArgumentTypeError(f"{value!r} is not a date (YYYY-MM-DD)") from None
    if day < FIRST_DAY:
        raise ArgumentTypeError(f"{value!r} is before {FIRST_DAY}: no digest for it")
    return day
