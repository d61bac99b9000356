"""The backup executor's per-attempt time limits (publishing.time_limits)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from publishing.exceptions import AttemptTimeLimitExceeded
from publishing.time_limits import HARD_LIMIT_EXIT_STATUS, attempt_time_limit
from tests.support.processes import ROOT


def busy(seconds: float) -> None:
    """Work that never returns to a blocking call: only a signal can stop it."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        pass


def test_soft_limit_raises_where_the_attempt_is():
    started = time.monotonic()
    with (
        pytest.raises(AttemptTimeLimitExceeded, match="time limit"),
        attempt_time_limit(soft=0.2, hard=5),
    ):
        busy(5)
    assert time.monotonic() - started < 1


def test_no_time_limit_when_done_in_time_and_an_outer_timer_is_given_back():
    outer = signal.setitimer(signal.ITIMER_REAL, 0)  # pytest-timeout's, if any
    try:
        signal.setitimer(signal.ITIMER_REAL, 100)
        with attempt_time_limit(soft=0.5, hard=1):
            pass
        left, _interval = signal.getitimer(signal.ITIMER_REAL)
        assert 90 < left <= 100
    finally:
        signal.setitimer(signal.ITIMER_REAL, *outer)


def test_off_the_main_thread_it_does_nothing():
    errors: list[BaseException] = []

    def attempt() -> None:
        try:
            with attempt_time_limit(soft=0.05, hard=0.1):
                busy(0.3)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=attempt)
    thread.start()
    thread.join()
    assert errors == []


SWALLOWS_THE_SOFT_LIMIT = """
from publishing.time_limits import attempt_time_limit
import time
with attempt_time_limit(soft=0.2, hard=0.5):
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            while time.monotonic() < deadline:
                pass
        except Exception:
            pass  # a target that catches everything
print("survived")
"""


def test_hard_limit_ends_the_process_when_the_soft_one_is_swallowed():
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", SWALLOWS_THE_SOFT_LIMIT],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == HARD_LIMIT_EXIT_STATUS, done.stderr
    assert "survived" not in done.stdout
    assert "hard time limit" in done.stderr
    assert time.monotonic() - started < 8
