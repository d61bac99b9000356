"""The Celery app. All CELERY_* settings live in config/settings.py, each with its reason."""

from __future__ import annotations

import os
import time

import click
from celery import Celery, signals

from config import redis_transport
from config.flower import refuse_an_open_flower
from config.startup import settings_or_exit
from work import celery_app

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
redis_transport.install()  # workers survive Redis restarts (see the module)
refuse_an_open_flower()  # `celery -A config flower` only: strong credentials or no Flower
if click.get_current_context(silent=True) is not None:  # the `celery` program
    settings_or_exit("celery")

app = Celery("blogpublish")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# The packages below config (publishing's dispatch) reach the app through work.
celery_app.register(app)


# A connection that a task finished with, without an error, less than this many seconds
# ago is not checked again (CONN_HEALTH_CHECKS' `SELECT 1`) before the next task's
# first statement: in a burst that check was one round trip of every message's three.
RECENTLY_USED_SECONDS = 1.0
# When the last task left each connection (by alias) healthy: time.monotonic().
_left_healthy: dict[str, float] = {}


@signals.task_prerun.connect
def _recycle_database_connections(**kwargs) -> None:
    """What Django does around each request, before each task: a connection that broke
    (a database restart) or outlived CONN_MAX_AGE is closed and the next query opens a
    fresh one; a healthy one is kept (CELERY_DB_REUSE_MAX in settings stops Celery's
    fixup from closing every connection before and after each task). The health check
    (`SELECT 1` before the first statement) is skipped for a connection the last task
    left healthy within RECENTLY_USED_SECONDS: a database that went away in that second
    fails the task's first statement instead, an OperationalError, which the durable
    tasks retry (autoretry_for) on a fresh connection, as one that went away between
    the check and the statement always did."""
    from django.db import close_old_connections, connections

    close_old_connections()
    now = time.monotonic()
    for connection in connections.all(initialized_only=True):
        left = _left_healthy.pop(connection.alias, None)
        if connection.connection is not None and left and now - left < RECENTLY_USED_SECONDS:
            # Django's own flag (BaseDatabaseWrapper, 4.1+); the stubs leave it out.
            connection.health_check_done = True  # type: ignore[attr-defined]


@signals.task_postrun.connect
def _recycle_database_connections_after(**kwargs) -> None:
    """After each task, as after a request: closed if broken or too old; a connection
    kept is marked with the time (see `_recycle_database_connections`)."""
    from django.db import close_old_connections, connections

    close_old_connections()
    now = time.monotonic()
    for connection in connections.all(initialized_only=True):
        # Still open after the check: usable (one that saw an error was just tested).
        if connection.connection is not None:
            _left_healthy[connection.alias] = now


# The log context of the running task (publishing/logcontext.py), by task id.
_log_tokens: dict = {}


@signals.task_prerun.connect
def _bind_log_context(task_id=None, task=None, args=None, kwargs=None, **extra) -> None:
    """Every line the task logs names its task id, the article it is about (the argument
    of publish_article, the snapshot's id of unpublish_article) and the web request that
    sent it (a header)."""
    from publishing.logcontext import bind

    article_id = None
    name = task.name if task is not None else ""
    if name == "publishing.tasks.publish_article":
        article_id = args[0] if args else (kwargs or {}).get("article_id")
    elif name == "publishing.tasks.unpublish_article" and args and isinstance(args[0], dict):
        article_id = args[0].get("id")  # the deleted article's snapshot
    request_id = getattr(task.request, "request_id", None) if task is not None else None
    _log_tokens[task_id] = bind(task_id=task_id, article_id=article_id, request_id=request_id)


@signals.task_postrun.connect
def _unbind_log_context(task_id=None, **extra) -> None:
    from publishing.logcontext import unbind

    token = _log_tokens.pop(task_id, None)
    if token is not None:
        unbind(token)


@signals.worker_init.connect
def _refuse_queues_declared_otherwise(sender=None, **kwargs) -> None:
    """On RabbitMQ, declare the task queues before the worker consumes: queues or
    exchanges of these names made otherwise (BROKER_QUEUE_TYPE=quorum over classic
    ones) stop the worker with what to do, where Celery's own start said only
    "Unrecoverable error: PreconditionFailed(406, …)" (a review's finding)."""
    from django.conf import settings

    from work.brokers import AMQP, refusal

    if settings.BROKER_KIND != AMQP:
        return
    with app.connection_for_write() as connection:
        try:
            connection.ensure_connection(max_retries=0)
            channel = connection.default_channel
            # The queues this worker consumes (-Q, -X), as Celery declares them.
            for queue in app.amqp.queues.consume_from.values():
                queue(channel).declare()
        except Exception as exc:
            hint = refusal(exc, queue_type=settings.BROKER_QUEUE_TYPE)
            if hint is None:
                return  # the broker is down: the worker's own start says so, waits and retries
            raise SystemExit(f"worker: {hint}: {exc}") from None
