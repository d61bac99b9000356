"""Redis or RabbitMQ: what differs between the two brokers, as pure functions.

config/settings.py picks the transport options and the limits of the broker that
CELERY_BROKER_URL names; everything else (acks_late, reject_on_worker_lost, the DB
lease, the catch-up) is the same on both. Tested without a broker in
tests/unit/test_brokers.py.

- **Redis** redelivers a message that was not acked within the visibility timeout,
  even while it is still running or waiting for its ETA (kombu#337, celery#5935); the
  timeouts are redis-py socket options (it waits forever without them).
- **RabbitMQ** (amqp://, py-amqp) returns unacked messages as soon as the channel that
  holds them closes (a killed worker, a lost connection), and closes a channel that
  holds one delivery longer than its `consumer_timeout` (30 min by default): a worker
  holding an ETA message that long would lose its connection. So every hold (the lease,
  the longest retry countdown, the ETA horizon) stays below it, as on Redis below the
  visibility timeout. With quorum queues (BROKER_QUEUE_TYPE=quorum), Celery ≥ 5.5 sends
  ETA and countdown messages through RabbitMQ's delayed-delivery exchanges instead
  ("native delayed delivery"): the broker holds them, not a worker, and only the
  running task's delivery remains (below the lease).
  py-amqp's options are `connect_timeout` (TCP connect and the AMQP handshake),
  `read_timeout`/`write_timeout` (SO_RCVTIMEO/SO_SNDTIMEO) and `confirm_publish` (each
  publish waits for the broker's ack, so a message the broker refused or never took
  raises instead of vanishing): kombu/transport/pyamqp.py, amqp/connection.py.
"""

from __future__ import annotations

from urllib.parse import urlsplit

REDIS = "redis"
AMQP = "amqp"
SCHEMES = {"redis": REDIS, "rediss": REDIS, "amqp": AMQP, "amqps": AMQP, "pyamqp": AMQP}
QUEUE_TYPES = ("classic", "quorum")
# RabbitMQ's default consumer_timeout (rabbitmq.conf `consumer_timeout`, milliseconds
# there); a server configured otherwise is described by RABBITMQ_CONSUMER_TIMEOUT.
RABBITMQ_DEFAULT_CONSUMER_TIMEOUT = 1800


class BrokerUrlError(ValueError):
    """CELERY_BROKER_URL names a broker blogpublish does not run on."""


def broker_kind(url: str) -> str:
    """REDIS or AMQP, from the URL's scheme; BrokerUrlError for anything else (a typo
    must not start a worker on kombu's in-memory transport), and for a port or a Redis
    database number that cannot be one (`:99999`, `/abc`: the worker died with a
    traceback or retried for ever, and each save logged one; a review's finding). These
    messages do not repeat the URL, which may hold a password. A failover list (`;`
    between URLs, kombu's) is checked URL by URL, all of one kind."""
    kinds = {_kind_of(one.strip()) for one in url.split(";") if one.strip()} or {_kind_of(url)}
    if len(kinds) > 1:
        raise BrokerUrlError("CELERY_BROKER_URL's failover list mixes Redis and RabbitMQ.")
    return kinds.pop()


def _kind_of(url: str) -> str:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise BrokerUrlError(
            f"CELERY_BROKER_URL={url!r}: use redis://, rediss://, amqp:// or amqps:// "
            "(Redis or RabbitMQ; docs/operations.md, “Brokers”)."
        )
    try:
        port = parts.port
    except ValueError:  # not a number, or above 65535
        port = 0
    if port == 0:
        raise BrokerUrlError(
            "CELERY_BROKER_URL's port is not a number from 1 to 65535 "
            "(e.g. redis://127.0.0.1:6379/0), or leave it out for the default."
        )
    kind = SCHEMES[scheme]
    if kind == REDIS:
        _check_redis_database(parts.path)
    return kind


def _check_redis_database(path: str) -> None:
    """Redis' database is the path's number (none: 0), as kombu reads it. A number past
    the server's `databases` (16 unless redis.conf says otherwise) cannot be known
    without the server: the worker names it when it connects."""
    number = path.removeprefix("/")
    if number and not (number.isascii() and number.isdigit()):
        raise BrokerUrlError(
            f"CELERY_BROKER_URL's path {path!r} is not a Redis database number "
            "(e.g. redis://127.0.0.1:6379/0)."
        )


def worker_transport_options(kind: str, *, visibility_timeout: float) -> dict:
    """CELERY_BROKER_TRANSPORT_OPTIONS: the workers', Beat's and Flower's connections."""
    if kind == AMQP:
        # Retries and the catch-up's sends from a worker are confirmed too: a message
        # the broker did not take is an error, not a silent loss. The connection's
        # connect/handshake timeout is broker_connection_timeout (Celery's default, 4 s);
        # a broker that stops answering is noticed by the AMQP heartbeat
        # (broker_heartbeat, 120 s by default) or by the connection closing.
        return {"confirm_publish": True}
    return {
        "visibility_timeout": visibility_timeout,
        # Workers, Beat and Flower notice a broker that stopped answering within seconds
        # (without them redis-py waits forever), yet a momentary stall of Redis (a fork
        # to save, a busy host) is not taken for a lost connection, which would cancel
        # the running tasks. Saves use shorter ones (dispatch_transport_options).
        "socket_connect_timeout": 5,
        "socket_timeout": 10,
        "socket_keepalive": True,
    }


def dispatch_transport_options(kind: str) -> dict:
    """The options of the connections that saves, admin actions and the catch-up send
    on (publishing/dispatch.py): with one retry, a broker that is down, or accepts and
    never answers, costs a send about a second (two for one whose open connection never
    confirms: RabbitMQ on a memory alarm)."""
    if kind == AMQP:
        # connect_timeout covers the TCP connect and the handshake (several round
        # trips); read_timeout bounds the wait for the publish confirm.
        return {
            "connect_timeout": 0.5,
            "read_timeout": 0.5,
            "write_timeout": 0.5,
            "confirm_publish": True,
        }
    return {"socket_connect_timeout": 0.5, "socket_timeout": 0.5}


def broker_hold_limit(
    kind: str, *, visibility_timeout: float, consumer_timeout: float
) -> tuple[str, float]:
    """(what it is called, seconds): how long a message may wait unacked in a worker
    (a running task, an ETA, a retry countdown) before the broker acts on it."""
    if kind == AMQP:
        return "RabbitMQ's consumer_timeout (RABBITMQ_CONSUMER_TIMEOUT)", consumer_timeout
    return "the broker's visibility timeout", visibility_timeout


def queue_type_problems(*, kind: str, queue_type: str) -> list[str]:
    if queue_type not in QUEUE_TYPES:
        return [f"BROKER_QUEUE_TYPE={queue_type!r}: use classic or quorum."]
    if queue_type == "quorum" and kind != AMQP:
        return [
            "BROKER_QUEUE_TYPE=quorum needs RabbitMQ (CELERY_BROKER_URL=amqp://…); "
            "Redis has one kind of queue."
        ]
    return []


def refusal(exc: BaseException, *, queue_type: str) -> str | None:
    """What to do about a broker that answered and refused (RabbitMQ's channel errors:
    the reply code and text py-amqp puts on the exception), or None when `exc` is no
    such refusal (a broker down, a timeout). A broker that refuses is reachable: saying
    "unreachable" sent operators after the network (a review's finding)."""
    code = getattr(exc, "reply_code", None)
    text = str(getattr(exc, "reply_text", "") or "")
    if code == 406 and "inequivalent arg" in text:
        other = "classic" if queue_type == "quorum" else "quorum"
        return (
            f"the broker holds queues or exchanges of these names declared otherwise "
            f"(BROKER_QUEUE_TYPE={queue_type}, and they were made {other} or by another "
            f"release): drain them and move to a new vhost (or delete them), and start "
            f"every process with the same BROKER_QUEUE_TYPE (docs/operations.md, "
            f'"Brokers")'
        )
    if code == 403 and "login" in text.lower():
        return "the broker refused the login: check the user and password in CELERY_BROKER_URL"
    if code in (403, 530):  # a declare refused; a vhost the user may not open
        return "the broker refused access: give the user permissions on the vhost"
    if code == 404:
        return "the broker has no such vhost, queue or exchange"
    if isinstance(code, int) and code >= 400:
        return f"the broker refused it ({code})"
    return None
