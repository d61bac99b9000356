"""Celery Beat's scheduler, with the stuck alarm checked from Beat itself.

The stuck alarm must sound exactly when workers are not running, so it cannot be a
task that a worker would have to run. Beat is the alarm clock anyway: a thread of its
own asks the database every PUBLISH_CATCHUP_INTERVAL whether due work has waited too
long (`stuck_check`). A thread, not a step of the schedule's tick: a send that hangs
(RabbitMQ blocking its publishers on a memory or disk alarm, or a node that stopped
answering, holds the publish confirm for as long as it lasts) held the tick, and the
alarm stayed silent while nothing was published (a review's finding). Two Beats are
harmless: the alarm is claimed with a conditional UPDATE.

Celery opens Beat's connection to the broker at its first send, inside `tick`, retrying for
as long as the broker is down (`broker_connection_max_retries` is None here), so a
Beat started during an outage would never reach its stuck check: until the broker
first answers, each tick tries it once instead, sends nothing (every entry stays due)
and checks for stuck work. Once connected, a send that fails is Celery's to log, and
the ticks go on.
"""

from __future__ import annotations

import logging
import threading

from celery.beat import PersistentScheduler
from django.conf import settings
from django.db import close_old_connections
from kombu.exceptions import OperationalError

logger = logging.getLogger(__name__)


# Seconds between a Beat's tries of a broker that has not answered yet.
BROKER_RETRY_SECONDS = 2.0


class Scheduler(PersistentScheduler):
    _connected = False
    _stuck_watch: threading.Thread | None = None

    def tick(self, *args, **kwargs) -> float:
        if self._stuck_watch is None:  # started before anything here can wait on a send
            self._stuck_watch = threading.Thread(
                target=self._watch_stuck, name="stuck-check", daemon=True
            )
            self._stuck_watch.start()
        return super().tick(*args, **kwargs) if self._broker_answered() else BROKER_RETRY_SECONDS

    def _watch_stuck(self) -> None:
        """The stuck check now and every PUBLISH_CATCHUP_INTERVAL, for Beat's life."""
        interval = threading.Event()  # never set: a wait of the interval between checks
        while True:
            self._check_stuck()
            interval.wait(settings.PUBLISH_CATCHUP_INTERVAL)

    def _broker_answered(self) -> bool:
        """Has the broker answered once (Celery's connection for the sends is made)? If
        not, one try now: no entry is taken off the schedule before it answers."""
        if self._connected:
            return True
        errors: tuple[type[BaseException], ...] = (
            OperationalError,
            *self.connection.connection_errors,
        )
        try:
            self.connection.ensure_connection(max_retries=0)
        except errors as exc:
            logger.error(
                "beat: the broker does not answer (%s); nothing sent, tried again in %s s",
                exc,
                BROKER_RETRY_SECONDS,
            )
            return False
        self._connected = True
        return True

    def _check_stuck(self) -> None:
        from publishing.services import stuck_check

        try:
            raised = stuck_check()
            logger.info("beat: stuck check done (alarm raised: %s)", raised)
        except Exception:  # a database that is down must not stop the schedule
            logger.exception("beat: stuck check failed")
        finally:
            close_old_connections()
