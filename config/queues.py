"""The four queues: publishing work; the catch-up (with the deferred refresh of the
shared views) on a queue of its own so that a backlog of publish messages cannot starve
them; the re-render of the whole site in a new look (issue 20), the low-priority work,
on a third, so that its passes never stand in line before a publish; and the webhook's
deliveries on a fourth, so that a slow or silent receiver (each try may hold a worker
process for PUBLISH_WEBHOOK_TIMEOUT) never puts publishes in line behind its tries (a
review's finding: after an import, a new save waited minutes behind hundreds of
deliveries to a receiver that did not answer). A worker started without `-Q` consumes
all four (its processes then take the queues in turn); `make run` and the compose file
give the deliveries a worker of their own (`-Q <webhooks>`) and the other worker the
rest (`-X <webhooks>`), so no delivery ever holds a publish's process.

With quorum queues (BROKER_QUEUE_TYPE=quorum, RabbitMQ only) each queue is declared with
`x-queue-type: quorum` on a topic exchange of its own name: Celery's native delayed
delivery (ETAs and retry countdowns held by RabbitMQ, not by a worker) routes through
topic exchanges only, and warns and falls back to holding the message in the worker
for a direct one (celery/app/base.py, send_task).
"""

from __future__ import annotations

from kombu import Exchange, Queue


def catch_up_queue(default_queue: str) -> str:
    return f"{default_queue}.catch-up"


def rerender_queue(default_queue: str) -> str:
    return f"{default_queue}.rerender"


def webhooks_queue(default_queue: str) -> str:
    return f"{default_queue}.webhooks"


def _queue(name: str, queue_type: str) -> Queue:
    if queue_type == "quorum":
        return Queue(
            name,
            Exchange(name, type="topic"),
            routing_key=name,
            queue_arguments={"x-queue-type": "quorum"},
        )
    return Queue(name)


def celery_queues(
    default_queue: str, queue_type: str = "classic"
) -> tuple[dict, tuple[Queue, ...]]:
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
        # The re-render's passes: one at a time, each short, behind nothing else.
        "publishing.tasks.rerender_site": {"queue": rerender_queue(default_queue)},
        # The webhook's tries: never in line before a publish.
        "publishing.tasks.deliver_webhook": {"queue": webhooks_queue(default_queue)},
    }
    names = (default_queue, catch_up, rerender_queue(default_queue), webhooks_queue(default_queue))
    return routes, tuple(_queue(name, queue_type) for name in names)
