"""Old and new code together (issue 23, item 3; docs/operations.md, "Task messages").

- Every message the previous release sent (tests/fixtures/messages/<release>/, recorded
  from its checkout) is put on the broker as it was serialized, body byte for byte, and
  run by a real worker of this release; each must succeed, and the ones that name a row
  must do their work on it. Only the task id is new and the eta/expires are moved by
  the time since the recording (a message that expired is dropped, by design).
- Every message this release sends would run on the previous release: the same task
  names, arguments that bind to the previous release's task signatures
  (contract.json), and every header the previous release's message had.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from datetime import datetime
from functools import partial
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import timezone

from publishing.models import Article, ArticleStatus
from tests.support.messages import ARTICLE_ID, ETA_ARTICLE_ID, capture, signature_of, signatures
from tests.support.migration_safety import ROOT, previous_release
from tests.support.waiting import wait_for
from work.celery_app import celery_app

RELEASE = previous_release()["release"]
FIXTURES = ROOT / "tests" / "fixtures" / "messages" / RELEASE


def recorded() -> list[dict]:
    return [
        json.loads(path.read_text())
        for path in sorted(FIXTURES.glob("*.json"))
        if path.name != "contract.json"
    ]


CONTRACT = json.loads((FIXTURES / "contract.json").read_text())


def test_fixtures__every_task_of_the_previous_release_has_a_recorded_message():
    assert {m["task"] for m in recorded()} == set(CONTRACT["tasks"])


def arguments(message: dict) -> tuple[list, dict]:
    args, kwargs, _embed = json.loads(message["body"])
    return args, kwargs


def replay(message: dict) -> str:
    """Put `message` on this run's broker as it was serialized; its new task id."""
    task_id = str(uuid.uuid4())
    headers = {**message["headers"], "id": task_id, "root_id": task_id}
    moved = timezone.now() - datetime.fromisoformat(message["captured_at"])
    for key in ("eta", "expires"):
        if headers.get(key):
            headers[key] = (datetime.fromisoformat(headers[key]) + moved).isoformat()
    properties = message["properties"]
    app = celery_app()
    queue = app.amqp.router.route({}, message["task"])["queue"]
    # As Celery addresses it (app.amqp.send_task_message): a direct queue through the
    # default exchange by its name (both queues share the direct exchange's binding),
    # a quorum queue's topic exchange by its routing key.
    exchange, routing_key = "", queue.name
    if queue.exchange.type != "direct":
        exchange, routing_key = queue.exchange.name, queue.routing_key
    with app.connection_for_write() as connection:
        app.amqp.Producer(connection).publish(
            message["body"].encode(properties["content_encoding"]),
            exchange=exchange,
            routing_key=routing_key,
            declare=[queue],
            content_type=properties["content_type"],
            content_encoding=properties["content_encoding"],
            headers=headers,
            correlation_id=task_id,
            reply_to=properties.get("reply_to"),
            retry=True,
        )
    return task_id


def ran(worker, name: str, task_id: str) -> bool:
    log = worker.log.read_text(errors="replace")
    for failed in (f"{name}[{task_id}] raised", f"{name}[{task_id}] retry", "unregistered task"):
        assert failed not in log, worker.tail(40)
    return f"{name}[{task_id}] succeeded" in log


def pending_row(pk: int) -> Article:
    """A due pending article with this id, written without sending anything (only the
    replayed message may publish it)."""
    article = Article(
        pk=pk,
        title=f"消息 contract {pk}",
        slug=f"message-contract-{pk}",
        body="Sent by the previous release.",
        publish_at=timezone.now().replace(microsecond=0),
    )
    article.content_hash = article._content_hash()
    Article.objects.bulk_create([article])
    return article


def prepare(message: dict) -> Callable[[], None]:
    """Make the rows and files `message` names; returns the check of its work."""
    args, _ = arguments(message)
    if message["task"] == "publishing.tasks.publish_article":
        assert args[0] in (ARTICLE_ID, ETA_ARTICLE_ID)
        pending_row(args[0])

        def published() -> None:
            assert Article.objects.get(pk=args[0]).status == ArticleStatus.PUBLISHED, message

        return published
    if message["task"] == "publishing.tasks.unpublish_article":
        page = Path(settings.SITE_ROOT) / args[0]["published_slug"] / "index.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text("<p>a page the delete takes off</p>")

        def gone() -> None:
            assert not page.exists(), message

        return gone
    return lambda: None


@pytest.mark.django_db(transaction=True)
def test_messages_of_the_previous_release__run_on_this_release(worker):
    """All at once (one database flush for the lot); each must succeed and do its work."""
    checks = {}
    for message in recorded():
        checks[message["name"]] = (message, prepare(message))
    sent = {name: replay(message) for name, (message, _) in checks.items()}

    for name, (message, check) in checks.items():
        wait_for(partial(ran, worker, message["task"], sent[name]), timeout=60, what=name)
        wait_for(partial(passes, check), timeout=30, what=f"the work of {name}")


def passes(check: Callable[[], None]) -> bool:
    try:
        check()
    except AssertionError:
        return False
    return True


def test_messages_this_release_sends__run_on_the_previous_release():
    """What the previous release's workers get from this release's web, workers and
    Beat during a rolling deploy: known task names, arguments its tasks bind, and every
    header its own messages carried."""
    old = {m["name"]: m for m in recorded()}
    problems = []
    for message in capture():
        name, task = message["name"], message["task"]
        if task not in CONTRACT["tasks"]:
            problems.append(f"{name}: {task} is unknown to {RELEASE}")
            continue
        args, kwargs = arguments(message)
        try:
            signature_of(CONTRACT["tasks"][task]).bind(*args, **kwargs)
        except TypeError as exc:
            problems.append(
                f"{name}: {task}{tuple(args)} {kwargs} does not bind in {RELEASE}: {exc}"
            )
        if name in old:
            missing = set(old[name]["headers"]) - set(message["headers"])
            if missing:
                problems.append(
                    f"{name}: headers {RELEASE} sent and this release does not: {missing}"
                )
    assert not problems, "\n".join(problems)


def test_contract__this_release_still_has_every_task_of_the_previous_one_and_binds_its_messages():
    current = signatures()
    for message in recorded():
        assert message["task"] in current, f"{message['task']} is gone: {RELEASE}'s messages fail"
        args, kwargs = arguments(message)
        signature_of(current[message["task"]]).bind(*args, **kwargs)


def test_contract__the_docs_name_every_task_and_its_arguments():
    docs = (ROOT / "docs" / "operations.md").read_text()
    section = docs[docs.index("### Task messages") :]
    rows = {
        line.split("`")[1]: line.rstrip(" |").rsplit("|", 1)[-1].strip()
        for line in section.splitlines()
        if line.startswith("| `")
    }
    for task, parameters in signatures().items():
        assert f"`{task}`" in section, task
        route = settings.CELERY_TASK_ROUTES.get(task, {}).get("queue", "")
        queue = route.rsplit(".", 1)[-1] if route else "default"  # <queue>.catch-up, …
        assert rows.get(task) == queue, (task, rows.get(task), queue)
        for parameter in parameters:
            assert f"`{parameter['name']}`" in section, (task, parameter["name"])
