"""The `publish_discard` remote control command (publishing.tasks) as a worker runs it:
the ids it is given go into Celery's set of revoked ids, which the worker's consumer
reads to drop a message unrun; what anyone with the broker's password could send
instead of a list of ids changes nothing and raises nothing. And a discard with the
broker unreachable returns, leaving the dispatch breaker as it was."""

from __future__ import annotations

import pytest
from celery.worker import state as worker_state

from publishing import dispatch
from publishing.tasks import DISCARD_MAX, publish_discard
from tests.support.broker import broker


@pytest.fixture
def revoked():
    before = set(worker_state.revoked)
    yield worker_state.revoked
    worker_state.revoked.clear()
    worker_state.revoked.update(before)


def test_the_ids_given_are_dropped_when_they_come(revoked):
    assert publish_discard(None, task_ids=["a-1", "b-2"]) == {"ok": "2 message(s) to drop"}
    assert {"a-1", "b-2"} <= set(revoked)


@pytest.mark.parametrize("hostile", [None, "abc", 42, {"a": 1}])
def test_anything_but_a_list_is_refused_and_drops_nothing(revoked, hostile):
    before = set(revoked)
    assert "error" in publish_discard(None, task_ids=hostile)
    assert set(revoked) == before


def test_items_are_taken_as_text_and_at_most_a_bound_of_them(revoked):
    publish_discard(None, task_ids=[7, *(f"id-{n}" for n in range(DISCARD_MAX + 5))])
    assert "7" in revoked
    assert f"id-{DISCARD_MAX - 2}" in revoked
    assert f"id-{DISCARD_MAX}" not in revoked


def test_a_discard_with_the_broker_unreachable_returns_false_and_leaves_the_breaker():
    with broker("redis://127.0.0.1:1/0"):  # nothing listens on port 1
        assert dispatch.discard_messages(["x-1"]) is False
        assert not dispatch.breaker_is_open()
