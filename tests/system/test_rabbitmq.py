"""The pipeline on RabbitMQ: the straight line, killed workers, scheduled articles (on
classic and on quorum queues), a broker killed and restarted under load, two Beats.

Run by `scripts/test.sh rabbitmq` (skipped in the other runs, which hold the same
guarantees on Redis in test_recovery.py and test_schedule_and_alarms.py). Every test
talks to a private RabbitMQ node that this module starts on ports of its own
(tests/support/rabbitmq.py), in a vhost of the test's own on that node; the machine's
shared node is never stopped or touched.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from config.celery import app
from publishing import dispatch
from publishing.broker_status import queue_message_counts
from publishing.models import Article, ArticleStatus, AttemptOutcome
from tests.support.broker import broker
from tests.support.chaos import release
from tests.support.processes import ROOT, Proc
from tests.support.rabbitmq import PrivateRabbitMQ, rabbitmq_missing
from tests.support.waiting import wait_for
from tests.system.conftest import SYSTEM_SETTINGS, Processes, record_timing, since
from tests.system.helpers import (
    assert_others_dropped,
    assert_published_once,
    log_count,
    mails,
    save_articles,
    wait_all_published,
)

pytestmark = [
    pytest.mark.system,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        settings.BROKER_KIND != "amqp",
        reason="RabbitMQ system tests run once, in `scripts/test.sh rabbitmq`",
    ),
]


@pytest.fixture(scope="module")
def node() -> Iterator[PrivateRabbitMQ]:
    missing = rabbitmq_missing()
    if missing:
        pytest.skip(missing)
    node = PrivateRabbitMQ.create()
    node.start()
    yield node
    node.remove()


def add_vhosts(node: PrivateRabbitMQ, names: list[str]) -> None:
    """The vhosts, with every permission for guest, in one rabbitmqctl: each call starts
    an Erlang VM, seconds on a loaded machine (add_vhost + set_permissions per vhost
    cost two). They stay until the node, data folder and all, goes with the module."""
    everything = {"configure": ".*", "write": ".*", "read": ".*"}
    definitions = node.base / f"vhosts-{uuid.uuid4().hex[:8]}.json"
    definitions.write_text(
        json.dumps(
            {
                "vhosts": [{"name": name} for name in names],
                "permissions": [{"user": "guest", "vhost": name, **everything} for name in names],
            }
        )
    )
    done = node.ctl("import_definitions", str(definitions))
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def vhosts(node, request) -> list[str]:
    """A fresh vhost for each test of the module that uses one, made up front."""
    wanted = sum(
        1
        for item in request.session.items
        if item.module is request.module and "rabbit" in item.fixturenames
    )
    names = [f"t-{uuid.uuid4().hex[:10]}" for _ in range(wanted)]
    if names:
        add_vhosts(node, names)
    return names


@dataclass(kw_only=True)
class RabbitPipeline(Processes):
    node: PrivateRabbitMQ
    url: str


@pytest.fixture
def rabbit(node, vhosts, transactional_db, settings) -> Iterator[RabbitPipeline]:
    """A vhost of the test's own on the private node, the test process using it, and
    starters for worker and Beat (the system tests' short intervals)."""
    for name, value in SYSTEM_SETTINGS.items():
        setattr(settings, name, value)
    if not node.answers():  # a test before this one killed it and failed
        node.start()
    if not vhosts:  # a test run more than once (pytest's own repeat plugins)
        vhosts.append(f"t-{uuid.uuid4().hex[:10]}")
        add_vhosts(node, vhosts)
    vhost = vhosts.pop()
    url = f"amqp://guest:guest@127.0.0.1:{node.port}/{vhost}"
    env = {"BLOGPUBLISH_TEST_BROKER": url, **{k: str(v) for k, v in SYSTEM_SETTINGS.items()}}
    pipe = RabbitPipeline(node=node, url=url, env=env)
    with broker(url):
        try:
            yield pipe
        finally:
            pipe.stop_all()


def attempt_running(article: Article) -> bool:
    return article.publish_attempts.filter(outcome="").exists()


def pid_of_attempt(slug: str, attempt: int) -> int:
    pid_file = settings.RUN_DIR / "pids" / f"{slug}.{attempt}"
    return int(wait_for(lambda: pid_file.exists() and pid_file.read_text(), what=str(pid_file)))


def outcomes(article: Article) -> list[str]:
    return list(article.publish_attempts.order_by("number").values_list("outcome", flat=True))


def test_straight_line_publishes_each_article_once_and_drains_the_queues(rabbit):
    rabbit.worker()
    rabbit.beat()

    articles = save_articles("rabbit-line", 20)

    wait_all_published(articles, timeout=60)
    assert_published_once(articles)
    wait_for(lambda: not any(queue_message_counts().values()), what="the queues to drain")


def test_a_burst_saved_while_no_worker_runs_drops_the_grouped_rows_messages(rabbit):
    """The discard broadcast goes through RabbitMQ's control exchange too: the rows a
    group claimed besides its own have their messages dropped unrun; each published
    once, the queues drained."""
    articles = save_articles("rabbit-drop", 30)
    worker = rabbit.worker()

    wait_all_published(articles, timeout=60)
    assert_published_once(articles)
    assert_others_dropped(worker.log, articles)
    wait_for(lambda: not any(queue_message_counts().values()), what="the queues to drain")


# A longer lease for the kill tests, so the held attempt is still held (inside its soft
# time limit) when the test, on a busy machine, gets to kill it.
KILL_TEST_ENV = {"PUBLISH_LEASE_SECONDS": "15"}
HOLD = 10  # seconds; below the soft time limit (12 s), never released: killed


def test_pool_child_killed_mid_publish_is_redelivered_and_published_once(rabbit, chaos):
    chaos("rabbit-child-0", hold=HOLD, hold_until_attempt=2)
    worker = rabbit.worker(env=KILL_TEST_ENV)  # no Beat: redelivery alone must do it
    [article] = save_articles("rabbit-child", 1)
    child = pid_of_attempt("rabbit-child-0", 1)
    assert child in worker.children()

    os.kill(child, signal.SIGKILL)
    killed_at = time.monotonic()

    wait_all_published([article], timeout=60)
    record_timing("RabbitMQ: pool child SIGKILLed mid-publish -> published", since(killed_at))
    assert_published_once([article])
    assert outcomes(article) == [AttemptOutcome.RETRY, AttemptOutcome.OK]
    assert worker.alive()


def test_an_attempt_running_when_the_broker_restarts_finishes_and_spends_nothing(rabbit, chaos):
    """The broker killed and back while an attempt runs: the attempt goes on and
    publishes, and the outage spends nothing of the article's budget. (Celery's cancel on
    connection loss SIGTERMed the pool child: its attempt never finished, and each row of
    a group spent one; the message, back after the lease, published it at attempt 2.)"""
    chaos("rabbit-outage-0", hold=HOLD)  # every attempt waits for `release`, or HOLD s
    worker = rabbit.worker(env=KILL_TEST_ENV)  # no Beat: redelivery alone
    [article] = save_articles("rabbit-outage", 1)
    wait_for(lambda: attempt_running(article), what="attempt 1 to be running")

    rabbit.node.kill()
    rabbit.node.start()
    release("rabbit-outage-0")

    wait_all_published([article], timeout=60)
    assert outcomes(article) == [AttemptOutcome.OK]
    assert_published_once([article])
    assert worker.alive()


def test_whole_worker_killed_mid_publish_its_message_returns_at_once(rabbit, chaos):
    # On RabbitMQ the unacked message goes back to the queue the moment the dead
    # worker's connection closes (on Redis it would wait for the visibility timeout, and
    # the catch-up does the work): no Beat here, the broker alone brings it back.
    chaos("rabbit-worker-0", hold=HOLD, hold_until_attempt=2)
    doomed = rabbit.worker(name="doomed", env=KILL_TEST_ENV)
    [article] = save_articles("rabbit-worker", 1)
    wait_for(lambda: attempt_running(article), what="attempt 1 to be running")

    doomed.kill()  # SIGKILL to the whole group: main process and pool children
    killed_at = time.monotonic()
    rabbit.worker(name="successor", env=KILL_TEST_ENV)

    wait_all_published([article], timeout=60)
    record_timing("RabbitMQ: worker SIGKILLed mid-publish -> published", since(killed_at))
    assert_published_once([article])
    assert outcomes(article) == [AttemptOutcome.RETRY, AttemptOutcome.OK]
    assert "never finished" in article.publish_attempts.order_by("number")[0].error


def save_scheduled(rabbit: RabbitPipeline, slug: str, seconds: float, env: dict) -> Article:
    """Saved by a process configured as the worker is (the queue type is read at start)."""
    out = subprocess.run(
        [sys.executable, "-m", "tests.support.save_article", slug, "--publish-in", str(seconds)],
        cwd=ROOT,
        env={**os.environ, **rabbit.env, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return Article.objects.get(pk=json.loads(out.stdout.strip().splitlines()[-1])["id"])


def scheduled_in(worker: Proc) -> int:
    """How many ETA messages the worker holds (`celery inspect scheduled`)."""
    reply = app.control.inspect(destination=[worker.hostname], timeout=2).scheduled() or {}
    return len(reply.get(worker.hostname, []))


def delayed_in_broker() -> int:
    """Messages parked in RabbitMQ's delayed-delivery queues (celery_delayed_0 … 27,
    kombu/transport/native_delayed_delivery.py)."""
    return sum(queue_message_counts(names=[f"celery_delayed_{n}" for n in range(28)]).values())


# The save arms the ETA only when the article is due within the ETA horizon (2 catch-up
# intervals): 20 s here, and the article is due in 8.
SCHEDULE_ENV = {"PUBLISH_CATCHUP_INTERVAL": "10"}


@pytest.mark.parametrize(
    ("queue_type", "in_worker", "in_broker"),
    [
        # Classic queues: the worker holds the ETA message unacked until it is due
        # (consumer_timeout applies, hence the settings check).
        ("classic", 1, 0),
        # Quorum queues: Celery's native delayed delivery parks it in RabbitMQ's delay
        # queues; the worker gets it when it is due.
        ("quorum", 0, 1),
    ],
)
def test_scheduled_article_is_published_at_its_time_not_before(
    rabbit, queue_type, in_worker, in_broker
):
    env = {"BROKER_QUEUE_TYPE": queue_type, **SCHEDULE_ENV}
    worker = rabbit.worker(env=env)  # no Beat: the save itself arms the ETA
    article = save_scheduled(rabbit, f"rabbit-scheduled-{queue_type}", 8, env)
    assert article.is_scheduled

    # Before its time: where does the message wait?
    wait_for(
        lambda: (scheduled_in(worker), delayed_in_broker()) == (in_worker, in_broker),
        timeout=10,
        what=f"the ETA message to wait in the {'worker' if in_worker else 'broker'}",
    )
    assert Article.objects.get(pk=article.pk).status == ArticleStatus.PENDING

    wait_all_published([article], timeout=60)
    article.refresh_from_db()
    record_timing(
        f"RabbitMQ ({queue_type} queues): scheduled article published after publish_at by",
        (article.published_at - article.publish_at).total_seconds(),
    )
    assert article.published_at >= article.publish_at
    assert_published_once([article])


def test_a_worker_on_quorum_queues_over_classic_ones_stops_and_says_what_to_do(rabbit):
    # The vhost's queues made classic, as a release before BROKER_QUEUE_TYPE=quorum did.
    with app.connection_for_write() as conn:
        for queue in settings.CELERY_TASK_QUEUES:
            queue.bind(conn.default_channel).declare()
    worker = rabbit.worker(ready=False, env={"BROKER_QUEUE_TYPE": "quorum"})
    wait_for(lambda: not worker.alive(), timeout=60, what="the worker to stop")
    assert worker.popen.returncode != 0
    log = worker.log.read_text(errors="replace")
    assert "declared otherwise (BROKER_QUEUE_TYPE=quorum" in log, worker.tail()
    assert "Unrecoverable error" not in log and "ready." not in log


def test_a_worker_checks_only_the_queues_it_consumes(rabbit):
    """-Q: a queue declared otherwise that this worker does not consume is not its
    concern (the first version of the check refused the webhook worker over the
    re-render queue: a review of the mend)."""
    by_name = {queue.name: queue for queue in settings.CELERY_TASK_QUEUES}
    rerender = next(name for name in by_name if name.endswith(".rerender"))
    webhooks = next(name for name in by_name if name.endswith(".webhooks"))
    with app.connection_for_write() as conn:
        by_name[rerender].bind(conn.default_channel).declare()  # classic

    worker = rabbit.worker(env={"BROKER_QUEUE_TYPE": "quorum"}, queues=[webhooks])

    assert worker.alive() and "declared otherwise" not in worker.log.read_text()


def test_a_send_the_broker_refuses_is_logged_as_refused_and_keeps_the_breaker_closed(
    rabbit, caplog
):
    """A broker that answers and refuses (here a vhost where the user may read and not
    write: 403 on the send) is no outage: the send fails and says "refused", and the
    breaker stays closed, so the process's other sends, to exchanges the broker takes,
    are not held back for PUBLISH_DISPATCH_BREAKER_SECONDS (a review's finding; a
    refusal used to open it and be logged as "unreachable")."""
    [article] = save_articles("refused-send", 1)  # sent to the test's own vhost
    vhost = f"t-ro-{uuid.uuid4().hex[:10]}"
    definitions = rabbit.node.base / f"{vhost}.json"
    definitions.write_text(
        json.dumps(
            {
                "vhosts": [{"name": vhost}],
                "permissions": [
                    {"user": "guest", "vhost": vhost, "configure": "", "write": "", "read": ".*"}
                ],
            }
        )
    )
    assert rabbit.node.ctl("import_definitions", str(definitions)).returncode == 0
    read_only = f"amqp://guest:guest@127.0.0.1:{rabbit.node.port}/{vhost}"

    with broker(read_only), caplog.at_level("WARNING", logger="publishing.dispatch"):
        assert settings.PUBLISH_DISPATCH_BREAKER_SECONDS > 0
        assert not dispatch.dispatch_publish(article.pk)
        assert not dispatch.breaker_is_open()
        assert not dispatch.dispatch_publish(article.pk)  # tried again, not skipped

    lines = [r.getMessage() for r in caplog.records if r.name == "publishing.dispatch"]
    assert len([line for line in lines if "the broker refused access" in line]) == 2, lines
    assert not [line for line in lines if "unreachable" in line or "skips the broker" in line]


def test_two_beats_publish_nothing_twice(rabbit):
    articles = save_articles("rabbit-beats", 8)  # no worker yet; then the messages are lost
    with app.connection_for_write() as conn:
        for queue in settings.CELERY_TASK_QUEUES:
            bound = queue.bind(conn.default_channel)
            bound.declare()  # the catch-up queue exists once a worker or Beat declared it
            bound.purge()
    assert not any(queue_message_counts().values())

    worker = rabbit.worker()
    beats = [rabbit.beat(name="beat-a"), rabbit.beat(name="beat-b")]
    wait_all_published(articles, timeout=60)
    runs = worker.log.read_text(errors="replace").count("catch-up:")
    wait_for(
        lambda: worker.log.read_text(errors="replace").count("catch-up:") >= runs + 6,
        timeout=60,
        what="six more catch-up runs",
    )
    sent = [beat.log.read_text().count("Sending due task publish-catch-up") for beat in beats]
    assert min(sent) >= 3, f"both Beats must have been sending: {sent}"
    assert_published_once(articles)


def test_the_stuck_alarm_sounds_while_the_broker_blocks_beats_sends(rabbit):
    """A review's finding: RabbitMQ on a memory alarm blocks every connection that
    publishes, and Beat's send of the catch-up waited for its confirm as long as the
    alarm lasted; the stuck check ran in the same tick, after the send, so the alarm
    that must sound when nothing publishes stayed silent. It runs on a thread of its own."""
    beat = rabbit.beat()
    wait_for(  # sending: its connection made, before the alarm
        lambda: log_count(beat, "Sending due task publish-catch-up") >= 2,
        timeout=30,
        what="Beat's sends of the catch-up",
    )
    sent = log_count(beat, "Sending due task")
    assert rabbit.node.ctl("set_vm_memory_high_watermark", "0.0000001").returncode == 0
    try:
        wait_for(  # a send begun after the alarm (any entry's): the tick waits in it now
            lambda: log_count(beat, "Sending due task") > sent,
            timeout=30,
            what="a send of Beat's during the alarm",
        )
        [article] = save_articles("blocked-beat", 1)  # its own send refused within its bound
        long_ago = timezone.now() - timedelta(seconds=120)
        Article.objects.filter(pk=article.pk).update(publish_at=long_ago, updated_at=long_ago)

        wait_for(
            lambda: [m for m in mails("publishing is stuck") if f"oldest is {article.pk} " in m],
            timeout=60,
            what="the stuck alarm while the broker blocks Beat's sends",
        )
    finally:
        rabbit.node.ctl("set_vm_memory_high_watermark", "0.4")
    rabbit.worker()
    wait_all_published([article], timeout=60)
    assert_published_once([article])


def test_broker_killed_and_restarted_under_load_publishes_everything_once(rabbit):
    rabbit.worker()
    rabbit.beat()
    articles = save_articles("rabbit-restart", 100)
    ids = [a.pk for a in articles]
    wait_for(
        lambda: Article.objects.filter(pk__in=ids, status=ArticleStatus.PUBLISHED).count() >= 10,
        what="publishing to be under way",
    )

    rabbit.node.kill()  # SIGKILL: a crash, mid-run
    rabbit.node.start()  # the same data folder: durable queues and persistent messages
    restarted_at = time.monotonic()

    wait_all_published(articles, timeout=180)
    record_timing("RabbitMQ killed and restarted mid-run -> all 100 published", since(restarted_at))
    assert_published_once(articles)
