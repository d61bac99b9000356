"""A RabbitMQ node of the test's own: its own node name, AMQP and distribution ports,
data and log folders in the run's directory, no plugins (no management UI).

Started as a subprocess (`rabbitmq-server` from RabbitMQ's own bin folder, as the user
running the tests, so its Erlang cookie is the one `rabbitmqctl -n NODE` here uses),
and stopped by PID (its process group): the machine's shared node (rabbit@localhost,
port 5672) is never touched. /etc/rabbitmq's files are replaced by the node's own (the
shared one names port 5672 and the node name).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from tests.support.processes import Proc, free_port, spawn
from tests.support.waiting import wait_for

RABBITMQ_BIN = Path("/usr/lib/rabbitmq/bin")


def rabbitmq_missing() -> str | None:
    """Why a private node cannot be started here, or None."""
    if not (RABBITMQ_BIN / "rabbitmq-server").exists() and not shutil.which("rabbitmq-server"):
        return "RabbitMQ is not installed (apt-get install rabbitmq-server)"
    return None


def _bin(name: str) -> str:
    path = RABBITMQ_BIN / name
    return str(path) if path.exists() else name


@dataclass
class PrivateRabbitMQ:
    """Start, kill and start again at will; the data folder survives a restart, as a
    broker's disk would (durable queues and persistent messages come back)."""

    port: int
    dist_port: int
    base: Path
    node: str
    proc: Proc | None = None

    @classmethod
    def create(cls) -> PrivateRabbitMQ:
        token = uuid.uuid4().hex[:8]
        base = settings.RUN_DIR / f"rabbitmq-{token}"
        base.mkdir(parents=True)
        return cls(free_port(), free_port(), base, f"bp-test-{token}@localhost")

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.port}//"

    def env(self) -> dict[str, str]:
        (self.base / "rabbitmq.conf").write_text(f"listeners.tcp.default = 127.0.0.1:{self.port}\n")
        (self.base / "enabled_plugins").write_text("[].\n")
        (self.base / "rabbitmq-env.conf").write_text("")
        return {
            "RABBITMQ_NODENAME": self.node,
            "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
            "RABBITMQ_NODE_PORT": str(self.port),
            "RABBITMQ_DIST_PORT": str(self.dist_port),
            "RABBITMQ_MNESIA_BASE": str(self.base / "mnesia"),
            "RABBITMQ_LOG_BASE": str(self.base / "log"),
            "RABBITMQ_PID_FILE": str(self.base / "pid"),
            "RABBITMQ_CONFIG_FILE": str(self.base / "rabbitmq.conf"),
            "RABBITMQ_ADVANCED_CONFIG_FILE": str(self.base / "advanced.config"),
            "RABBITMQ_CONF_ENV_FILE": str(self.base / "rabbitmq-env.conf"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(self.base / "enabled_plugins"),
            "ERL_EPMD_ADDRESS": "127.0.0.1",
            "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": "-kernel inet_dist_use_interface {127,0,0,1}",
        }

    def start(self, timeout: float = 120.0) -> PrivateRabbitMQ:
        self.proc = spawn(f"rabbitmq-{self.port}", [_bin("rabbitmq-server")], env=self.env())
        wait_for(self.answers, timeout=timeout, what=f"RabbitMQ node {self.node}")
        return self

    def answers(self) -> bool:
        """The AMQP listener takes a connection and speaks AMQP (its protocol header)."""
        if self.proc is not None and not self.proc.alive():
            raise AssertionError(f"RabbitMQ node {self.node} exited:\n{self.proc.tail()}")
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                s.sendall(b"AMQP\x00\x00\x09\x01")
                s.settimeout(2)
                return s.recv(1) == b"\x01"  # the first byte of connection.start
        except OSError:
            return False

    def ctl(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [_bin("rabbitmqctl"), "-n", self.node, *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    def kill(self) -> None:
        """SIGKILL to the node's process group: a crash, not a clean stop."""
        if self.proc:
            self.proc.kill()
            self.proc = None
        # The port is free once the kernel closed the listener.
        wait_for(lambda: not self._listening(), timeout=30, what="the node's port to close")

    def _listening(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                return True
        except OSError:
            return False

    def remove(self) -> None:
        self.kill()
        shutil.rmtree(self.base, ignore_errors=True)
