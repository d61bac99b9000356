"""The backup executor's per-attempt time limit: the worker's limits, without Celery.

A Celery worker stops an attempt at PUBLISH_SOFT_TIME_LIMIT (an exception in the task)
and kills its pool child at PUBLISH_TIME_LIMIT, both inside the lease, so no other
executor can claim the article while the attempt still runs. `manage.py
publish_pending` has no pool; it gets the same two limits here, from an interval timer
(SIGALRM) in its main thread (issue 8):

- at the soft limit, `AttemptTimeLimitExceeded` is raised where the attempt is, and the
  pipeline records a failed attempt (transient: it backs off, dead after the budget);
- at the hard limit (the soft exception was swallowed, or the attempt is stuck in code
  that never returns to Python), the process exits at once, as Celery kills a child:
  the attempt is then recorded as unfinished by the next claim.

Signals reach only the main thread, so elsewhere (a Celery pool, a thread) this is a
no-op: the worker has its own limits, and its children get no handler of ours.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator

from django.conf import settings

from publishing.exceptions import AttemptTimeLimitExceeded

logger = logging.getLogger(__name__)

# The exit status at the hard limit (EX_SOFTWARE): cron logs show why the run stopped.
HARD_LIMIT_EXIT_STATUS = 70


@contextlib.contextmanager
def attempt_time_limit(
    *, soft: float | None = None, hard: float | None = None, lease: float | None = None
) -> Iterator[None]:
    """Run the body under the soft and hard limits (default: the worker's settings),
    inside `lease` seconds (default: PUBLISH_LEASE_SECONDS), which the message names."""
    soft = settings.PUBLISH_SOFT_TIME_LIMIT if soft is None else soft
    hard = settings.PUBLISH_TIME_LIMIT if hard is None else hard
    lease = settings.PUBLISH_LEASE_SECONDS if lease is None else lease
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    fired = False

    def on_alarm(signum, frame) -> None:
        nonlocal fired
        if fired:
            logger.critical(
                "the attempt is still running at the hard time limit (%.1fs): exiting, "
                "so that it cannot outlive its lease",
                hard,
            )
            logging.shutdown()
            sys.stderr.flush()
            os._exit(HARD_LIMIT_EXIT_STATUS)
        fired = True
        signal.setitimer(signal.ITIMER_REAL, max(hard - soft, 0.01))
        raise AttemptTimeLimitExceeded(
            f"the attempt ran past its time limit ({soft:.1f}s, inside the {lease:g}s lease) "
            "and was stopped"
        )

    started = time.monotonic()
    previous_handler = signal.signal(signal.SIGALRM, on_alarm)
    previous_delay, previous_interval = signal.setitimer(signal.ITIMER_REAL, soft)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous_handler)
        if previous_delay:  # someone else's timer (pytest-timeout): give it back
            left = previous_delay - (time.monotonic() - started)
            signal.setitimer(signal.ITIMER_REAL, max(left, 0.001), previous_interval)
