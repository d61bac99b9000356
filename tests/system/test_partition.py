"""A worker host cut off mid-publish cannot overwrite the winner (issue 10, item 3).

Two worker hosts, A and B, are Linux network namespaces on a test network of the
test's own (tests/support/netns.py: a bridge, a veth pair per host, a private /24, all
made and removed here). Both reach, through the network's address only: one PostgreSQL
(this machine's, which listens on 127.0.0.1, through a TCP forwarder the test runs),
one broker (a private redis-server bound to the network's address), one webhook
receiver, and the site's storage (the `site_storage` fixture): an S3 server (moto's
server mode) bound to the network's address, SITE_ROOT=s3://BUCKET/site for both hosts
and this process; or, as the second variant, the run's site folder, which both
namespaces see since they share the file system.

Host A's attempt is held in flight inside the site publisher (issue 17, item 7:
tests.support.chaos.HeldSitePublisher), then A's link is cut. Two places: after its
token check, under the page guard, just before the rename or PUT that makes the page
live ("before-write"), and before the guard and the check ("before-check"). B publishes
the article once A's lease has run out (Beat's catch-up sends it again); held before its
write, A holds the guard's locks until the database ends its session, idle for a lease
(blogpublish.site.lock). A's link comes back and its attempt is let go: its write is
refused (the bucket's PUT is conditional on the page A saw at its check) or taken back
(on disk, the page A replaced is put back: the same file), and the late completion is
fenced off. Its attempt is recorded as overtaken, nothing of A's reaches the page or the
shared documents, and the webhook receiver got one delivery for the content (one outbox
row). In the
bucket, which keeps every version of every object, not one object was written or
removed after B's pass (a rewrite with the same bytes would show as a new version id);
on disk, not one file was (a rename gives a new inode).

Each guard fails its variant when removed: without the token check, A held before it
writes its page after B's (a new version); without the conditional PUT or the take-back,
A held before its write does.

A host's S3 client waits a bounded time for each request (SITE_STORAGE_CONNECT_TIMEOUT
and _READ_TIMEOUT, derived from the 5 s lease: 0.5 s and 1 s, one retry), so a request
made while its link is down ends as an error within the attempt, never as a hang.

Host A runs the solo pool, which enforces no time limits: as a host whose timers did
not fire (a paused VM, a stalled process), its attempt outlives its lease. With the
prefork pool the hard time limit (inside the lease) would end it first; that is the
first line of defence, and this test is of the second, the fence.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from publishing.models import (
    Article,
    ArticleStatus,
    AttemptOutcome,
    DeliveryStatus,
    WebhookDelivery,
)
from tests.support import processes
from tests.support.broker import broker
from tests.support.chaos import journal_entries, release
from tests.support.netns import HostNetwork, netns_missing
from tests.support.processes import Proc, free_port
from tests.support.receiver import Receiver
from tests.support.s3 import S3Server
from tests.support.settling import refresher_is_idle, worker_is_idle
from tests.support.waiting import wait_for
from tests.system.conftest import SYSTEM_SETTINGS
from tests.system.helpers import save_articles, wait_all_published

pytestmark = [
    pytest.mark.system,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        bool(netns_missing()), reason=f"the partition test: {netns_missing() or ''}"
    ),
]

WEBHOOK_SECRET = "partition-test-webhook-secret-of-32-characters-or-more"
SHARED_DOCUMENTS = ("index.html", "feed.xml", "sitemap.xml")


# --- the site's storage, in one place ---------------------------------------------------


class FolderSite:
    """The run's site folder (SITE_ROOT), which both namespaces see through the shared
    file system: a deployment of several hosts with a shared folder."""

    env: dict = {}

    def __init__(self, root: Path):
        self.root = root

    def read(self, name: str) -> bytes | None:
        try:
            return (self.root / name).read_bytes()
        except FileNotFoundError:
            return None

    def version(self, name: str) -> tuple:
        """Changes whenever the file is written again, even with the same bytes (a
        page is written by rename: a new inode)."""
        stat = (self.root / name).stat()
        return stat.st_ino, stat.st_mtime_ns

    def listing(self) -> dict[str, tuple]:
        """Every document of the site (not the staging folder) and its version."""
        return {
            str(path.relative_to(self.root)): self.version(str(path.relative_to(self.root)))
            for path in self.root.rglob("*")
            if path.is_file() and not path.relative_to(self.root).parts[0].startswith(".")
        }


class BucketSite:
    """SITE_ROOT=s3://BUCKET/site in an S3 server (moto's server mode) bound to the test
    network's address, for both hosts and this process. The bucket keeps every version
    of every object, so a write of the same bytes shows too (a new version id)."""

    PREFIX = "site"

    def __init__(self, server: S3Server):
        self.server, self.client = server, server.client()
        self.bucket = server.new_bucket()
        self.client.put_bucket_versioning(
            Bucket=self.bucket, VersioningConfiguration={"Status": "Enabled"}
        )
        self.site_root = f"s3://{self.bucket}/{self.PREFIX}"
        self.env = server.env(self.site_root)

    def key(self, name: str) -> str:
        return f"{self.PREFIX}/{name}"

    def read(self, name: str) -> bytes | None:
        try:
            return self.client.get_object(Bucket=self.bucket, Key=self.key(name))["Body"].read()
        except self.client.exceptions.NoSuchKey:
            return None

    def version(self, name: str) -> tuple:
        head = self.client.head_object(Bucket=self.bucket, Key=self.key(name))
        return head["VersionId"], head["ETag"], head["LastModified"]

    def listing(self) -> dict[str, tuple]:
        """Every version of every key under the site's prefix, and every delete marker:
        any PUT or DELETE since adds one."""
        found: dict[str, list] = {}
        pages = self.client.get_paginator("list_object_versions").paginate(
            Bucket=self.bucket, Prefix=f"{self.PREFIX}/"
        )
        for page in pages:
            for kind in ("Versions", "DeleteMarkers"):
                for entry in page.get(kind, ()):
                    name = entry["Key"][len(self.PREFIX) + 1 :]
                    found.setdefault(name, []).append(
                        (kind, entry["VersionId"], entry.get("ETag"), entry["LastModified"])
                    )
        return {name: tuple(sorted(versions)) for name, versions in found.items()}


@pytest.fixture(params=["s3", "folder"])
def site_storage(request, network, settings) -> Iterator[FolderSite | BucketSite]:
    """Where both hosts write the site: a bucket in an S3 server that listens on the
    test network's address only, or the run's folder."""
    if request.param == "folder":
        yield FolderSite(settings.SITE_ROOT)
        return
    server = S3Server(port=free_port(), host=network.address).start()
    try:
        site = BucketSite(server)
        for name, value in server.settings_for(site.site_root).items():
            setattr(settings, name, value)  # this process reads the same bucket
        yield site
    finally:
        server.stop()


# --- the test network and what listens on it ----------------------------------------------


@pytest.fixture
def network() -> Iterator[HostNetwork]:
    if connection.vendor != "postgresql":
        pytest.skip("several hosts need PostgreSQL: SQLite is one host's database")
    net = HostNetwork.create(["a", "b"])
    try:
        yield net
    finally:
        net.remove()


def start_server(name: str, cmd: list[str], ready: str) -> Proc:
    proc = processes.spawn(name, cmd)

    def up() -> bool:
        if not proc.alive():
            raise AssertionError(f"{name} exited:\n{proc.tail()}")
        return ready in proc.log.read_text(errors="replace")

    wait_for(up, timeout=30, what=f"{name} to listen")
    return proc


@dataclass
class Hosts:
    net: HostNetwork
    env: dict  # what every host gets
    receiver: Receiver
    procs: list[Proc] = field(default_factory=list)

    def worker(self, host: str, **kwargs) -> Proc:
        proc = processes.start_worker(
            name=f"worker-{host}",
            env=self.env,
            wrapper=self.net.hosts[host].wrapper,
            ready=False,
            **kwargs,
        )
        self.procs.append(proc)  # stopped at the end, also when it never got ready
        processes.wait_until_ready(proc)
        return proc

    def beat(self) -> Proc:  # on the root namespace's side of the network
        proc = processes.start_beat(env=self.env)
        self.procs.append(proc)
        return proc

    def quiet(self, worker: Proc, beat: Proc) -> None:
        """Beat stopped and `worker` idle: no catch-up or pass of the shared views left
        to run (each pass writes the front page and the feed again, even unchanged), so
        whatever the site shows from here on is the doing of a host the test lets go."""
        beat.stop()
        queues = [queue.name for queue in settings.CELERY_TASK_QUEUES]
        wait_for(
            lambda: worker_is_idle(worker, queues, soon=120) and refresher_is_idle(),
            timeout=60,
            what=f"{worker.name} to be idle with Beat stopped",
        )


@pytest.fixture
def hosts(network, site_storage, transactional_db, settings) -> Iterator[Hosts]:
    for name, value in SYSTEM_SETTINGS.items():
        setattr(settings, name, value)
    address = network.address
    servers: list[Proc] = []
    receiver = Receiver(host=address).start()
    try:
        redis_port, pg_port = free_port(), free_port()
        servers.append(
            start_server(
                "redis-partition",
                [
                    *("redis-server", "--port", str(redis_port), "--bind", address),
                    # reachable from the hosts on the test network only
                    *("--protected-mode", "no", "--save", ""),
                ],
                "Ready to accept connections",
            )
        )
        database = settings.DATABASES["default"]
        target = [database["HOST"] or "127.0.0.1", str(database["PORT"] or 5432)]
        servers.append(
            start_server(
                "postgres-forwarder",
                [sys.executable, "-m", "tests.support.forwarder", address, str(pg_port), *target],
                "ready",
            )
        )
        pg = os.environ.get("TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres")
        user = pg.split("://", 1)[1].split("@", 1)[0]
        broker_url = f"redis://{address}:{redis_port}/0"
        env = {
            **{k: str(v) for k, v in SYSTEM_SETTINGS.items()},
            **site_storage.env,
            "BLOGPUBLISH_TEST_BROKER": broker_url,
            "TEST_POSTGRES_URL": f"postgres://{user}@{address}:{pg_port}/postgres",
            "PUBLISH_WEBHOOK_URL": receiver.url,
            "PUBLISH_WEBHOOK_SECRET": WEBHOOK_SECRET,
            # inside the soft time limit of a 5 s lease, with 3 s to connect
            "PUBLISH_WEBHOOK_TIMEOUT": "0.5",
        }
        hosts = Hosts(network, env, receiver)
        with broker(broker_url):
            try:
                yield hosts
            finally:
                for proc in hosts.procs:
                    proc.stop(timeout=10)
    finally:
        for proc in servers:
            proc.kill()
        receiver.stop()


# --- the test ---------------------------------------------------------------------------


def attempt_row(article: Article, number: int):
    return article.publish_attempts.filter(number=number).first()


@pytest.mark.parametrize("hold_at", ["before-write", "before-check"])
def test_host_cut_off_mid_publish_is_fenced_off_when_it_comes_back(
    hosts, site_storage, chaos, hold_at
):
    slug = f"partition-{uuid.uuid4().hex[:6]}"
    # A's attempt waits for release inside the site publisher.
    chaos(f"{slug}-0", hold=120, hold_until_attempt=2, hold_at=hold_at)
    hosts.worker("a", pool="solo", concurrency=1)
    [article] = save_articles(slug, 1)
    wait_for(
        lambda: (settings.RUN_DIR / "pids" / f"{slug}-0.1").exists(),
        what="host A's attempt to be held in flight",
    )

    hosts.net.cut("a")
    b = hosts.worker("b")
    beat = hosts.beat()  # its catch-up sends the row again once A's lease has run out

    wait_all_published([article], timeout=90)
    page = f"{slug}-0/index.html"
    wait_for(
        lambda: refresher_is_idle() and slug.encode() in (site_storage.read("feed.xml") or b""),
        timeout=60,
        what="the shared documents to list the article",
    )
    hosts.quiet(b, beat)  # B has published: Beat's part is done
    b_page = site_storage.version(page)
    b_documents = {name: site_storage.read(name) for name in SHARED_DOCUMENTS}
    b_listing = site_storage.listing()
    assert page in b_listing and set(SHARED_DOCUMENTS) <= set(b_listing)
    a_row, b_row = attempt_row(article, 1), attempt_row(article, 2)
    assert b_row.outcome == AttemptOutcome.OK
    assert a_row.worker != b_row.worker

    hosts.net.reconnect("a")
    release(f"{slug}-0")  # A's attempt goes on, long after its lease

    wait_for(
        lambda: "overtaken" in attempt_row(article, 1).error,
        timeout=60,
        what="host A's late completion to be recorded",
    )
    wait_for(refresher_is_idle, timeout=30, what="the refresher to be idle")

    article.refresh_from_db()
    assert article.status == ArticleStatus.PUBLISHED
    a_row = attempt_row(article, 1)
    assert a_row.outcome == AttemptOutcome.RETRY
    assert list(article.publish_attempts.values_list("number", flat=True).order_by("number")) == [
        1,
        2,
    ]
    # Nothing of A's reached the site: B's page as B wrote it, the shared documents too,
    # and the journal (the publisher after the site) saw attempt 2 only.
    assert site_storage.version(page) == b_page
    assert {name: site_storage.read(name) for name in SHARED_DOCUMENTS} == b_documents
    # Nor anywhere else: not one object (or file) written or removed since B's pass.
    assert site_storage.listing() == b_listing
    assert [attempt for attempt, _ in journal_entries(f"{slug}-0")] == [2]
    # One delivery per content (the webhook's outbox row, sent after B's publish); if A's
    # request had gone out, under the same key.
    wait_for(
        lambda: WebhookDelivery.objects.filter(
            article_id=article.pk, status=DeliveryStatus.DELIVERED
        ).exists(),
        timeout=60,
        what="the webhook delivery of B's publish",
    )
    assert WebhookDelivery.objects.filter(article_id=article.pk).count() == 1
    received = hosts.receiver.requests_for(f"{slug}-0")
    assert len({r.headers["Idempotency-Key"] for r in received}) == 1
    assert len(received) == 1
