"""The two queues: publishing work, and the catch-up (with the deferred refresh of the
shared views) on a queue of its own so that a backlog of publish messages cannot starve
them. Workers consume both."""

from __future__ import annotations

import contextlib

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
    }
    return routes, (Queue(default_queue), Queue(catch_up))


def queue_names(default_queue: str) -> tuple[str, ...]:
    """The queues the workers consume, in the order celery_queues() lists them."""
    return tuple(queue.name for queue in celery_queues(default_queue)[1])


def _length(channel, name: str) -> int:
    size = getattr(channel, "_size", None)  # kombu.transport.virtual.Channel (Redis)
    if size is not None:
        return int(size(name))
    return int(channel.queue_declare(queue=name, passive=True).message_count)


def queue_lengths(broker_url: str, names: tuple[str, ...]) -> dict[str, int | None]:
    """Messages waiting in each queue, read from the broker: {name: count}, None for a
    queue the broker could not say (unreachable, or the queue is not declared yet).

    The one place that asks the broker (GET /metrics, the dashboard): a broker added
    later is one more case in `_length`. On Redis (kombu's virtual transports) the
    length of the queue's lists (its priority lists included; an empty queue has no
    list, so 0); on RabbitMQ a passive `queue.declare`, which counts the ready messages
    (not the unacked ones a worker holds) and creates nothing (an undeclared queue
    raises, costing that queue's channel only)."""
    from kombu import Connection

    lengths: dict[str, int | None] = dict.fromkeys(names)
    try:
        with Connection(
            broker_url, connect_timeout=1, transport_options={"socket_timeout": 1}
        ) as conn:
            conn.ensure_connection(max_retries=0, timeout=2)
            for name in names:
                channel = conn.channel()
                try:
                    lengths[name] = _length(channel, name)
                except Exception:
                    lengths[name] = None
                finally:
                    # A channel the broker closed (queue not found) may fail to close.
                    with contextlib.suppress(Exception):
                        channel.close()
    except Exception:
        return dict.fromkeys(names)
    return lengths
