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
from tests.support.waiting import assert_flower_refuses_to_start, wait_for

# Flower watches the broker (its events, its queues): runs again on RabbitMQ.
pytestmark = pytest.mark.broker

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
    assert_flower_refuses_to_start(proc, named)


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


def procfile_flower_args(port: int, db: str) -> list[str]:
    """Flower's arguments as the Procfile gives them, on this test's port and db file."""
    line = next(
        line
        for line in (processes.ROOT / "Procfile").read_text().splitlines()
        if line.startswith("flower:")
    )
    words = line.split()[line.split().index("flower", 1) + 1 :]
    replaced = {"--port": str(port), "--db": db, "--address": "127.0.0.1"}
    return [
        f"{w.split('=')[0]}={replaced[w.split('=')[0]]}" if w.split("=")[0] in replaced else w
        for w in words
    ]


@pytest.mark.django_db(transaction=True)
def test_flower_as_the_procfile_runs_it_lists_publishes_by_article_and_keeps_them(
    worker, make_article, tmp_path
):
    """Events on (worker -E, sent events), the task's arguments name the article, and
    with --persistent a restarted Flower still knows the tasks it saw."""
    port = processes.free_port()
    args = procfile_flower_args(port, str(tmp_path / "flower.db"))
    assert "--persistent=True" in args
    url, auth = f"http://127.0.0.1:{port}", basic(GOOD)

    def start() -> processes.Proc:
        proc = processes.spawn(
            "flower", processes.celery_cmd("flower", *args), env={"FLOWER_BASIC_AUTH": GOOD}
        )

        def answers() -> bool:
            if not proc.alive():
                raise AssertionError(f"flower exited:\n{proc.tail()}")
            try:
                return requests.get(f"{url}/healthcheck", timeout=2).status_code == 200
            except requests.ConnectionError:
                return False

        wait_for(answers, timeout=60, what="flower to answer")
        return proc

    def task_of(article_id: int) -> dict | None:
        tasks = requests.get(f"{url}/api/tasks", headers=auth, timeout=10).json()
        for task in tasks.values():
            if task.get("args") == f"(article_id={article_id})" and task["state"] == "SUCCESS":
                return task
        return None

    proc = start()
    try:
        # Flower sees only the events sent after it subscribed, which may be a moment
        # after it answers (a task whose sent event came before that is seen without
        # it): publish until one is seen from its sender's event to its success.
        def seen_whole(article_id: int) -> dict | None:
            task = task_of(article_id)
            return task if task and task.get("sent") is not None else None

        def published_and_seen() -> tuple[int, dict] | None:
            article = make_article(title="Watched in Flower")
            try:
                return article.pk, wait_for(lambda: seen_whole(article.pk), timeout=5)
            except AssertionError:
                return None

        article_id, task = wait_for(published_and_seen, timeout=90, what="a task in Flower")
        assert task["name"] == "publishing.tasks.publish_article"
        assert task["sent"] is not None  # the sender's event (CELERY_TASK_SEND_SENT_EVENT)
        proc.stop()  # SIGTERM: Flower saves its state
        proc = start()
        assert task_of(article_id) is not None
    finally:
        proc.stop()
