"""A worker process of a test's own, alone on a queue of its own.

For a worker whose environment differs from the session worker's (a bucket as the site,
a webhook receiver, JSON logs, an SMTP server): it takes `<default queue>-<suffix>`, and
this test process sends there too while the block runs (its Celery routes and queues and
the settings given, overridden), so the session's worker never takes these messages and
this worker never takes the session's. Its queues are deleted from the broker after.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, nullcontext

from django.test import override_settings

from config.celery import app
from config.queues import celery_queues
from tests.support import processes
from tests.support.settling import wait_session_worker_quiet


@contextmanager
def own_worker(
    name: str, *, suffix: str, env: dict[str, str] | None = None, db_blocker=None, **settings
) -> Iterator[processes.Proc]:
    """own_worker(name, suffix=…, env={…}, SETTING=value, …) -> the running worker.
    `env`: the worker's environment beyond the queue; `settings`: this process's
    settings meanwhile (usually the same things said as settings); `db_blocker`: a
    module fixture's `django_db_blocker` (the wait below reads the database)."""
    # Nothing of an earlier test's left to run beside it in the session's worker.
    with db_blocker.unblock() if db_blocker is not None else nullcontext():
        wait_session_worker_quiet()
    # Read before the override: Celery loads its configuration from the settings
    # lazily, at the first access.
    default_queue = app.conf.task_default_queue
    default_routes = app.conf.task_routes
    queue = f"{default_queue}-{suffix}"
    routes, queues = celery_queues(queue)
    same = override_settings(
        CELERY_TASK_DEFAULT_QUEUE=queue,
        CELERY_TASK_ROUTES=routes,
        CELERY_TASK_QUEUES=queues,
        **settings,
    )
    same.enable()
    # Celery's configuration was read once: the queue and the routes of the override
    # told to it (a routed task, such as the webhook's deliveries, went to the session
    # worker's queue of its name otherwise), and the session's told again after.
    app.conf.task_default_queue = queue
    app.conf.task_routes = routes
    _reroute()
    worker = None
    try:
        worker = processes.start_worker(
            name=name, env={"BLOGPUBLISH_TEST_QUEUE": queue, **(env or {})}
        )
        yield worker
    finally:
        if worker:
            worker.stop()
        with app.connection_for_write() as conn:  # leave nothing of this run in the broker
            for each in queues:
                conn.default_channel.queue_delete(each.name)
        app.conf.task_default_queue = default_queue
        app.conf.task_routes = default_routes
        _reroute()
        same.disable()


def _reroute() -> None:
    """Celery's router made again from app.conf.task_routes (AMQP keeps the table and
    the router it was built into)."""
    app.amqp.flush_routes()
    app.amqp.__dict__.pop("router", None)
