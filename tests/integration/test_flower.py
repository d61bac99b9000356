"""Flower, started for real as the Procfile and compose start it (`celery -A config
flower`) against this run's Redis: it refuses to start without strong credentials, and
with them its API answers only to them.

Issue 8: with FLOWER_BASIC_AUTH= (as .env.example shipped it), `Authorization: Basic =`
got 200 on / and /api/workers, and the task API ran tasks; unset, the UI was open.
"""

from __future__ import annotations

import base64

import pytest
import requests

from tests.support import processes
from tests.support.waiting import wait_for

GOOD = "flower:correct-horse-battery"


def start_flower(monkeypatch, basic_auth: str | None) -> tuple[processes.Proc, str]:
    if basic_auth is None:
        monkeypatch.delenv("FLOWER_BASIC_AUTH", raising=False)
    port = processes.free_port()
    env = {} if basic_auth is None else {"FLOWER_BASIC_AUTH": basic_auth}
    proc = processes.spawn(
        "flower",
        processes.celery_cmd("flower", "--address=127.0.0.1", f"--port={port}"),
        env=env,
    )
    return proc, f"http://127.0.0.1:{port}"


def basic(credentials: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(credentials.encode()).decode()}


@pytest.mark.parametrize(
    ("basic_auth", "named"),
    [
        ("", "FLOWER_BASIC_AUTH is not set"),  # as .env.example ships it
        (None, "FLOWER_BASIC_AUTH is not set"),
        ("flower:short", "at least 12 characters"),
        ("flower:", "must be user:password"),
    ],
)
def test_flower_without_strong_credentials_does_not_start(monkeypatch, basic_auth, named):
    proc, _ = start_flower(monkeypatch, basic_auth)
    try:
        wait_for(lambda: not proc.alive(), timeout=60, what="flower to refuse to start")

        assert proc.popen.returncode != 0
        log = proc.tail()
        assert "Flower does not start" in log and named in log, log
    finally:
        proc.stop()


def test_flower_with_strong_credentials_answers_only_to_them(monkeypatch):
    proc, url = start_flower(monkeypatch, GOOD)
    try:

        def answers() -> bool:
            if not proc.alive():
                raise AssertionError(f"flower exited:\n{proc.tail()}")
            try:
                return requests.get(f"{url}/healthcheck", timeout=2).status_code == 200
            except requests.ConnectionError:
                return False

        wait_for(answers, timeout=60, what="flower to answer")

        def status(path: str, headers: dict[str, str]) -> int:
            return requests.get(f"{url}{path}", headers=headers, timeout=30).status_code

        assert status("/api/workers", {}) == 401
        assert status("/api/workers", {"Authorization": "Basic ="}) == 401
        assert status("/api/workers", basic(":")) == 401
        assert status("/", {"Authorization": "Basic ="}) == 401
        assert status("/api/workers", basic(GOOD)) == 200
    finally:
        proc.stop()
