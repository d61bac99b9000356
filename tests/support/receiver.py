"""A real HTTP webhook receiver for tests: stdlib http.server on 127.0.0.1 (or `host`), in a
thread.

It answers each request by the plan for the article's slug (or, for a body without one,
such as the digest's, its Idempotency-Key), then 200 once the plan is used up, and
records everything it received:

    receiver.plan("some-slug", 500, "stall", 400)

"stall" holds the request without answering (past the publisher's read timeout)
until the receiver stops.

Given `verify(headers, body) -> bool` (the documented receiver's, see
tests/support/documented_receiver.py), it first answers 401 to a request that fails it,
as a real receiver would, and records the request with `verified=False`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STALL_AT_MOST = 30.0  # seconds; stop() releases stalled requests at once


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes
    status: int | None  # None: stalled, never answered
    verified: bool | None = None  # None: the receiver verifies nothing

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
        self.server = ThreadingHTTPServer((host, 0), self._handler_class())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/hooks/blog"

    def start(self) -> Receiver:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()

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
                plan_key = json.loads(body).get("slug") or headers.get("Idempotency-Key", "")
                answer = receiver._answer_for(plan_key)
                if answer == "stall":
                    receiver._record(Received(headers, body, None, verified))
                    receiver.stopping.wait(STALL_AT_MOST)
                    return  # the client gave up long ago; close without an answer
                receiver._record(Received(headers, body, int(answer), verified))
                text = b"ok" if answer == 200 else b"refused by the test receiver"
                self.send_response(int(answer))
                self.send_header("Content-Length", str(len(text)))
                self.end_headers()
                self.wfile.write(text)

            def log_message(self, format: str, *args) -> None:
                return  # quiet: the test asserts on what was received

        return Handler
