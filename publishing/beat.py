"""Celery Beat's scheduler, with the stuck alarm checked from Beat itself.

The stuck alarm must sound exactly when workers are not running, so it cannot be a
task that a worker would have to run. Beat is the alarm clock anyway: between two
schedule ticks it asks the database whether due work has waited too long
(`stuck_check`, at most once per PUBLISH_CATCHUP_INTERVAL). Two Beats are harmless:
the alarm is claimed with a conditional UPDATE.
"""

from __future__ import annotations

import logging
import time

from celery.beat import PersistentScheduler
from django.conf import settings
from django.db import close_old_connections

logger = logging.getLogger(__name__)


class Scheduler(PersistentScheduler):
    _next_stuck_check = 0.0

    def tick(self, *args, **kwargs) -> float:
        wait = super().tick(*args, **kwargs)
        now = time.monotonic()
        if now >= self._next_stuck_check:
            self._next_stuck_check = now + settings.PUBLISH_CATCHUP_INTERVAL
            self._check_stuck()
        return min(wait, max(0.0, self._next_stuck_check - time.monotonic()))

    def _check_stuck(self) -> None:
        from publishing.services import stuck_check

        try:
            raised = stuck_check()
            logger.info("beat: stuck check done (alarm raised: %s)", raised)
        except Exception:  # a database that is down must not stop the schedule
            logger.exception("beat: stuck check failed")
        finally:
            close_old_connections()
