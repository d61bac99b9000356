"""Bare Celery: the floor blogpublish is measured against.

One no-op task on an app with blogpublish's own Celery configuration (every CELERY_*
setting of config.settings: broker URL, acks_late, prefetch multiplier 1, serializer,
task events, transport options), on a queue of its own. Its worker is started with the
same flags (bench.support.WORKER_FLAGS): `celery -A bench.bare worker …`.

The task's only work is to record when it ran: RPUSH of `time.time()` into a list on
the broker's own Redis, one round trip on a connection each pool child keeps. That is
the cheapest durable record on hand; blogpublish's equivalent is its `published_at`.
"""

from __future__ import annotations

import os
import time

import redis
from celery import Celery
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

QUEUE = "bench-bare"

# Not the current app: in the benchmark's process blogpublish's app stays current, so
# its shared tasks (publishing.tasks) keep being sent by it, not by this one.
app = Celery("bench-bare", set_as_current=False)
# config.settings is a plain module: reading it needs no django.setup().
app.config_from_object("config.settings", namespace="CELERY")
app.conf.update(
    task_default_queue=QUEUE,
    task_queues=(Queue(QUEUE),),
    task_routes={},
    beat_schedule={},
    # blogpublish logs through Django's LOGGING (root handler, INFO); with no Django
    # here, Celery's own set-up gives the same lines ("received", "succeeded", "ready").
    worker_hijack_root_logger=True,
)

_client: redis.Redis | None = None


def client() -> redis.Redis:
    """This process's connection to the broker's Redis (made after the pool's fork)."""
    global _client
    if _client is None:
        _client = redis.Redis.from_url(app.conf.broker_url)
    return _client


@app.task(name="bench.bare.noop")
def noop(key: str) -> None:
    client().rpush(key, repr(time.time()))
