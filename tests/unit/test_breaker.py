"""The dispatch's circuit breaker as a pure object, on a clock the test moves."""

from __future__ import annotations

import pytest

from publishing.breaker import Breaker


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def breaker(clock) -> Breaker:
    return Breaker(clock=clock)


def test_closed__every_call_goes_through(breaker):
    assert all(breaker.allow() for _ in range(100))
    assert not breaker.is_open


def test_failure__opens_and_refuses_calls_for_its_window(breaker, clock):
    assert breaker.failed(5) is True  # it was closed: the caller logs the outage

    clock.now += 4.9
    assert [breaker.allow() for _ in range(10)] == [False] * 10
    assert breaker.is_open
    assert breaker.skipped == 10


def test_after_the_window__one_trial_goes_through_while_the_others_wait(breaker, clock):
    breaker.failed(5)
    clock.now += 5

    assert breaker.allow() is True  # the trial (half-open)
    assert breaker.allow() is False  # the others, while it runs
    assert breaker.is_open


def test_trial_succeeds__closes_and_reports_what_it_skipped(breaker, clock):
    breaker.failed(5)
    breaker.allow()
    clock.now += 5
    breaker.allow()

    assert breaker.succeeded() == 1
    assert not breaker.is_open
    assert breaker.allow() is True
    assert breaker.succeeded() == 0


def test_trial_fails__opens_again_and_is_not_logged_again(breaker, clock):
    breaker.failed(5)
    clock.now += 5
    assert breaker.allow()

    assert breaker.failed(5) is False
    clock.now += 4.9
    assert breaker.allow() is False
    clock.now += 0.1
    assert breaker.allow() is True


def test_trial_that_never_reports__costs_one_more_window_only(breaker, clock):
    breaker.failed(5)
    clock.now += 5
    assert breaker.allow()  # its thread was stopped: no succeeded(), no failed()

    clock.now += 5
    assert breaker.allow() is True


def test_zero_seconds__never_opens(breaker):
    assert breaker.failed(0) is True
    assert breaker.failed(0) is True  # each failure is the caller's to log
    assert breaker.allow() is True
    assert not breaker.is_open
