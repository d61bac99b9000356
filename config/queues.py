"""The two queues: publishing work, and the catch-up (with the deferred refresh of the
shared views) on a queue of its own so that a backlog of publish messages cannot starve
them. Workers consume both."""

from __future__ import annotations

from kombu import Queue


def catch_up_queue(default_queue: str) -> str:
    return f"{default_queue}.catch-up"


def celery_queues(default_queue: str) -> tuple[dict, tuple[Queue, ...]]:
    """(CELERY_TASK_ROUTES, CELERY_TASK_QUEUES) for this default queue name."""
    catch_up = catch_up_queue(default_queue)
    # The deferred refresh of the shared views too: behind a backlog of publishes it
    # would come long after its time.
    routes = {
        "publishing.tasks.publish_catch_up": {"queue": catch_up},
        "publishing.tasks.refresh_site": {"queue": catch_up},
        # The clock's other jobs: the daily digest, and its resume.
        "clock.tasks.digest_daily": {"queue": catch_up},
        "clock.tasks.digest_resume": {"queue": catch_up},
    }
    return routes, (Queue(default_queue), Queue(catch_up))
