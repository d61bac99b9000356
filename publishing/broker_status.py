"""How many messages wait in the task queues, on Redis or RabbitMQ alike.

Both answer a passive queue declare (kombu): RabbitMQ with the queue's ready-message
count (messages delivered to a worker and not yet acked are not counted), kombu's Redis
transport with the length of the queue's lists (the same: delivered messages sit in its
`unacked` hash). A queue that does not exist yet holds nothing. For /metrics
(`blogpublish_queue_messages{queue}`) and the tests; nothing depends on it.
"""

from __future__ import annotations

import contextlib

from django.conf import settings
from kombu import Queue
from kombu.exceptions import ChannelError

from publishing.dispatch import send_options
from work.celery_app import celery_app


def queue_message_counts(*, names: list[str] | None = None, timeout: float = 2.0) -> dict[str, int]:
    """{queue name: messages waiting} for every task queue (or the queues `names`);
    raises the broker's connection error when it cannot be reached within about
    `timeout` seconds."""
    queues = [Queue(n) for n in names] if names else list(settings.CELERY_TASK_QUEUES)
    with celery_app().connection_for_read(transport_options=send_options()) as conn:
        # kombu takes seconds with a fraction (it compares them with a clock); its stubs
        # say int.
        # One retry, at once (kombu waits 2 s before it by default: the dashboard and
        # /metrics took 2-3 s while the broker was down).
        conn.ensure_connection(max_retries=1, interval_start=0, timeout=timeout)  # type: ignore[arg-type]
        return {queue.name: _waiting(conn, queue) for queue in queues}


def _waiting(conn, queue) -> int:
    channel = conn.channel()
    try:
        _, count, _ = queue.bind(channel).queue_declare(passive=True)
        return count
    except (ChannelError, *conn.channel_errors):
        return 0  # not declared yet (RabbitMQ: 404 NOT_FOUND; Redis: no list)
    finally:
        with contextlib.suppress(Exception):  # RabbitMQ closed it after a 404
            channel.close()
