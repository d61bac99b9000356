"""Two PATCHes of one article at once, each of another field, both land (a review: 38
of 40 rounds lost one, since each request read the row, then wrote every content field
from its copy). Deterministic: the first PATCH is held after its read until the second
has either finished or waits for the row's lock."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable

import pytest
from django.db import connection
from django.test import Client

from api import endpoints
from publishing.models import Article, Story
from publishing.services.authoring import article_update
from publishing.services.stories import story_save
from tests.support.waiting import wait_for

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's row locks"),
]


def lock_waiters() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        return cursor.fetchone()[0]


def patch(token: str, article_id: int, fields: dict) -> int:
    """A PATCH of `fields` on a connection of its own: its status."""
    try:
        client = Client(headers={"Authorization": f"Bearer {token}"})
        response = client.patch(
            f"/api/articles/{article_id}", json.dumps(fields), content_type="application/json"
        )
        return response.status_code
    finally:
        connection.close()


def beside_a_held_patch(monkeypatch, token, article_id, fields, other: Callable[[], object]):
    """A PATCH of `fields`, held just after it read the article, and `other` run on a
    connection of its own meanwhile; the PATCH goes on once `other` has ended or waits
    for a lock. (The PATCH's status, what `other` returned or the repr of its error.)"""
    real_content = endpoints._content
    read, go_on = threading.Event(), threading.Event()
    outcomes: dict[str, object] = {}

    def held_after_the_read(payload, **kwargs):
        found = real_content(payload, **kwargs)
        if threading.current_thread().name == "held":
            read.set()
            go_on.wait(30)
        return found

    def run_other() -> None:
        try:
            outcomes["other"] = other()
        except Exception as exc:  # what the tests are about: a lost race's error
            outcomes["other"] = repr(exc)
        finally:
            connection.close()

    monkeypatch.setattr(endpoints, "_content", held_after_the_read)
    held = threading.Thread(
        target=lambda: outcomes.update(patch=patch(token, article_id, fields)), name="held"
    )
    held.start()
    assert read.wait(30)
    second = threading.Thread(target=run_other)
    second.start()
    wait_for(
        lambda: not second.is_alive() or lock_waiters() > 0,
        timeout=30,
        what="the other to finish or to wait for a lock",
    )
    go_on.set()
    held.join(30)
    second.join(30)
    return outcomes.get("patch"), outcomes.get("other")


def test_two_patches_of_other_fields_at_once_both_land(make_token, monkeypatch):
    _user, token = make_token()
    article = Article.objects.create(title="Original", body="original body", slug="two-patches")

    answers = beside_a_held_patch(
        monkeypatch,
        token,
        article.pk,
        {"title": "New title"},
        lambda: patch(token, article.pk, {"body": "new body"}),
    )

    assert answers == (200, 200)
    row = Article.objects.get(pk=article.pk)
    assert (row.title, row.body) == ("New title", "new body")


def test_a_patch_beside_an_admin_save_of_the_same_article_waits_instead_of_deadlocking(
    make_token, monkeypatch
):
    """A PATCH locks the article's row, then its save the address; an admin save took
    the address first, then the row, and the two deadlocked, one of them failing (a
    review's finding). Every save now locks the row first (Article.save). Both land."""
    _user, token = make_token()
    article = Article.objects.create(title="Original", body="original body", slug="side-by-side")

    def admin_save() -> str:
        article_update(article=Article.objects.get(pk=article.pk), body="admin body")
        return "saved"

    outcomes = beside_a_held_patch(
        monkeypatch, token, article.pk, {"title": "API title"}, admin_save
    )

    assert outcomes == (200, "saved")
    assert Article.objects.get(pk=article.pk).body == "admin body"


def test_patches_of_a_draft_at_once_each_of_another_field_all_land(make_token, monkeypatch):
    """A draft's PATCH read the story without its lock, then saved every field of its
    copy (a review: of three PATCHes at once, one or two changes were lost, each
    answered 200). The PATCH of the title is held after its read while the body's and
    the tags' are sent: they wait for the story's lock, then each edits the draft as
    the one before left it."""
    _user, token = make_token()
    draft = story_save(title="Original", body="original body", slug="three-patches")

    def body_then_tags() -> tuple[int, int]:
        return patch(token, draft.pk, {"body": "new body"}), patch(token, draft.pk, {"tags": ["x"]})

    answers = beside_a_held_patch(monkeypatch, token, draft.pk, {"title": "T"}, body_then_tags)

    assert answers == (200, (200, 200))
    row = Story.objects.get(pk=draft.pk)
    assert (row.title, row.body, row.tags, row.version) == ("T", "new body", ["x"], 4)
