"""Beat, until the broker first answers, tries it once a tick (publishing.beat): one
connection, not a try and a retry, each of which may wait for a broker that accepts and
never answers (a review's finding: two tries, twice the wait before the stuck check)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest
from celery import Celery

from publishing.beat import Scheduler
from tests.support.waiting import wait_for


@pytest.fixture
def silent_broker() -> Iterator[tuple[int, list[socket.socket]]]:
    """A TCP port that accepts connections and never answers; the connections it took."""
    server = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                accepted.append(server.accept()[0])
            except OSError:  # closed
                return

    threading.Thread(target=accept, daemon=True).start()
    yield server.getsockname()[1], accepted
    server.close()
    for conn in accepted:
        conn.close()


def test_a_tick_tries_a_silent_broker_once(silent_broker, tmp_path):
    port, accepted = silent_broker
    app = Celery(set_as_current=False)
    # The write URL: CELERY_BROKER_URL in the environment (the test run's) would win over
    # the broker URL given here.
    app.conf.broker_write_url = f"redis://127.0.0.1:{port}/0"
    app.conf.broker_transport_options = {"socket_timeout": 0.5, "socket_connect_timeout": 0.5}
    beat = Scheduler(app=app, lazy=True, schedule_filename=str(tmp_path / "schedule"))

    assert beat._broker_answered() is False
    wait_for(lambda: accepted, timeout=10, what="the try's connection accepted")
    assert len(accepted) == 1  # (a second try would have come before the answer above)
