"""A real HTTP webhook receiver for tests: stdlib http.server on 127.0.0.1 (or `host`), in a
thread.

It answers each request by the plan for the article's slug (or, for a body without one,
such as the digest's, its Idempotency-Key), then 200 once the plan is used up, and
records everything it received:

    receiver.plan("some-slug", 500, "stall", 400)

"stall" holds the request without answering (past the publisher's read timeout)
until the receiver stops; "trickle" sends a 200's headers a byte each TRICKLE_GAP
seconds (each read of the sender's ends well inside its timeout) until the receiver
stops; "slow" answers 200 after SLOW_SECONDS. `go_down()` closes the
listening socket (a receiver that is down: connections are refused) and `come_up()`
listens again on the same port. Each request records when it arrived and was answered.

Given `verify(headers, body) -> bool` (the documented receiver's, see
tests/support/documented_receiver.py), it first answers 401 to a request that fails it,
as a real receiver would, and records the request with `verified=False`.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STALL_AT_MOST = 30.0  # seconds; stop() releases stalled requests at once
SLOW_SECONDS = 1.0
TRICKLE_GAP = 0.2


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes
    status: int | None  # None: stalled, never answered
    verified: bool | None = None  # None: the receiver verifies nothing
    # time.time() when the request arrived, and when its answer was sent (None: never)
    arrived_at: float = 0.0
    answered_at: float | None = None

    @property
    def json(self) -> dict:
        return json.loads(self.body)


class Receiver:
    def __init__(
        self,
        verify: Callable[[dict[str, str], bytes], bool] | None = None,
        host: str = "127.0.0.1",
    ) -> None:
        self.verify = verify
        self.plans: dict[str, list[int | str]] = {}
        self.received: list[Received] = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self._listen((host, 0))
        self.address = self.server.server_address[:2]

    def _listen(self, address: tuple[str, int]) -> None:
        self.server = ThreadingHTTPServer(address, self._handler_class())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.address
        return f"http://{host}:{port}/hooks/blog"

    def start(self) -> Receiver:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self.go_down()

    def go_down(self) -> None:
        """Stop listening: a sender's connection is refused until `come_up()`."""
        self.server.shutdown()
        self.server.server_close()

    def come_up(self) -> None:
        self._listen(self.address)
        self.start()

    def plan(self, slug: str, *answers: int | str) -> None:
        with self.lock:
            self.plans[slug] = list(answers)

    def requests_for(self, slug: str) -> list[Received]:
        with self.lock:
            return [r for r in self.received if r.json.get("slug") == slug]

    def requests_with_key(self, key: str) -> list[Received]:
        with self.lock:
            return [r for r in self.received if r.headers.get("Idempotency-Key") == key]

    def _answer_for(self, slug: str) -> int | str:
        with self.lock:
            plan = self.plans.get(slug) or []
            return plan.pop(0) if plan else 200

    def _record(self, received: Received) -> None:
        with self.lock:
            self.received.append(received)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                headers = dict(self.headers.items())
                verified = receiver.verify(headers, body) if receiver.verify else None
                if verified is False:
                    receiver._record(Received(headers, body, 401, verified))
                    self.send_response(401)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                arrived_at = time.time()
                plan_key = json.loads(body).get("slug") or headers.get("Idempotency-Key", "")
                answer = receiver._answer_for(plan_key)
                if answer == "stall":
                    receiver._record(Received(headers, body, None, verified, arrived_at))
                    receiver.stopping.wait(STALL_AT_MOST)
                    return  # the client gave up long ago; close without an answer
                if answer == "trickle":
                    receiver._record(Received(headers, body, None, verified, arrived_at))
                    self._trickle()
                    return
                if answer == "slow":
                    receiver.stopping.wait(SLOW_SECONDS)
                    answer = 200
                # Recorded before the answer goes out: a sender that has it is recorded.
                received = Received(headers, body, int(answer), verified, arrived_at, time.time())
                receiver._record(received)
                text = b"ok" if answer == 200 else b"refused by the test receiver"
                self.send_response(int(answer))
                self.send_header("Content-Length", str(len(text)))
                self.end_headers()
                self.wfile.write(text)

            def _trickle(self) -> None:
                self.wfile.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
                end = time.monotonic() + STALL_AT_MOST
                try:
                    while time.monotonic() < end and not receiver.stopping.wait(TRICKLE_GAP):
                        self.wfile.write(b"x")
                        self.wfile.flush()
                except OSError:
                    return  # the sender gave up and closed
                self.wfile.write(b"\r\nContent-Length: 0\r\n\r\n")

            def log_message(self, format: str, *args) -> None:
                return  # quiet: the test asserts on what was received

        return Handler
