"""Waiting for the pipeline to be quiet: no pending row, nothing queued or running."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import Q
from django.db.models.functions import Now

from publishing.dispatch import REFRESH_TASK
from publishing.models import Article, ArticleStatus, Refresher
from tests.support import processes
from tests.support.waiting import wait_for


def queue_is_drained() -> bool:
    """Nothing waits in this run's queues, and this run's live workers all answer that
    they hold nothing running or prefetched. A worker that does not answer in time counts
    as busy. (Messages waiting for an ETA are not counted: a retry's is for a row still
    pending, which the callers check; others may be for rows an earlier test removed.)"""
    from config.celery import app
    from publishing.broker_status import queue_message_counts

    if any(queue_message_counts().values()):  # Redis or RabbitMQ
        return False
    workers = [p.hostname for p in processes.STARTED if p.hostname and p.alive()]
    if not workers:
        return True
    inspect = app.control.inspect(destination=workers, timeout=1.0)
    for held in (inspect.active(), inspect.reserved()):
        if held is None or set(held) != set(workers) or any(held.values()):
            return False
    return True


def refresher_is_idle() -> bool:
    """No pass of the shared views wanted, deferred or running."""
    busy = Q(wanted=True) | Q(deferred_until__isnull=False) | Q(lease_expires_at__gt=Now())
    return not Refresher.objects.filter(busy).exists()


def refresher_is_quiet() -> bool:
    """No pass of the shared views wanted or running. A deferred pass's message may
    still be on its way: one a stopped host reserved (its ETA held in the stopped main
    process) comes when the host resumes, finds no pass wanted and runs none
    (publishing.services.refresh.shared_views_deferred), while `refresher_is_idle`
    counts its `deferred_until` as busy until then, or until a request re-sends it."""
    busy = Q(wanted=True) | Q(lease_expires_at__gt=Now())
    return not Refresher.objects.filter(busy).exists()


def wait_settled(timeout: float = 90.0) -> None:
    """Every article published or dead, every message (publishes, unpublishes) consumed
    and finished, and the shared views' last pass done."""
    wait_for(
        lambda: (
            not Article.objects.filter(status=ArticleStatus.PENDING).exists()
            and queue_is_drained()
            and refresher_is_idle()
        ),
        timeout=timeout,
        what="the pipeline to settle",
    )


def worker_is_idle(
    worker: processes.Proc, queues: list[str], soon: float = 10.0, *, watchdogs: bool = True
) -> bool:
    """The worker `worker` (consuming `queues`) will write nothing in the next moments:
    no message waits in its queues, it answers that it runs and holds nothing, no task
    it holds for an ETA is due within `soon` seconds (a retry, a deferred pass of the
    shared views, a batch sent again), and no pass of the shared views holds its lease.
    A worker that does not answer in time counts as busy. Tasks held for a later ETA (an
    article scheduled minutes ahead) are not waited for; nor a pass that is only wanted
    or deferred: without a message (counted above) no process runs it. With `watchdogs`
    False, a pass's watchdog that will write nothing is not waited for either (below)."""
    from config.celery import app
    from publishing.broker_status import queue_message_counts

    if any(queue_message_counts(names=queues).values()):
        return False
    inspect = app.control.inspect(destination=[worker.hostname], timeout=1.0)
    try:
        answers = inspect.active(), inspect.reserved(), inspect.scheduled()
    except OSError:
        # A pooled broker connection the broker closed meanwhile (RabbitMQ resets one
        # that sat idle): dropped, and asked again at the next poll with a new one.
        app.pool.force_close_all(close_pool=False)
        return False
    active, reserved, scheduled = answers
    for held in (active, reserved):
        if not held or worker.hostname not in held or held[worker.hostname]:
            return False
    if not scheduled or worker.hostname not in scheduled:
        return False
    horizon = datetime.now().astimezone() + timedelta(seconds=soon)
    # A pass's watchdog (`refresh_site` with the pass's token, a lease plus a second
    # after its claim) writes nothing when it comes if the pass let its lease go and no
    # pass is wanted: it reads the row and ends (services.refresh._watched). Waiting for
    # it cost most tests that ran a pass about ten seconds of teardown. It may then run
    # in the next test, as a watchdog of that test's pass (it follows whichever lease it
    # finds, as in production): a test that counts the refresher's messages waits for
    # it first (watchdogs=True).
    harmless = (
        not watchdogs
        and not Refresher.objects.exclude(lease_expires_at__isnull=True, wanted=False).exists()
    )
    for entry in scheduled[worker.hostname]:
        request = entry.get("request") or {}
        if harmless and request.get("name") == REFRESH_TASK and request.get("args"):
            continue
        eta = entry.get("eta")
        if not eta or datetime.fromisoformat(eta).astimezone() <= horizon:
            return False
    return not Refresher.objects.filter(lease_expires_at__gt=Now()).exists()


def wait_session_worker_quiet(timeout: float = 60.0) -> None:
    """The session's worker holds nothing, not even a watchdog that would write nothing
    (a teardown does not wait for those, conftest.py): before a test that counts the
    refresher's messages, and before a worker of a test's own shares the run's database
    with it (tests/support/own_worker.py), where such a watchdog, following the other
    worker's lease, could run a pass of the session's site."""
    from tests.conftest import SESSION_WORKER

    proc = SESSION_WORKER.get("proc")
    if proc is not None and proc.alive():
        queues = SESSION_WORKER["queues"]
        wait_for(
            lambda: worker_is_idle(proc, queues),
            timeout=timeout,
            what="the session's worker to hold nothing (an earlier test's watchdog)",
        )
