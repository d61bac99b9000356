"""Once per day, whatever fires it; missed days by a stated policy.

A day's digest is a `Digest` row unique by day. Whoever fires the digest (two Beats, a
retry, a manual run, cron) inserts the rows it wants or finds them (insert-or-nothing),
then moves a row on only by conditional UPDATEs, like an article:

- **claim**: `state=pending`, lease free, next try due, a try left in the budget →
  lease, `attempts+1`, `claims+1`; the `claims` read after it is the fencing token (the
  one fenced lease, work.lease). A day whose budget was spent by tries that never
  finished is given up (failed, with an alert) instead.
- **deliver**: the content is built once and kept; the mail, then the webhook, each
  recorded as it goes (`mailed_at`, `posted_at`) under the token, so a try after the
  mail went (a retry, a take-over after the lease) posts the webhook without mailing
  again. A take-over posts under the same `Idempotency-Key`.
- **complete**: `state=sent`; **fail** (any error, a time limit's too, is the try's
  `last_error`): the lease let go and the next try after a backoff, or `failed` after
  DIGEST_MAX_ATTEMPTS (with an alert).

Missed days (docs/operations.md, "The daily digest"): the days after the last digest
sent, oldest first, at most DIGEST_CATCHUP_DAYS of them; older missed days are recorded
as skipped. When none was ever sent, only yesterday's.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import date, timedelta
from enum import StrEnum
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import F, Max, Q
from django.db.models.functions import Now
from django.utils import timezone

from digest.content import digest_build
from digest.delivery import digest_key, mail_digest, post_digest
from digest.exceptions import DigestDateError, DigestRetry, DigestSendError
from publishing.alerts import send_alert
from publishing.exceptions import TIME_LIMITS
from work import lease
from work.models import Digest, DigestState
from work.runs import Run, scheduled_run

logger = logging.getLogger(__name__)

# A day's last error, as its row keeps it.
ERROR_MAX_CHARS = 2000


class DayOutcome(StrEnum):
    SENT = "sent"  # sent by this run
    NOT_CLAIMED = "not claimed"  # sent already, being sent elsewhere, or backing off
    RETRY = "retry"  # failed; tried again after a backoff
    FAILED = "failed"  # failed for the last time
    OVERTAKEN = "overtaken"  # this try outlived its lease and another took the day over


@dataclass
class DigestReport:
    planned: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    days: dict[str, str] = field(default_factory=dict)


def digest_enabled() -> bool:
    return bool(settings.DIGEST_RECIPIENTS or settings.DIGEST_WEBHOOK_URL)


def digest_yesterday() -> date:
    """Yesterday in TIME_ZONE by the database's clock, as every due time is read: a
    worker whose clock runs fast near midnight must not send a day before it ends."""
    return timezone.localdate(lease.db_now()) - timedelta(days=1)


def digest_plan(*, yesterday: date) -> tuple[list[date], list[date]]:
    """Insert (or find) the rows of the days to send, and record the older missed days
    as skipped: (days to send, days skipped), oldest first."""
    last = Digest.objects.filter(state=DigestState.SENT).aggregate(last=Max("day"))["last"]
    if last is None:
        wanted, skipped = [yesterday], []
    else:
        missed = [last + timedelta(days=n) for n in range(1, (yesterday - last).days + 1)]
        keep = settings.DIGEST_CATCHUP_DAYS
        wanted, skipped = missed[-keep:] if missed else [], missed[:-keep] if missed else []
    rows = [Digest(day=d, state=DigestState.SKIPPED) for d in skipped]
    rows += [Digest(day=d, state=DigestState.PENDING) for d in wanted]
    # Insert-or-nothing: a row another run made first (or a day sent by hand) stays.
    Digest.objects.bulk_create(rows, ignore_conflicts=True)
    return wanted, skipped


def digest_reopen(*, day: date) -> None:
    """`send_digest --date`: the day is to be sent, also when it was skipped or failed
    (with a fresh budget of tries). A day sent already stays sent."""
    if day > digest_yesterday():
        raise DigestDateError(f"{day} is not over yet in {settings.TIME_ZONE}: no digest.")
    Digest.objects.bulk_create([Digest(day=day, state=DigestState.PENDING)], ignore_conflicts=True)
    given_up = Q(state__in=[DigestState.SKIPPED, DigestState.FAILED])
    # Pending with its tries spent and no one trying (the last died unrecorded): asked
    # for, it was given up as failed instead of sent (a review's finding).
    spent = Q(state=DigestState.PENDING) & lease.budget_spent(settings.DIGEST_MAX_ATTEMPTS)
    Digest.objects.filter(given_up | (spent & lease.lease_free()), day=day).update(
        state=DigestState.PENDING,
        attempts=0,
        next_attempt_at=None,
        last_error="",
        # The token moves on, as an article's requeue moves it: a try paused before the day
        # was given up cannot fail it again, nor send it, once it is asked for.
        lease_expires_at=None,
        claims=F("claims") + 1,
    )


def digest_claim(*, day: date, now: bool = False) -> int | None:
    """Take the day's digest for one try; the fencing token, or None. `now`: without
    waiting for the backoff (a person asked). Only a day with a try left in its budget
    (DIGEST_MAX_ATTEMPTS) is claimed; one whose tries were spent without any saying it
    was the last (stopped by a time limit, a killed worker) is given up instead."""
    rows = _pending(day)
    if not now:
        rows = rows.filter(lease.due())
    return lease.claim_token(
        rows, seconds=settings.DIGEST_LEASE_SECONDS, max_attempts=settings.DIGEST_MAX_ATTEMPTS
    )


# The last error of a day given up because its tries never said how they ended.
UNFINISHED = "the last try never finished: its worker died or ran out of time"


def _give_up_if_spent(day: date) -> bool:
    """Failed, with its alert, when the day's lease is free and its budget spent: a
    day whose tries keep dying never loops (as an article's death,
    services.publish)."""
    spent = _pending(day).filter(
        lease.lease_free(), lease.budget_spent(settings.DIGEST_MAX_ATTEMPTS)
    )
    if not spent.update(state=DigestState.FAILED, last_error=UNFINISHED):
        return False  # one UPDATE: of two claimers, one alerts
    attempts = Digest.objects.filter(day=day).values_list("attempts", flat=True).first()
    _alert_failed(day, attempts=attempts or 0, error=UNFINISHED)
    return True


def digest_why_not(*, day: date) -> str:
    """Why the day's digest could not be claimed, in words."""
    row = lease.row_state(
        Digest.objects.filter(day=day), "state", "sent_at", "lease_expires_at", "next_attempt_at"
    )
    if row is None:
        return f"the digest of {day} was never planned"
    if row["state"] == DigestState.SENT:
        return f"the digest of {day} was sent at {_when(row['sent_at'])}"
    if row["state"] != DigestState.PENDING:
        return f"the digest of {day} is {row['state']}"
    if row.seconds_until("lease_expires_at") is not None:
        return (
            f"the digest of {day} is being sent by another run "
            f"(its lease runs until {_when(row['lease_expires_at'])})"
        )
    if row.seconds_until("next_attempt_at") is not None:
        return f"the digest of {day} waits for its next try at {_when(row['next_attempt_at'])}"
    return f"the digest of {day} was taken by another run a moment ago"


def _when(moment) -> str:
    if moment is None:
        return "an unrecorded time"
    return timezone.localtime(moment).isoformat(sep=" ", timespec="seconds")


def _pending(day: date):
    return Digest.objects.filter(day=day, state=DigestState.PENDING)


def _mine(day: date, token: int):
    return lease.fenced(_pending(day), token)


def digest_deliver(*, day: date, token: int) -> DayOutcome:
    """One try of the claimed day: build (once), mail (once), post (once), complete."""
    row = Digest.objects.get(day=day)
    content = row.content
    if content is None:
        content = digest_build(day=day)
        if not _mine(day, token).update(content=content):
            return DayOutcome.OVERTAKEN
    recipients = list(settings.DIGEST_RECIPIENTS)
    url = settings.DIGEST_WEBHOOK_URL
    try:
        if recipients and row.mailed_at is None:
            if not _hold_for_send(day, token):
                return DayOutcome.OVERTAKEN
            mail_digest(content, recipients=recipients)
            if not _mine(day, token).update(mailed_at=Now(), mailed_to=", ".join(recipients)):
                return DayOutcome.OVERTAKEN
        if url and row.posted_at is None:
            if not _hold_for_send(day, token):
                return DayOutcome.OVERTAKEN
            post_digest(content, url=url, secret=settings.DIGEST_WEBHOOK_SECRET)
            if not _mine(day, token).update(posted_at=Now(), posted_to=url):
                return DayOutcome.OVERTAKEN
    except Exception as exc:  # refused, unreachable, a time limit, or a bug: a failed try
        return _failed_try(day, token, attempt=row.attempts, exc=exc)
    if not lease.release(
        _pending(day), token, state=DigestState.SENT, sent_at=Now(), last_error=""
    ):
        return DayOutcome.OVERTAKEN
    logger.info("digest of %s sent (key %s)", day, digest_key(day.isoformat()))
    return DayOutcome.SENT


def _hold_for_send(day: date, token: int) -> bool:
    """Just before a send no statement can fence (a mail, a POST): the day held a whole
    lease from now, by this try's token, or False (overtaken, sent by another run, or
    given up as failed while this try was paused: a host stopped past its lease, which no
    time limit of the worker's ends, or `send_digest --date`, which has none). A review
    stopped a try just before its mail: it mailed the day a second time after another run
    had sent it, or after the day was failed and alerted "not sent". A pause after this
    check still sends twice; the mail's Message-ID and the POST's key are the day's, so a
    client shows the repeat once and a receiver drops it."""
    return lease.renew(_pending(day), token, seconds=settings.DIGEST_LEASE_SECONDS)


def _failed_try(day: date, token: int, *, attempt: int, exc: Exception) -> DayOutcome:
    """Record the try's error, whatever it was (as an article's attempt records its
    own): a time limit (the POST's deadline) or a bug counts toward DIGEST_MAX_ATTEMPTS
    too. A time limit is raised again once recorded: the run stops there."""
    sending = isinstance(exc, DigestSendError)
    if isinstance(exc, TIME_LIMITS) and not connection.in_atomic_block:
        # It may have come in the middle of a statement: the connection is then unusable.
        connection.close()
    elif not sending:
        logger.error("digest of %s: try %d failed with an error", day, attempt, exc_info=exc)
    error = str(exc) if sending else lease.describe(exc)
    permanent = isinstance(exc, DigestSendError) and exc.permanent
    outcome = _fail(day, token, attempt=attempt, error=error, permanent=permanent)
    if isinstance(exc, TIME_LIMITS):
        raise exc
    return outcome


# The first wait after a failed try of a day's digest, doubled at each: 30, 60, 120 and
# 240 s (under PUBLISH_RETRY_BACKOFF_MAX, 600) spread its five tries over about seven
# minutes. From 1 s, a receiver or mail server restarting for 16 s at the digest's hour
# spent the day's tries and failed it (a review's finding): a digest is daily, and
# minutes late costs nothing.
RETRY_FIRST_SECONDS = 30.0


def _fail(day: date, token: int, *, attempt: int, error: str, permanent: bool) -> DayOutcome:
    last = permanent or attempt >= settings.DIGEST_MAX_ATTEMPTS
    changes: dict[str, Any] = {"last_error": lease.cut(error, ERROR_MAX_CHARS)}
    if last:
        changes["state"] = DigestState.FAILED
    else:
        wait = lease.backoff(
            attempt, cap=settings.PUBLISH_RETRY_BACKOFF_MAX, first=RETRY_FIRST_SECONDS
        )
        changes["next_attempt_at"] = lease.now_plus(wait)
    if not lease.release(_pending(day), token, **changes):
        return DayOutcome.OVERTAKEN
    if not last:
        logger.warning("digest of %s: try %d failed, tried again later: %s", day, attempt, error)
        return DayOutcome.RETRY
    _alert_failed(day, attempts=attempt, error=error)
    return DayOutcome.FAILED


def _alert_failed(day: date, *, attempts: int, error: str) -> None:
    send_alert(
        kind="digest_failed",
        subject=f"the digest of {day} was not sent",
        message=f"after {attempts} tries: {error}. `manage.py send_digest --date {day}` "
        "sends it once the cause is fixed.",
        data={"day": day.isoformat(), "attempts": attempts, "error": error},
    )


def digest_send(*, day: date, now: bool = False) -> tuple[DayOutcome, str]:
    """Claim and send one day: (outcome, what happened in words)."""
    token = digest_claim(day=day, now=now)
    if token is None:
        if _give_up_if_spent(day):
            return DayOutcome.FAILED, f"the digest of {day} failed: {UNFINISHED}"
        return DayOutcome.NOT_CLAIMED, digest_why_not(day=day)
    outcome = digest_deliver(day=day, token=token)
    row = Digest.objects.get(day=day)
    if outcome is DayOutcome.SENT:
        return outcome, f"the digest of {day} was sent"
    if outcome is DayOutcome.OVERTAKEN:
        return outcome, f"the digest of {day}: this try was overtaken by another"
    return outcome, f"the digest of {day} failed ({row.state}): {row.last_error}"


def _unfinished() -> list[date]:
    return list(
        Digest.objects.filter(state=DigestState.PENDING)
        .order_by("day")
        .values_list("day", flat=True)
    )


def _send_unfinished(run: Run, report: DigestReport) -> None:
    """Every pending day, oldest first; a failed day stops the run (newer days wait, so
    they go out in order) and is tried again after its backoff."""
    for day in _unfinished():
        run.renew()
        try:
            outcome, words = digest_send(day=day)
        except TIME_LIMITS as exc:
            # The try is recorded (failed, or backing off): the run goes on in a new one,
            # with a time limit of its own, once the day is due again.
            raise DigestRetry(f"the digest of {day}: {exc!r}", retry_in=_due_in(day)) from exc
        report.days[day.isoformat()] = outcome.value
        logger.info("digest: %s", words)
        if outcome is DayOutcome.NOT_CLAIMED and day in _unfinished():
            # Being sent by another run, or backing off: the newer days wait for it.
            break
        if outcome is DayOutcome.RETRY:
            raise DigestRetry(words, retry_in=_due_in(day))


def _due_in(day: date) -> float:
    """Seconds until the day's next try is due (at least half a second)."""
    row = lease.row_state(Digest.objects.filter(day=day), "next_attempt_at")
    wait = 1.0  # no time to wait for (or the day is gone): soon
    if row is not None and row["next_attempt_at"] is not None:
        wait = row.seconds_until("next_attempt_at") or 0.0
    return max(0.5, wait)


def digest_run(*, plan: bool) -> DigestReport | None:
    """The scheduled job: with `plan` (DIGEST_SCHEDULE) the days the policy wants, and
    every unfinished day; without (the resume, every PUBLISH_CATCHUP_INTERVAL) only the
    unfinished days: a failed try whose retry message was lost, a worker that died.
    None when there was nothing to do or the previous run still runs."""
    if not digest_enabled():
        if plan:
            logger.info("digest: neither DIGEST_RECIPIENTS nor DIGEST_WEBHOOK_URL is set")
        return None
    if not plan and not Digest.objects.filter(state=DigestState.PENDING).exists():
        return None  # the common case of the resume: one cheap query, no run recorded
    report = DigestReport()
    with scheduled_run("digest", lease_seconds=settings.DIGEST_LEASE_SECONDS) as run:
        if run.skipped:
            return None
        try:
            if plan:
                wanted, skipped = digest_plan(yesterday=digest_yesterday())
                report.planned = [d.isoformat() for d in wanted]
                report.skipped = [d.isoformat() for d in skipped]
                if skipped:
                    logger.warning(
                        "digest: %d missed day(s) older than DIGEST_CATCHUP_DAYS=%d skipped: "
                        "%s (send_digest --date sends one)",
                        len(skipped),
                        settings.DIGEST_CATCHUP_DAYS,
                        ", ".join(report.skipped),
                    )
            _send_unfinished(run, report)
        finally:
            run.detail = f"days: {report.days or 'none'}; skipped: {report.skipped or 'none'}"
    return report
