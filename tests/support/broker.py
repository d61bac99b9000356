"""Pointing this test process's Celery app at another broker (a private redis-server,
or a port where nothing listens), as a restart with another CELERY_BROKER_URL would."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from kombu import pools

from config.celery import app
from publishing import dispatch
from work import brokers


def switch_broker(url: str) -> None:
    """Point this process's Celery app at another broker (what a restart would do)."""
    # The read and write URLs are derived from broker_url when the app is configured.
    app.conf.broker_url = app.conf.broker_write_url = app.conf.broker_read_url = url
    # The workers' transport options of that broker (Redis' socket timeouts, RabbitMQ's
    # confirms), as config/settings.py would derive them from the URL.
    app.conf.broker_transport_options = brokers.worker_transport_options(
        brokers.broker_kind(url), visibility_timeout=settings.BROKER_VISIBILITY_TIMEOUT
    )
    # Close and forget every pooled connection (kombu keeps a registry per URL), so the
    # next send opens a connection to this broker, and a later switch back a fresh one.
    pools.reset()
    app._pool = None
    if "amqp" in app.__dict__:
        app.amqp._producer_pool = None
    # The dispatch's own pool, and its breaker: a restarted process starts closed.
    dispatch.reset()


@contextmanager
def broker(url: str) -> Iterator[None]:
    previous = app.conf.broker_url
    previous_options = app.conf.broker_transport_options
    switch_broker(url)
    try:
        yield
    finally:
        switch_broker(previous)
        app.conf.broker_transport_options = previous_options
