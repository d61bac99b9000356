"""Handing work to the broker, best effort.

A dispatch only speeds things up: the pending row is the work, so a broker that is down
costs a log line, never a failed save.

- **Pooled.** Each process (web, admin, Beat's catch-up, a worker sending again) keeps
  a pool of producers on connections of its own with short timeouts (`send_options`:
  socket timeouts on Redis; connect/read/write timeouts and publisher confirms on
  RabbitMQ), reused from save to save; the workers'
  consumers keep their longer ones (CELERY_BROKER_TRANSPORT_OPTIONS). A pool made
  before a fork is never used after it: the child makes its own.
- **Bounded.** The timeouts and the publish retry policy (config/settings.py) bound what
  one send to a broker that is down, or silent, costs: about a second.
- **Breaker.** After a send fails, this process skips the broker for
  PUBLISH_DISPATCH_BREAKER_SECONDS (logged once; the rows stay pending for the
  catch-up), then tries again. So a burst of saves, an admin action over many rows or
  a bulk delete costs one timeout in all, not one per row. The catch-up, which runs
  once an interval, tries past it (`past_breaker`).
- **By name.** Tasks are sent by name (`app.send_task`, routed by CELERY_TASK_ROUTES as
  `apply_async` would be), so this module does not import the tasks, which import the
  services, which import this module: imports run one way. Where the task module is
  not loaded, the message carries no time limits and no ignore_result; the worker then
  applies the task's own.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from datetime import datetime

from django.conf import settings
from django.utils import timezone
from kombu import Producer
from kombu.exceptions import OperationalError
from kombu.pools import ProducerPool

from publishing import logcontext
from publishing.breaker import Breaker
from publishing.exceptions import TIME_LIMITS
from work.brokers import broker_kind, dispatch_transport_options, refusal
from work.celery_app import celery_app

logger = logging.getLogger(__name__)

PUBLISH_TASK = "publishing.tasks.publish_article"
UNPUBLISH_TASK = "publishing.tasks.unpublish_article"
REFRESH_TASK = "publishing.tasks.refresh_site"
RERENDER_TASK = "publishing.tasks.rerender_site"
BATCH_TASK = "publishing.tasks.publish_batch"
DELIVER_TASK = "publishing.tasks.deliver_webhook"


def send_options() -> dict:
    """The transport options of the sending connections, for the broker this process
    is configured with (read when used: a process pointed at another broker gets its)."""
    conf = celery_app().conf
    return dispatch_transport_options(broker_kind(conf.broker_write_url or conf.broker_url))


class _Dispatcher:
    """This process's producers and breaker (made again after a fork)."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.breaker = Breaker()
        self._pool: ProducerPool | None = None
        self._lock = threading.Lock()
        template = celery_app().connection_for_write()
        # What a broker that is down or silent raises (Celery wraps most of them in
        # kombu's OperationalError); anything else is a bug and does not open the breaker.
        self.broker_errors: tuple[type[BaseException], ...] = (
            OperationalError,
            OSError,
            *template.connection_errors,
            *template.channel_errors,
        )

    def producers(self) -> ProducerPool:
        with self._lock:
            if self._pool is None:
                app = celery_app()
                connection = app.connection_for_write(transport_options=send_options())
                limit = app.conf.broker_pool_limit
                self._pool = ProducerPool(
                    connection.Pool(limit=limit), limit=limit, Producer=app.amqp.Producer
                )
            return self._pool

    def discard_pool(self) -> None:
        """Drop the connections (after a failure: the next try starts afresh)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            for resources in (pool, pool.connections):
                with contextlib.suppress(Exception):  # closing to a dead broker may fail
                    # kombu-stubs leave out ProducerPool's base class, kombu.resource.Resource.
                    resources.force_close_all()  # type: ignore[union-attr]

    @contextlib.contextmanager
    def producer(self, connection=None) -> Iterator[Producer]:
        if connection is not None:  # the caller's own connection
            yield celery_app().amqp.Producer(connection, auto_declare=False)
            return
        timeout = celery_app().conf.broker_pool_acquire_timeout
        with self.producers().acquire(block=True, timeout=timeout) as producer:
            yield producer


_current: _Dispatcher | None = None
_current_lock = threading.Lock()


def _after_fork_in_child() -> None:
    # The parent's sockets are the parent's: leave them alone, and a lock another thread
    # held at the fork would never be released here.
    global _current, _current_lock
    _current, _current_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _dispatcher() -> _Dispatcher:
    """This process's dispatcher. A child of a fork (Celery's prefork pool, gunicorn)
    makes its own (the pid check also covers a fork that ran no at-fork hooks)."""
    global _current
    current = _current
    if current is None or current.pid != os.getpid():
        with _current_lock:
            if _current is None or _current.pid != os.getpid():
                _current = _Dispatcher()
            current = _current
    return current


def reset() -> None:
    """Close this process's connections and its breaker (a process pointed at another
    broker, or a test)."""
    global _current
    with _current_lock:
        current, _current = _current, None
    if current is not None and current.pid == os.getpid():
        current.discard_pool()


def breaker_is_open() -> bool:
    """Whether this process skips the broker right now (after a failed send)."""
    return _dispatcher().breaker.is_open


# (task name, args, eta)
Message = tuple[str, tuple, datetime | None]


def send_batch(
    messages: list[Message],
    *,
    connection=None,
    past_breaker: bool = False,
    task_ids: Sequence[str] = (),
) -> int:
    """Send `messages` in order on one pooled connection (or on `connection`), unless
    the breaker is open (`past_breaker`: try anyway, and close or re-open it). Returns
    how many were sent: all, or those before the first failure (the broker is then down
    for the rest too), which is logged and opens the breaker. Never raises: what was
    not sent stays pending for the catch-up (a time limit that comes meanwhile is let
    through). `task_ids`: the first messages' task ids
    (the others get new ones, as Celery makes them; so does an empty one)."""
    if not messages:
        return 0
    dispatcher = _dispatcher()
    if not dispatcher.breaker.allow() and not past_breaker:
        logger.debug("dispatch: broker skipped (breaker open), %d message(s)", len(messages))
        return 0
    sent = 0
    try:
        with dispatcher.producer(connection) as producer:
            headers = _request_headers()
            for number, (name, args, eta) in enumerate(messages):
                celery_app().send_task(
                    name,
                    args,
                    task_id=(task_ids[number] if number < len(task_ids) else "") or None,
                    eta=eta,
                    producer=producer,
                    headers=headers,
                    argsrepr=_argsrepr(name, args),
                )
                sent += 1
    except TIME_LIMITS:
        # The task's own time running out, not the broker's failure: the caller's to
        # handle (services.publish.send_next sends again in the time left).
        raise
    except Exception as exc:
        unsent = messages[sent:] or messages[-1:]  # or it failed after the last send
        if not isinstance(exc, dispatcher.broker_errors):
            logger.exception("dispatch: sending %s failed", _describe(unsent, exc)[0])
            return sent
        dispatcher.discard_pool()
        refused = refusal(exc, queue_type=settings.BROKER_QUEUE_TYPE)
        if refused:
            # The broker answered: no outage for the breaker to skip (a refused exchange
            # would have held back this process's other sends).
            what, kind, error, then = _describe(unsent, exc)
            logger.error("%s: %s (%s: %s); %s", what, refused, kind, error, then)
            return sent
        seconds = settings.PUBLISH_DISPATCH_BREAKER_SECONDS
        opened = dispatcher.breaker.failed(seconds)
        logger.warning(
            "%s: the broker is unreachable (%s: %s); %s",
            *_describe(unsent, exc),
        )
        if opened and seconds > 0:
            logger.warning(
                "dispatch: this process skips the broker for %ss; what it would send "
                "stays pending for the catch-up (or `manage.py publish_pending`)",
                seconds,
            )
        return sent
    skipped = dispatcher.breaker.succeeded()
    if skipped:
        logger.info(
            "dispatch: the broker answers again; %d dispatch(es) skipped meanwhile are "
            "left to the catch-up",
            skipped,
        )
    return sent


def _request_headers() -> dict | None:
    """The web request's id, when a request sends: the worker puts it on its log lines
    (config/celery.py), so one grep follows a save to its publish."""
    request_id = logcontext.current().get("request_id")
    return {"request_id": request_id} if request_id else None


def _argsrepr(name: str, args: tuple) -> str | None:
    """What Flower and the worker's log show for the arguments: the article's id, named
    (an unpublish carries the deleted article's snapshot, which says little at a glance)."""
    if name == PUBLISH_TASK:
        return f"(article_id={args[0]})"
    if name == DELIVER_TASK:
        return f"(delivery_id={args[0]})"
    if name == UNPUBLISH_TASK and args and isinstance(args[0], dict):
        return f"(article_id={args[0].get('id')}, slug={args[0].get('slug')!r})"
    return None


def _describe(messages: list[Message], exc: Exception) -> tuple[str, str, Exception, str]:
    """(what was not sent, the error's type, the error, what happens to it instead)"""
    name, args, _ = messages[0]
    more = f" and {len(messages) - 1} more" if len(messages) > 1 else ""
    if name == UNPUBLISH_TASK:
        what = f"article {args[0].get('id')} deleted{more}"
        then = "the catch-up will take it off the site"
    elif name == BATCH_TASK:
        what = f"a batch of the backlog{more}"
        then = "the rows stay pending and the catch-up will publish them"
    elif name == DELIVER_TASK:
        what = f"webhook delivery {args[0]}{more}"
        then = "it stays pending and the catch-up will send it"
    elif name == RERENDER_TASK:
        what = f"a pass of the site's re-render{more}"
        then = "the catch-up will send it"
    elif name == REFRESH_TASK:
        what = f"the shared views' deferred refresh{more}"
        then = "the next request or the catch-up will run the pass"
    else:
        what = f"article {args[0]}{more}"
        then = "it stays pending and the catch-up or `manage.py publish_pending` will publish it"
    return what, type(exc).__name__, exc, then


def dispatch_publish(
    article_id: int, *, eta: datetime | None = None, connection=None, task_id: str = ""
) -> bool:
    """Send `publish_article` (on `connection` when a caller has one; as `task_id`, a
    save's Article.message_id, when given); False when the broker could not be reached
    or was skipped (the row stays pending)."""
    message = (PUBLISH_TASK, (article_id,), eta)
    return send_batch([message], connection=connection, task_ids=[task_id]) == 1


def dispatch_many(
    batch: Sequence[tuple[int, datetime | None]], *, past_breaker: bool = False
) -> list[int]:
    """Send `publish_article` for each (id, eta) on one connection, in order; stop at
    the first failure. Returns the ids sent."""
    messages = [(PUBLISH_TASK, (article_id,), eta) for article_id, eta in batch]
    sent = send_batch(messages, past_breaker=past_breaker)
    return [article_id for article_id, _ in batch[:sent]]


def eta_horizon() -> float:
    """A save (or the catch-up) arms a scheduled article with an ETA once it is due
    within this many seconds: two catch-up intervals, so one missed run loses nothing.
    Read when used, so whatever changes PUBLISH_CATCHUP_INTERVAL (a test's settings)
    moves it too; config/settings.py checks it against the broker's hold limit."""
    return 2 * settings.PUBLISH_CATCHUP_INTERVAL


def dispatch_when_due(*, article_id: int, publish_at: datetime, task_id: str = "") -> bool:
    """Send now if due; with an ETA if due before the catch-up runs again; else leave it
    to the catch-up, which arms it when its time comes near. `task_id`: the save's
    Article.message_id."""
    delay = (publish_at - timezone.now()).total_seconds()
    if delay <= 0:
        return dispatch_publish(article_id, task_id=task_id)
    if delay <= eta_horizon():
        return dispatch_publish(article_id, eta=publish_at, task_id=task_id)
    logger.info("article %s is scheduled for %s; the catch-up will arm it", article_id, publish_at)
    return False


def dispatch_unpublish(snapshot: dict) -> bool:
    """Take a deleted article off the site; if the broker is down, the catch-up's
    reconcile removes it instead."""
    return send_batch([(UNPUBLISH_TASK, (snapshot,), None)]) == 1


def dispatch_refresh(*, eta: datetime, after: int | None = None) -> bool:
    """Send the deferred pass of the shared views' refresher (publishing.services.refresh),
    or with `after` the watchdog of that pass; if the broker is down, the next request
    or the catch-up's pass does it instead."""
    return send_batch([(REFRESH_TASK, () if after is None else (after,), eta)]) == 1


def dispatch_rerender() -> bool:
    """Send a pass of the site's re-render (publishing.services.rerender), on its own
    low-priority queue; if the broker is down, the catch-up sends it later."""
    return send_batch([(RERENDER_TASK, (), None)]) == 1


def dispatch_batches(
    count: int | None = None, *, eta: datetime | None = None, past_breaker: bool = False
) -> int:
    """Send `count` (PUBLISH_BATCH_TASKS) `publish_batch` messages: enough to keep every
    worker process busy on a backlog; each sends itself again while rows remain due,
    and those that find nothing due stop. Returns how many were sent."""
    count = settings.PUBLISH_BATCH_TASKS if count is None else count
    return send_batch([(BATCH_TASK, (), eta)] * count, past_breaker=past_breaker)


def dispatch_deliveries(
    ids: list[int], *, eta: datetime | None = None, past_breaker: bool = False
) -> list[int]:
    """Send `deliver_webhook` for each webhook delivery in `ids`, in order, on one
    connection; stop at the first failure. Returns the ids sent (the others stay pending
    for the catch-up)."""
    sent = send_batch([(DELIVER_TASK, (pk,), eta) for pk in ids], past_breaker=past_breaker)
    return ids[:sent]


DISCARD_COMMAND = "publish_discard"


def discard_messages(task_ids: Sequence[str]) -> bool:
    """Tell every worker to drop these publish messages unrun when they come (the
    saves' messages of rows a group has published besides its own: their work is
    done). One broadcast on the workers' control exchange, Celery's
    own `revoke` without its per-id result-backend lookups and log line
    (publishing.tasks, `publish_discard`). Sent as a task's message is, with its few
    quick retries, and skipped while the breaker is open: a message not dropped ends
    after one claim, as before. Never raises. True when sent."""
    ids = [task_id for task_id in task_ids if task_id]
    if not ids:
        return False
    dispatcher = _dispatcher()
    if dispatcher.breaker.is_open:  # asked, not allow(): a hint never takes the trial
        return False
    try:
        with dispatcher.producer() as producer:
            # (Control.mailbox is set in its __init__; celery-types leave it out.)
            control = celery_app().control
            mailbox = control.mailbox(producer.connection)  # type: ignore[attr-defined]
            # kombu.pidbox.Mailbox._publish's message, published with the retries of
            # a task's message (Mailbox's own wait for the broker as long as it takes).
            producer.publish(
                {
                    "method": DISCARD_COMMAND,
                    "arguments": {"task_ids": ids},
                    "destination": None,
                    "pattern": None,
                    "matcher": None,
                },
                exchange=mailbox.exchange.name,
                declare=[mailbox.exchange],
                headers={"clock": mailbox.clock.forward(), "expires": 0},
                serializer=mailbox.serializer,
                retry=True,
                retry_policy=celery_app().conf.task_publish_retry_policy,
            )
    except Exception as exc:  # a hint: the messages then run, and end after one claim
        if isinstance(exc, dispatcher.broker_errors):
            dispatcher.discard_pool()
        logger.info("dispatch: could not ask the workers to drop %d message(s): %s", len(ids), exc)
        return False
    return True
