"""Redis or RabbitMQ: the broker-specific settings (work/brokers.py), and start-up
refusing a broker URL or queue type that cannot work."""

from __future__ import annotations

import os
import subprocess
import sys

import amqp.exceptions
import pytest

from config.checks import publishing_settings_problems
from config.queues import celery_queues
from publishing.dispatch import eta_horizon
from tests.support.processes import ROOT
from tests.unit.test_settings_checks import GOOD
from work import brokers


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("redis://127.0.0.1:6379/0", brokers.REDIS),
        ("rediss://cache.example.com:6380/1", brokers.REDIS),
        ("amqp://guest:guest@127.0.0.1:5672//", brokers.AMQP),
        ("AMQPS://user:pw@mq.example.com/blog", brokers.AMQP),
        ("pyamqp://127.0.0.1//", brokers.AMQP),
    ],
)
def test_broker_kind_from_the_url(url, kind):
    assert brokers.broker_kind(url) == kind


@pytest.mark.parametrize(
    "url",
    [
        "memory://",  # kombu's in-process transport: a worker would never see a save
        "127.0.0.1:6379",  # no scheme
        "rabbitmq://127.0.0.1",  # a plausible typo
        "",
    ],
)
def test_a_broker_url_blogpublish_cannot_run_on_is_refused(url):
    with pytest.raises(brokers.BrokerUrlError, match="redis://, rediss://, amqp://"):
        brokers.broker_kind(url)


@pytest.mark.parametrize(
    "url",
    [
        "redis://127.0.0.1:6379",  # no database: kombu's 0
        "redis://127.0.0.1/",
        "redis://:pw@127.0.0.1:6379/15",
        "redis://127.0.0.1:6379/16",  # past a default server's 16: only the server can say
        "amqp://guest:guest@127.0.0.1//",
        "redis://a:6379/0;redis://b:6379/0",  # kombu's failover list, URL by URL
    ],
)
def test_a_port_and_database_number_that_parse_are_accepted(url):
    assert brokers.broker_kind(url) in (brokers.REDIS, brokers.AMQP)


@pytest.mark.parametrize(
    ("url", "named"),
    [
        # the worker died with a traceback or retried for ever (a review's finding)
        ("redis://127.0.0.1:99999/0", "CELERY_BROKER_URL's port is not a number"),
        ("redis://127.0.0.1:0/0", "CELERY_BROKER_URL's port is not a number"),
        ("amqp://u:secret@127.0.0.1:port//", "CELERY_BROKER_URL's port is not a number"),
        ("redis://127.0.0.1:6379/abc", "CELERY_BROKER_URL's path '/abc' is not a Redis"),
        ("redis://127.0.0.1:6379/-1", "CELERY_BROKER_URL's path '/-1' is not a Redis"),
        ("rediss://127.0.0.1:6379/²", "CELERY_BROKER_URL's path '/²' is not a Redis"),
        ("redis://a:6379/0;redis://b:99999/0", "CELERY_BROKER_URL's port is not a number"),
        ("redis://a:6379/0;amqp://b//", "failover list mixes Redis and RabbitMQ"),
    ],
)
def test_a_port_or_redis_database_that_cannot_be_one_is_refused(url, named):
    with pytest.raises(brokers.BrokerUrlError) as refused:
        brokers.broker_kind(url)

    assert named in str(refused.value) and "secret" not in str(refused.value)


def test_amqp_sends_are_confirmed_and_bounded():
    options = brokers.dispatch_transport_options(brokers.AMQP)
    assert options["confirm_publish"] is True
    # connect + handshake, then the confirm: about a second in all for a silent broker
    assert options["connect_timeout"] + options["read_timeout"] <= 2
    assert brokers.worker_transport_options(brokers.AMQP, visibility_timeout=3600) == {
        "confirm_publish": True
    }


def test_redis_keeps_its_visibility_timeout_and_socket_timeouts():
    options = brokers.worker_transport_options(brokers.REDIS, visibility_timeout=3600)
    assert options["visibility_timeout"] == 3600
    assert options["socket_timeout"] > 0
    assert brokers.dispatch_transport_options(brokers.REDIS)["socket_timeout"] <= 1


def rabbitmq_limit(seconds: float) -> tuple[str, float]:
    return brokers.broker_hold_limit(
        brokers.AMQP, visibility_timeout=3600, consumer_timeout=seconds
    )


def test_on_rabbitmq_an_eta_horizon_past_the_consumer_timeout_is_refused():
    # PUBLISH_CATCHUP_INTERVAL=1000 makes an ETA horizon of 2000 s: a worker holding
    # such a message would lose its channel at RabbitMQ's 1800 s consumer_timeout.
    problems = publishing_settings_problems(
        **GOOD
        | {"catchup_interval": 1000, "eta_horizon": 2000, "stuck_after": 3000}
        | {"broker_hold_limit": rabbitmq_limit(1800)}
    )
    assert any("ETA horizon" in p and "consumer_timeout" in p for p in problems), problems


def test_the_eta_horizon_follows_the_catch_up_interval_it_is_read_from(settings):
    # Read when used: a test (or process) that changes the interval need not restate it.
    settings.PUBLISH_CATCHUP_INTERVAL = 7

    assert eta_horizon() == 14


def test_with_quorum_queues_the_broker_holds_etas_so_only_the_lease_counts():
    limit = {"broker_hold_limit": rabbitmq_limit(1800), "delayed_by_broker": True}
    long_etas = {"catchup_interval": 1000, "eta_horizon": 2000, "stuck_after": 3000}
    assert publishing_settings_problems(**GOOD | long_etas | limit) == []
    long_lease = {"lease": 2000, "time_limit": 1800, "soft_time_limit": 1600}
    problems = publishing_settings_problems(**GOOD | long_lease | limit)
    assert any("PUBLISH_LEASE_SECONDS" in p for p in problems), problems


@pytest.mark.parametrize(
    ("kind", "queue_type", "named"),
    [
        (brokers.REDIS, "quorum", "needs RabbitMQ"),
        (brokers.AMQP, "stream", "use classic or quorum"),
    ],
)
def test_a_queue_type_that_cannot_work_is_named(kind, queue_type, named):
    problems = brokers.queue_type_problems(kind=kind, queue_type=queue_type)
    assert any(named in p for p in problems), problems


def test_quorum_queues_are_declared_quorum_on_topic_exchanges():
    _, queues = celery_queues("blog", "quorum")
    assert [q.name for q in queues] == ["blog", "blog.catch-up", "blog.rerender", "blog.webhooks"]
    for queue in queues:
        assert queue.queue_arguments == {"x-queue-type": "quorum"}
        # native delayed delivery routes through topic exchanges only
        assert queue.exchange.type == "topic"
    _, classic = celery_queues("blog")
    assert all(not q.queue_arguments for q in classic)


@pytest.mark.parametrize(
    ("exc", "named"),
    [
        # What py-amqp raises for a quorum declare over a classic exchange (RabbitMQ 3.10).
        (
            amqp.exceptions.PreconditionFailed(
                "PRECONDITION_FAILED - inequivalent arg 'type' for exchange 'blogpublish' "
                "in vhost 'v': received 'topic' but current is 'direct'",
                (40, 10),
            ),
            "BROKER_QUEUE_TYPE=quorum, and they were made classic",
        ),
        (
            amqp.exceptions.AccessRefused("ACCESS_REFUSED - access to queue 'q' refused", (50, 10)),
            "permissions on the vhost",
        ),
        (
            amqp.exceptions.AccessRefused(
                "ACCESS_REFUSED - Login was refused using authentication mechanism AMQPLAIN",
                (10, 11),
            ),
            "check the user and password",
        ),
        (
            amqp.exceptions.NotAllowed("NOT_ALLOWED - vhost v not found or no access", (10, 40)),
            "permissions on the vhost",
        ),
        (amqp.exceptions.NotFound("NOT_FOUND - no queue", (50, 10)), "no such vhost"),
    ],
)
def test_a_broker_that_refuses_is_told_apart_from_one_that_is_down(exc, named):
    hint = brokers.refusal(exc, queue_type="quorum")
    assert hint is not None and named in hint, hint
    assert "unreachable" not in hint
    # A broker down or a timeout is no refusal: dispatch says "unreachable" for those.
    for down in (ConnectionRefusedError(111, "refused"), TimeoutError(), OSError("reset")):
        assert brokers.refusal(down, queue_type="quorum") is None


def start(env: dict[str, str]) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PUBLISH_", "CELERY_"))}
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env={**base, "DJANGO_SETTINGS_MODULE": "config.settings", "DEBUG": "1", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"CELERY_BROKER_URL": "memory://"}, "CELERY_BROKER_URL='memory://'"),
        ({"CELERY_BROKER_URL": "redis://127.0.0.1:6379/abc"}, "path '/abc' is not a Redis"),
        ({"CELERY_BROKER_URL": "redis://127.0.0.1:99999/0"}, "port is not a number"),
        ({"BROKER_QUEUE_TYPE": "quorum"}, "BROKER_QUEUE_TYPE=quorum needs RabbitMQ"),
        (
            {"CELERY_BROKER_URL": "amqp://127.0.0.1//", "PUBLISH_CATCHUP_INTERVAL": "1000"},
            "consumer_timeout",
        ),
    ],
)
def test_start_up_refuses_a_broker_setting_that_cannot_work(env, named):
    result = start(env)
    assert result.returncode != 0
    assert named in result.stderr


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"DIGEST_LEASE_SECONDS": "5000"}, "DIGEST_LEASE_SECONDS = 5000.0s must stay below"),
        (
            {"CELERY_BROKER_URL": "amqp://127.0.0.1//", "DIGEST_LEASE_SECONDS": "2500"},
            "DIGEST_LEASE_SECONDS = 2500.0s must stay below RabbitMQ's consumer_timeout",
        ),
        ({"MIGRATION_LOCK_TIMEOUT": "3000000"}, "MIGRATION_LOCK_TIMEOUT=3000000 is above"),
        ({"PUBLISH_CATCHUP_INTERVAL": "0.01"}, "PUBLISH_CATCHUP_INTERVAL=0.01 is below"),
        (
            {"ALLOWED_HOSTS": "https://blog.example.com"},
            "host names only, without a scheme, a port",
        ),
        ({"ALLOWED_HOSTS": "blog.example.com/"}, "'blog.example.com/'"),
        ({"ALLOWED_HOSTS": "[::1],blog.example.com:8000"}, "'blog.example.com:8000'"),
    ],
)
def test_start_up_refuses_other_settings_that_cannot_work(env, named):
    """A review's findings: each started, then failed later or never said why."""
    result = start(env)
    assert result.returncode != 0
    assert named in result.stderr, result.stderr[-2000:]


def test_start_up_on_rabbitmq_with_quorum_queues_is_accepted():
    result = start({"CELERY_BROKER_URL": "amqp://127.0.0.1//", "BROKER_QUEUE_TYPE": "quorum"})
    assert result.returncode == 0, result.stderr
