"""The two queues: publishing work, and the catch-up (with the deferred refresh of the
shared views) on a queue of its own so that a backlog of publish messages cannot starve
them. Workers consume both."""

from __future__ import annotations

import contextlib
import os
import threading

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


def queue_names(default_queue: str) -> tuple[str, ...]:
    """The queues the workers consume, in the order celery_queues() lists them."""
    return tuple(queue.name for queue in celery_queues(default_queue)[1])


def _length(channel, name: str) -> int:
    size = getattr(channel, "_size", None)  # kombu.transport.virtual.Channel (Redis)
    if size is not None:
        return int(size(name))
    return int(channel.queue_declare(queue=name, passive=True).message_count)


_connections: dict[str, object] = {}
_connections_lock = threading.Lock()


def queue_lengths(broker_url: str, names: tuple[str, ...]) -> dict[str, int | None]:
    """Messages waiting in each queue, read from the broker: {name: count}, None for a
    queue the broker could not say (unreachable, or the queue is not declared yet).

    The one place that asks the broker (GET /metrics, the dashboard): a broker added
    later is one more case in `_length`. On Redis (kombu's virtual transports) the
    length of the queue's lists (its priority lists included; an empty queue has no
    list, so 0); on RabbitMQ a passive `queue.declare`, which counts the ready messages
    (not the unacked ones a worker holds) and creates nothing (an undeclared queue
    raises, costing that queue's channel only). One connection per process and broker
    is kept between calls (a scrape every few seconds need not connect each time), with
    short timeouts; after an error it is dropped and the next call connects afresh."""
    with _connections_lock:
        try:
            conn = _connection(broker_url)
            lengths: dict[str, int | None] = {}
            channel = conn.default_channel
            for name in names:
                try:
                    lengths[name] = _length(channel, name)
                except conn.connection_errors:
                    raise
                except Exception:
                    # RabbitMQ closes the channel of a failed passive declare.
                    lengths[name] = None
                    with contextlib.suppress(Exception):
                        channel.close()
                    channel = conn.channel()
            return lengths
        except Exception:
            _drop(broker_url)
            return dict.fromkeys(names)


def _connection(broker_url: str):
    from kombu import Connection

    conn = _connections.get(broker_url)
    if conn is None or getattr(conn, "_pid", None) != os.getpid():
        conn = Connection(broker_url, connect_timeout=1, transport_options={"socket_timeout": 1})
        conn.ensure_connection(max_retries=0, timeout=2)
        conn._pid = os.getpid()  # a connection made before a fork is not the child's
        _connections[broker_url] = conn
    return conn


def _drop(broker_url: str) -> None:
    conn = _connections.pop(broker_url, None)
    if conn is not None:
        with contextlib.suppress(Exception):
            conn.release()
