"""Every process uses the Redis transport with the restart fix (config/redis_transport.py).

The fix itself is proven end to end by tests/system/test_recovery.py, which kills and
restarts Redis while a worker runs tasks: with kombu's own transport under celery 5.7.0
that worker exits ("Unrecoverable error: AttributeError") and the test times out.
"""

from __future__ import annotations

from kombu.transport import pyamqp

from config.celery import app
from config.redis_transport import Transport


def test_redis_urls_resolve_to_the_fixed_transport():
    # The URL given: the RabbitMQ run's broker is amqp:// (nothing is connected here).
    with app.connection_for_write("redis://127.0.0.1:6379/0") as conn:
        assert isinstance(conn.transport, Transport)
        assert conn.as_uri().startswith("redis://")


def test_amqp_urls_keep_kombus_transport():
    with app.connection_for_write("amqp://guest:guest@127.0.0.1:5672//") as conn:
        assert isinstance(conn.transport, pyamqp.Transport)
        assert not isinstance(conn.transport, Transport)
