"""Two PATCHes of one article at once, each of another field, both land (a review: 38
of 40 rounds lost one, since each request read the row, then wrote every content field
from its copy). Deterministic: the first PATCH is held after its read until the second
has either finished or waits for the row's lock."""

from __future__ import annotations

import json
import threading

import pytest
from django.db import connection
from django.test import Client

from api import endpoints
from publishing.models import Article
from publishing.services.authoring import article_update
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


def test_two_patches_of_other_fields_at_once_both_land(make_token, monkeypatch):
    _user, token = make_token()
    article = Article.objects.create(title="Original", body="original body", slug="two-patches")
    real_content = endpoints._content
    title_read, go_on = threading.Event(), threading.Event()

    def held_after_the_read(payload, *, article=None):
        fields = real_content(payload, article=article)
        if "title" in fields:
            title_read.set()
            go_on.wait(30)
        return fields

    monkeypatch.setattr(endpoints, "_content", held_after_the_read)
    answers: dict[str, int] = {}

    def patch(fields: dict) -> None:
        try:
            client = Client(headers={"Authorization": f"Bearer {token}"})
            response = client.patch(
                f"/api/articles/{article.pk}", json.dumps(fields), content_type="application/json"
            )
            answers[next(iter(fields))] = response.status_code
        finally:
            connection.close()

    first = threading.Thread(target=patch, args=({"title": "New title"},))
    first.start()
    assert title_read.wait(30)
    second = threading.Thread(target=patch, args=({"body": "new body"},))
    second.start()
    wait_for(
        lambda: not second.is_alive() or lock_waiters() > 0,
        timeout=30,
        what="the second PATCH to finish or to wait for the row",
    )
    go_on.set()
    first.join(30)
    second.join(30)

    assert answers == {"title": 200, "body": 200}
    row = Article.objects.get(pk=article.pk)
    assert (row.title, row.body) == ("New title", "new body")


def test_a_patch_beside_an_admin_save_of_the_same_article_waits_instead_of_deadlocking(
    make_token, monkeypatch
):
    """An admin save takes the address's lock, then the row's (Article.save, then
    _save_edit); a PATCH that took the row's first, then the address's in its save,
    deadlocked with it, and one of the two failed (a review's finding). Both land."""
    _user, token = make_token()
    article = Article.objects.create(title="Original", body="original body", slug="side-by-side")
    real_content = endpoints._content
    patch_read, go_on = threading.Event(), threading.Event()

    def held_after_the_read(payload, *, article=None):
        fields = real_content(payload, article=article)
        patch_read.set()
        go_on.wait(30)
        return fields

    monkeypatch.setattr(endpoints, "_content", held_after_the_read)
    outcomes: dict[str, object] = {}

    def patch() -> None:
        try:
            client = Client(headers={"Authorization": f"Bearer {token}"})
            response = client.patch(
                f"/api/articles/{article.pk}",
                json.dumps({"title": "API title"}),
                content_type="application/json",
            )
            outcomes["patch"] = response.status_code
        finally:
            connection.close()

    def admin_save() -> None:
        try:
            article_update(article=Article.objects.get(pk=article.pk), body="admin body")
            outcomes["admin"] = "saved"
        except Exception as exc:  # what the test is about: a deadlock's error
            outcomes["admin"] = repr(exc)
        finally:
            connection.close()

    api_thread = threading.Thread(target=patch)
    api_thread.start()
    assert patch_read.wait(30)
    admin_thread = threading.Thread(target=admin_save)
    admin_thread.start()
    wait_for(
        lambda: not admin_thread.is_alive() or lock_waiters() > 0,
        timeout=30,
        what="the admin save to finish or to wait for a lock",
    )
    go_on.set()
    api_thread.join(30)
    admin_thread.join(30)

    assert outcomes == {"patch": 200, "admin": "saved"}
    assert Article.objects.get(pk=article.pk).body == "admin body"
