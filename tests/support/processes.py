"""Real processes for tests: celery workers, beat, and private redis-servers.

Each is a child of the test run, in a process group of its own, with its output in a
log file under the run's directory; stopping it signals that group by PID, never by
name. A failing test prints the tail of every log it started (see conftest).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from tests.support.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen
    log: Path
    env: dict = field(default_factory=dict)
    # A worker's node name, as `celery inspect` addresses it.
    hostname: str = ""

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def signal(self, sig: int) -> None:
        if self.alive():
            os.kill(self.pid, sig)

    def stop(self, timeout: float = 20.0) -> None:
        """Warm shutdown (SIGTERM), then SIGKILL to the whole group if it lingers."""
        if self.alive():
            self.signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(timeout)
        self.kill()

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(10)

    def children(self) -> list[int]:
        try:
            out = subprocess.run(
                ["ps", "-o", "pid=", "--ppid", str(self.pid)],
                capture_output=True,
                text=True,
                check=False,
            ).stdout
        except OSError:
            return []
        return [int(p) for p in out.split()]

    def tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return ""


STARTED: list[Proc] = []


def spawn(
    name: str,
    cmd: list[str],
    *,
    env: dict | None = None,
    cwd: Path = ROOT,
    inherit_env: bool = True,
) -> Proc:
    """`inherit_env=False`: the process gets `env` alone (and PYTHONUNBUFFERED), not
    the test run's environment (its settings module, its database)."""
    log = settings.RUN_DIR / "logs" / f"{name}-{time.time_ns()}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    full_env = {**(os.environ if inherit_env else {}), "PYTHONUNBUFFERED": "1", **(env or {})}
    with open(log, "wb") as out:
        popen = subprocess.Popen(
            cmd,
            cwd=cwd,
            env=full_env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    proc = Proc(name, popen, log, env or {})
    STARTED.append(proc)
    return proc


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- celery ------------------------------------------------------------------------


def celery_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "celery", "-A", "config", *args]


def start_worker(
    *,
    concurrency: int = 2,
    env: dict | None = None,
    name: str = "worker",
    ready: bool = True,
    pool: str = "prefork",
    wrapper: tuple[str, ...] = (),
    cwd: Path = ROOT,
    queues: list[str] | None = None,
) -> Proc:
    """`wrapper`: a command that runs the worker, e.g. ("ip", "netns", "exec", NS),
    which execs it (the PID stays the worker's). `cwd`: the code it runs (another
    release's checkout); `queues`: those it consumes (the run's, by default). With
    `ready`, waits until it is
    ready, and stops it when it is not; without, the caller waits
    (`wait_until_ready`) once it has registered the process to be stopped."""
    hostname = f"{name}-{time.time_ns()}@{socket.gethostname()}"
    proc = spawn(
        name,
        [
            *wrapper,
            *celery_cmd(
                "worker",
                "-l",
                "info",
                "-P",
                pool,
                "-c",
                str(concurrency),
                "-E",
                "-n",
                hostname,
                "-Q",
                ",".join(queues or [queue.name for queue in settings.CELERY_TASK_QUEUES]),
                "--without-gossip",
                "--without-mingle",
            ),
        ],
        env=env,
        cwd=cwd,
    )
    proc.hostname = hostname
    if ready:
        try:
            wait_until_ready(proc)
        except BaseException:  # never left running by a caller that got no Proc back
            proc.stop(timeout=10)
            raise
    return proc


def wait_until_ready(proc: Proc, timeout: float = 60.0) -> None:
    def ready() -> bool:
        if not proc.alive():
            raise AssertionError(f"{proc.name} exited:\n{proc.tail()}")
        return " ready." in proc.log.read_text(errors="replace")

    wait_for(ready, timeout=timeout, what=f"{proc.name} to be ready")


def start_beat(*, env: dict | None = None, name: str = "beat", cwd: Path = ROOT) -> Proc:
    schedule = settings.RUN_DIR / f"{name}-{time.time_ns()}-schedule"
    return spawn(name, celery_cmd("beat", "-l", "info", "-s", str(schedule)), env=env, cwd=cwd)


# --- redis -------------------------------------------------------------------------


@dataclass
class PrivateRedis:
    """A redis-server of the test's own, on a free port: stop, kill, start at will."""

    port: int
    proc: Proc | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> PrivateRedis:
        self.proc = spawn(
            f"redis-{self.port}",
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "no",
            ],
        )
        wait_for(self.ping, timeout=20, what=f"redis on port {self.port}")
        return self

    def ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        if self.proc:
            self.proc.kill()
            self.proc = None
