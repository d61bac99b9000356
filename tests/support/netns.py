"""Worker hosts as Linux network namespaces, on a test network of their own.

`HostNetwork.create()` makes a bridge in the root namespace with the network's first
address (where the test's servers listen) and, per host, a namespace joined to the
bridge by a veth pair. Everything is named with one random token and removed by
`remove()`; the subnet is a private 10.x.y.0/24 that no route of this machine uses.
Needs root and iproute2 (`ip`).
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import subprocess
import uuid
from dataclasses import dataclass, field


def netns_missing() -> str | None:
    """Why namespaces cannot be made here, or None."""
    if os.geteuid() != 0:
        return "network namespaces need root (CI runs as root)"
    if not shutil.which("ip"):
        return "iproute2's `ip` is not installed"
    return None


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True, timeout=30)


def _free_subnet() -> str:
    routes = subprocess.run(["ip", "-4", "route"], capture_output=True, text=True).stdout
    addresses = subprocess.run(["ip", "-4", "addr"], capture_output=True, text=True).stdout
    for _ in range(100):
        prefix = f"10.{random.randint(160, 250)}.{random.randint(0, 255)}"
        if f"{prefix}." not in routes and f"{prefix}." not in addresses:
            return prefix
    raise RuntimeError("no free 10.x.y.0/24 subnet found")


@dataclass
class Host:
    name: str  # the namespace
    address: str
    root_end: str  # the veth end on the bridge: down = the host is cut off

    @property
    def wrapper(self) -> tuple[str, ...]:
        return ("ip", "netns", "exec", self.name)


@dataclass
class HostNetwork:
    token: str
    prefix: str
    bridge: str
    hosts: dict[str, Host] = field(default_factory=dict)

    @property
    def address(self) -> str:
        """The root namespace's address on the network: where the servers listen."""
        return f"{self.prefix}.1"

    @classmethod
    def create(cls, host_names: list[str]) -> HostNetwork:
        token = uuid.uuid4().hex[:6]
        net = cls(token, _free_subnet(), f"bpbr{token}")
        try:
            ip("link", "add", net.bridge, "type", "bridge")
            ip("addr", "add", f"{net.address}/24", "dev", net.bridge)
            ip("link", "set", net.bridge, "up")
            for number, host_name in enumerate(host_names, start=2):
                net._add_host(host_name, number)
        except Exception:
            net.remove()
            raise
        return net

    def _add_host(self, host_name: str, number: int) -> None:
        ns = f"bp-{self.token}-{host_name}"
        root_end, ns_end = f"bpv{self.token}{number}", f"bpv{self.token}{number}n"
        host = Host(ns, f"{self.prefix}.{number}", root_end)
        self.hosts[host_name] = host
        ip("netns", "add", ns)
        ip("link", "add", root_end, "type", "veth", "peer", "name", ns_end)
        ip("link", "set", root_end, "master", self.bridge)
        ip("link", "set", root_end, "up")
        ip("link", "set", ns_end, "netns", ns)
        ip("-n", ns, "addr", "add", f"{host.address}/24", "dev", ns_end)
        ip("-n", ns, "link", "set", ns_end, "up")
        ip("-n", ns, "link", "set", "lo", "up")

    def cut(self, host_name: str) -> None:
        """Pull the host's cable: its packets go nowhere, connections stay open."""
        ip("link", "set", self.hosts[host_name].root_end, "down")

    def reconnect(self, host_name: str) -> None:
        ip("link", "set", self.hosts[host_name].root_end, "up")

    def remove(self) -> None:
        """Every namespace (its veth end goes with it, and the pair), then the bridge."""
        for host in self.hosts.values():
            with contextlib.suppress(subprocess.CalledProcessError):
                ip("netns", "del", host.name)
            with contextlib.suppress(subprocess.CalledProcessError):
                ip("link", "del", host.root_end)  # gone with the pair already, normally
        with contextlib.suppress(subprocess.CalledProcessError):
            ip("link", "del", self.bridge)
