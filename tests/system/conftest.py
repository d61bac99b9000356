"""System tests: a private redis-server per test, worker and beat subprocesses with
short intervals, and the test process switched to the private broker."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from tests.support import processes
from tests.support.broker import broker
from tests.support.processes import PrivateRedis, Proc, free_port
from tests.support.receiver import Receiver

pytestmark = pytest.mark.system

# Short enough that every recovery happens in seconds; the same for every process.
SYSTEM_SETTINGS = {
    "PUBLISH_LEASE_SECONDS": 5,
    "PUBLISH_CATCHUP_INTERVAL": 2,
    "PUBLISH_STALE_AFTER": 2,
    "PUBLISH_STUCK_AFTER": 30,
    "PUBLISH_MAX_ATTEMPTS": 3,
    "PUBLISH_RETRY_BACKOFF_MAX": 2,
}


@pytest.fixture(autouse=True)
def _without_the_session_worker(request):
    """The integration tests' session worker is stopped before a system test that does
    not use it: such a test starts processes of its own on a private broker, but shares
    the run's database, where the session worker's late work (a message it held for its
    ETA, a pass of the shared views, a re-render pass that sends the next) would hold
    the refresher's lease or write pages under it. (The one system test that uses it,
    test_backup_restore.py, runs first.)"""
    from tests.conftest import SESSION_WORKER

    proc = SESSION_WORKER.get("proc")
    if "worker" not in request.fixturenames and proc is not None and proc.alive():
        proc.stop()
    yield


@dataclass(kw_only=True)
class Processes:
    """Starters for worker and Beat with one environment; stop_all() stops every one
    started, also a worker that never got ready."""

    env: dict
    procs: list[Proc] = field(default_factory=list)

    def worker(self, *, ready: bool = True, **kwargs) -> Proc:
        env = {**self.env, **kwargs.pop("env", {})}
        proc = processes.start_worker(env=env, ready=False, **kwargs)
        self.procs.append(proc)  # stopped at the end, also when it never got ready
        if ready:
            processes.wait_until_ready(proc)
        return proc

    def beat(self, name: str = "beat") -> Proc:
        proc = processes.start_beat(env=self.env, name=name)
        self.procs.append(proc)
        return proc

    def stop_all(self) -> None:
        """Every process asked at once (SIGTERM, a warm shutdown), then each given what
        is left of the same 10 s before it is killed: the shutdowns overlap instead of
        adding up."""
        for proc in self.procs:
            proc.signal(signal.SIGTERM)
        deadline = time.monotonic() + 10
        for proc in self.procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.popen.wait(max(0.1, deadline - time.monotonic()))
            proc.kill()


@dataclass(kw_only=True)
class Pipeline(Processes):
    redis: PrivateRedis


@pytest.fixture
def pipeline(transactional_db, settings) -> Iterator[Pipeline]:
    """A private Redis, the test process using it, and starters for worker and beat."""
    for name, value in SYSTEM_SETTINGS.items():
        setattr(settings, name, value)
    redis = PrivateRedis(free_port()).start()
    env = {"BLOGPUBLISH_TEST_BROKER": redis.url, **{k: str(v) for k, v in SYSTEM_SETTINGS.items()}}
    pipe = Pipeline(redis=redis, env=env)
    with broker(redis.url):
        try:
            yield pipe
        finally:
            pipe.stop_all()
            redis.stop()


TIMINGS: list[tuple[str, float]] = []


# The publishing webhook's secret for the receivers of these tests (32 or more characters).
WEBHOOK_SECRET = "system-test-webhook-secret-of-32-characters-at-least"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """A real HTTP webhook receiver (tests/support/receiver.py), stopped after the test."""
    receiver = Receiver().start()
    yield receiver
    receiver.stop()


def record_timing(what: str, seconds: float) -> None:
    """A measured recovery time, printed in the run's summary (never asserted on)."""
    TIMINGS.append((what, seconds))


def pytest_terminal_summary(terminalreporter) -> None:
    if not TIMINGS:
        return
    terminalreporter.section("recovery times measured (not asserted)")
    for what, seconds in TIMINGS:
        terminalreporter.write_line(f"{seconds:8.2f} s  {what}")


def since(started: float) -> float:
    return time.monotonic() - started
