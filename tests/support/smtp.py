"""A real SMTP server for tests: aiosmtpd in a subprocess on a free port.

Each accepted message is written to <dir>/<ns>.eml; each DATA try appends a line to
<dir>/tries. The test steers it through <dir>/control.json, read at every DATA:

    {"fail": 2, "delay": 3}

answers `451` to the next `fail` messages (counting down), and holds each message
`delay` seconds before answering. Run as `python -m tests.support.smtp PORT DIR`.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import threading
import time
from email import message_from_bytes, policy
from email.message import EmailMessage
from pathlib import Path


class Handler:
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    async def handle_DATA(self, server, session, envelope) -> str:
        with open(self.folder / "tries", "a") as tries:
            tries.write(f"{time.time()}\n")
        control_file = self.folder / "control.json"
        try:
            control = json.loads(control_file.read_text())
        except (FileNotFoundError, ValueError):
            control = {}
        if control.get("delay"):
            await asyncio.sleep(float(control["delay"]))
        if control.get("fail", 0) > 0:
            control["fail"] -= 1
            control_file.write_text(json.dumps(control))
            return "451 4.3.0 the test's mail server says: try again later"
        tmp = self.folder / f".{time.time_ns()}.tmp"
        tmp.write_bytes(envelope.original_content or envelope.content)
        os.replace(tmp, self.folder / f"{time.time_ns()}.eml")
        return "250 OK"


def main() -> None:
    from aiosmtpd.controller import Controller

    port, folder = int(sys.argv[1]), Path(sys.argv[2])
    folder.mkdir(parents=True, exist_ok=True)
    controller = Controller(Handler(folder), hostname="127.0.0.1", port=port)
    controller.start()
    print(f"smtp ready on {port}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    stop.wait()
    controller.stop()


# --- the test's side ----------------------------------------------------------------


class SmtpServer:
    def __init__(self, folder: Path) -> None:
        from tests.support.processes import free_port

        self.folder = folder
        self.port = free_port()
        self.proc = None

    def start(self) -> SmtpServer:
        from tests.support import processes
        from tests.support.waiting import wait_for

        self.folder.mkdir(parents=True, exist_ok=True)
        self.proc = processes.spawn(
            f"smtp-{self.port}",
            [sys.executable, "-m", "tests.support.smtp", str(self.port), str(self.folder)],
        )
        wait_for(lambda: "smtp ready" in self.proc.tail(), timeout=30, what="the SMTP server")
        return self

    def stop(self) -> None:
        if self.proc:
            self.proc.stop(timeout=5)
            self.proc = None

    def control(self, **rules) -> None:
        (self.folder / "control.json").write_text(json.dumps(rules))

    def reset(self) -> None:
        for path in self.folder.iterdir():
            path.unlink()

    def tries(self) -> int:
        try:
            return len((self.folder / "tries").read_text().splitlines())
        except FileNotFoundError:
            return 0

    def messages(self, subject_contains: str = "") -> list[EmailMessage]:
        found = []
        for path in sorted(self.folder.glob("*.eml")):
            message = message_from_bytes(path.read_bytes(), policy=policy.default)
            if subject_contains in str(message["Subject"]):
                found.append(message)
        return found

    @property
    def env(self) -> dict[str, str]:
        """What a worker or command process needs to mail through this server."""
        return {
            "BLOGPUBLISH_TEST_SMTP": "1",
            "EMAIL_HOST": "127.0.0.1",
            "EMAIL_PORT": str(self.port),
        }


if __name__ == "__main__":
    main()
