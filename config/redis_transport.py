"""kombu's Redis transport, with one fix that keeps workers alive when Redis restarts.

Celery 5.7.0's consumer, on losing the broker, first `collect()`s the connection and
then `close()`s it. With Redis gone, collect's attempt to close the channel fails early
(reading the BRPOP in flight), leaving the channel open, and detaches the transport
(`transport.client = None`). The later close gets further: it restores the unacked
messages, which needs the transport's client to build a Redis connection, and fails
with AttributeError. That is not a connection error, so it escapes `ignore_errors` and
the worker exits with "Unrecoverable error" (seen here whenever Redis was killed while a
task ran; celery 5.6 did not close after collect).

Here that case raises a connection error instead, which the close ignores as it should:
Redis is unreachable at that moment anyway. The messages stay in Redis' unacked set
until the visibility timeout; the article rows they were for keep their leases, and the
catch-up publishes them within seconds of the leases running out.
"""

from __future__ import annotations

from kombu.transport import redis as kombu_redis
from redis.exceptions import ConnectionError as RedisConnectionError


class Channel(kombu_redis.Channel):
    def _connparams(self, asynchronous: bool = False) -> dict:
        if self.connection is None or self.connection.client is None:
            raise RedisConnectionError("the broker connection was already collected")
        # kombu-stubs leave out this private method (kombu/transport/redis.py has it).
        return super()._connparams(asynchronous)  # type: ignore[misc]


class Transport(kombu_redis.Transport):
    Channel = Channel


def install() -> None:
    """Make redis:// and rediss:// URLs use this transport, in every process that loads
    the Celery app (worker, beat, Flower, web). The URL scheme stays `redis`, so tools
    that look at it (Flower's broker page) still recognise the broker."""
    from kombu.transport import TRANSPORT_ALIASES

    TRANSPORT_ALIASES["redis"] = TRANSPORT_ALIASES["rediss"] = f"{__name__}:Transport"
