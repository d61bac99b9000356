"""The task messages a release sends, as they go on the wire (issue 23, item 3; the
contract is in docs/operations.md, "Task messages").

`capture()` sends every task the way the code sends it (the dispatch functions, Beat's
entries) to a private redis-server and records each message: the task, Celery's
headers and ours, the properties, and the body exactly as serialized. `signatures()` is
what each registered task accepts. `python -m tests.support.messages DIR` writes both
into DIR as fixtures (DIR/<name>.json, DIR/contract.json); run it in a checkout of the
release being recorded (tests/fixtures/messages/README.md), so the messages are that
release's.
"""

from __future__ import annotations

import inspect
import json
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from celery.signals import before_task_publish
from kombu.serialization import dumps

# What a message's arguments name: ids far above any the tests' sequences reach, so a
# replay can make the rows they point to.
ARTICLE_ID, ETA_ARTICLE_ID, DELETED_ARTICLE_ID, DELIVERY_ID = 910001, 910002, 910003, 910004
REQUEST_ID = "5f0c3e1e9b2a4c7d8e6f1a2b3c4d5e6f"


def _sends() -> list[tuple[str, str, Callable[[], object]]]:
    """(fixture name, who sends it, a function that sends it as that code does)."""
    from celery.beat import ScheduleEntry, Scheduler
    from django.conf import settings

    from publishing import dispatch, logcontext
    from work.celery_app import celery_app

    def beat(entry: str) -> Callable[[], object]:
        def send() -> object:
            app = celery_app()
            config = {k: v for k, v in settings.CELERY_BEAT_SCHEDULE[entry].items()}
            scheduled = ScheduleEntry(name=entry, app=app, **config)
            return Scheduler(app=app, lazy=True).apply_async(scheduled, advance=False)

        return send

    def from_a_request() -> object:
        with logcontext.log_context(request_id=REQUEST_ID):
            return dispatch.dispatch_publish(ARTICLE_ID)

    soon = datetime.now(UTC) + timedelta(seconds=1)
    snapshot = {
        "id": DELETED_ARTICLE_ID,
        "uid": "0b5a3c9e-7d1f-4e2a-9c8b-6a5d4e3f2a1b",
        "slug": "message-contract-deleted",
        "published_slug": "message-contract-deleted",
        "title": "删除了 — deleted",
        "event": "deleted",
    }
    return [
        ("publish_article", "a save in the admin or the API (web)", from_a_request),
        (
            "publish_article-eta",
            "a scheduled article armed, a message sent again for its due time",
            lambda: dispatch.dispatch_publish(ETA_ARTICLE_ID, eta=soon),
        ),
        (
            "publish_batch",
            "an import, a catch-up over a backlog",
            lambda: dispatch.dispatch_batches(1),
        ),
        (
            "unpublish_article",
            "a delete or a withdraw",
            lambda: dispatch.dispatch_unpublish(snapshot),
        ),
        (
            "deliver_webhook",
            "a publish's outbox row",
            lambda: dispatch.dispatch_deliveries([DELIVERY_ID]),
        ),
        ("refresh_site", "an outcome's deferred pass", lambda: dispatch.dispatch_refresh(eta=soon)),
        (
            "refresh_site-watchdog",
            "a pass's watchdog",
            lambda: dispatch.dispatch_refresh(eta=soon, after=7),
        ),
        ("publish_catch_up", "Beat", beat("publish-catch-up")),
        ("digest_daily", "Beat", beat("digest")),
        ("digest_resume", "Beat", beat("digest-resume")),
    ]


def capture() -> list[dict]:
    """Every message of `_sends()`, sent to a private redis-server, as recorded when it
    was published."""
    from tests.support.broker import broker
    from tests.support.processes import PrivateRedis, free_port
    from work.celery_app import celery_app

    messages: list[dict] = []
    current: dict = {}

    def record(sender=None, body=None, headers=None, properties=None, routing_key=None, **kw):
        content_type, encoding, payload = dumps(body, serializer=celery_app().conf.task_serializer)
        keep = ("correlation_id", "reply_to", "priority", "delivery_mode")
        messages.append(
            {
                "name": current["name"],
                "sent_by": current["by"],
                "captured_at": datetime.now(UTC).isoformat(),
                "task": sender,
                "headers": headers,
                "properties": {
                    "content_type": content_type,
                    "content_encoding": encoding,
                    **{k: v for k, v in (properties or {}).items() if k in keep},
                },
                "body": payload if isinstance(payload, str) else payload.decode(encoding),
            }
        )

    redis = PrivateRedis(free_port()).start()
    before_task_publish.connect(record, weak=False)
    try:
        with broker(redis.url):
            for name, by, send in _sends():
                current.update(name=name, by=by)
                before = len(messages)
                send()
                assert len(messages) == before + 1, f"{name}: {len(messages) - before} sent"
    finally:
        before_task_publish.disconnect(record)
        redis.stop()
    return messages


def signatures() -> dict[str, list[dict]]:
    """Each project task's parameters, as a worker binds a message's args and kwargs."""
    import digest.tasks  # noqa: F401  (registers the tasks)
    import publishing.tasks  # noqa: F401
    from work.celery_app import celery_app

    tasks = celery_app().tasks
    result = {}
    for name in sorted(tasks):
        if name.startswith("celery."):
            continue
        parameters = inspect.signature(tasks[name].run).parameters.values()
        result[name] = [
            {
                "name": p.name,
                "kind": p.kind.name,
                "default": None if p.default is p.empty else repr(p.default),
                "required": p.default is p.empty,
            }
            for p in parameters
        ]
    return result


def signature_of(parameters: list[dict]) -> inspect.Signature:
    """A contract's recorded parameters as a Signature to bind a message's arguments to."""
    return inspect.Signature(
        [
            inspect.Parameter(
                p["name"],
                getattr(inspect.Parameter, p["kind"]),
                default=inspect.Parameter.empty if p["required"] else None,
            )
            for p in parameters
        ]
    )


def write(directory: Path, release: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for message in capture():
        path = directory / f"{message['name']}.json"
        path.write_text(json.dumps(message, indent=2, ensure_ascii=False) + "\n")
    contract = {"release": release, "tasks": signatures(), "headers": ["request_id"]}
    (directory / "contract.json").write_text(json.dumps(contract, indent=2) + "\n")


if __name__ == "__main__":
    import django

    django.setup()
    write(Path(sys.argv[1]), sys.argv[2])
