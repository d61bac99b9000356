"""The digest's tasks: thin, each calls the digest's job (digest.days).

Their registered names are the ones they had in clock/ (`clock.tasks.…`): Beat's
entries, the task routes and messages already in a queue name them so."""

from __future__ import annotations

from typing import Any

from celery import Task, shared_task
from django.conf import settings

from digest.days import digest_run
from digest.exceptions import DigestRetry

# Inside the lease, as for articles: a day is claimed for DIGEST_LEASE_SECONDS, and the
# task is stopped before any lease it took can run out, so a slow mail server can never
# let a second try take the day over while the first still sends (issue 17, finding 9).
# Days a stopped run did not reach are sent by the resume, oldest first.
_LIMIT = settings.DIGEST_LEASE_SECONDS

DIGEST_TASK: dict[str, Any] = {
    "bind": True,
    # Requeued when the worker child dies mid-send; the run finds the day's lease and the
    # resume (every PUBLISH_CATCHUP_INTERVAL) takes the day over once it ran out.
    "acks_late": True,
    "reject_on_worker_lost": True,
    # The database counts the tries and gives up (DIGEST_MAX_ATTEMPTS), not Celery.
    "max_retries": None,
    "ignore_result": True,
    "soft_time_limit": _LIMIT * 0.8,
    "time_limit": _LIMIT * 0.9,
}


def _run(task: Task, *, plan: bool) -> dict | None:
    try:
        report = digest_run(plan=plan)
    except DigestRetry as exc:
        # A failed day is tried again after its backoff (recorded on the row); if this
        # message is lost, the resume sends the day once the backoff is over.
        raise task.retry(countdown=exc.retry_in, exc=exc) from exc
    return vars(report) if report else None


@shared_task(name="clock.tasks.digest_daily", **DIGEST_TASK)
def digest_daily(self: Task) -> dict | None:
    """DIGEST_SCHEDULE (Celery Beat): the days the missed-run policy wants, and any
    unfinished day."""
    return _run(self, plan=True)


@shared_task(name="clock.tasks.digest_resume", **DIGEST_TASK)
def digest_resume(self: Task) -> dict | None:
    """Every PUBLISH_CATCHUP_INTERVAL (Celery Beat): finish an unfinished day, if any."""
    return _run(self, plan=False)
