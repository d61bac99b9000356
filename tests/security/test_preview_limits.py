"""Issue 19, finding 2: two large previews held both web workers for 24 s and the front
page waited. The preview now has a rate per writer, a cap on renders at once across the
web processes, and a time limit per render (blogpublish.desk.limits). These tests hold
the refusals; bench/preview.py measures what a reader of the site sees meanwhile.
"""

from __future__ import annotations

import contextlib
import threading
from datetime import timedelta

import psycopg
import pytest
from django.db import connection
from django.utils import timezone

from blogpublish.desk import limits
from blogpublish.models import PreviewBudget, PreviewSlot
from blogpublish.site import documents
from publishing.models import Article
from tests.support.admin_http import admin_session
from tests.support.desk import article_form
from tests.support.waiting import wait_for

PREVIEW = "/admin/publishing/article/preview/"


def form(body: str = "Some *text*.") -> dict:
    return article_form(title="预览 Preview", body=body)


@pytest.mark.django_db
def test_preview__over_the_writers_rate_is_429_with_retry_after(
    admin_client, django_user_model, client, settings
):
    settings.PREVIEW_RATE_PER_MINUTE = 1  # one more a minute, after a burst of 3
    settings.PREVIEW_BURST = 3

    answers = [admin_client.post(PREVIEW, form()) for _ in range(4)]

    assert [a.status_code for a in answers] == [200, 200, 200, 429]
    refused = answers[-1]
    assert 0 < int(refused["Retry-After"]) <= 60
    assert "Too many previews" in refused.json()["error"]
    # another writer has a budget of their own
    other = django_user_model.objects.create_superuser("other", "o@example.com", "x" * 16)
    client.force_login(other)
    assert client.post(PREVIEW, form()).status_code == 200


@pytest.mark.django_db
def test_preview__slot_held_by_another_process_is_429_until_its_lease_ends(admin_client):
    held = PreviewSlot.objects.create(
        number=0, holder="another-web-process", held_until=timezone.now() + timedelta(seconds=30)
    )

    refused = admin_client.post(PREVIEW, form())

    assert refused.status_code == 429
    assert refused["Retry-After"] == "1"
    assert "busy" in refused.json()["error"]
    # a process that died holding it: its lease ends, and the slot is free again
    held.held_until = timezone.now() - timedelta(seconds=1)
    held.save()
    assert admin_client.post(PREVIEW, form()).status_code == 200
    assert PreviewSlot.objects.get(number=0).held_until is None  # released after the render


def page_when_released(release_file):
    """A renderer that waits for `release_file` to exist (in the forked render process)."""

    def article_page(article):
        with contextlib.suppress(AssertionError):  # after 30 s it renders all the same
            wait_for(release_file.exists, timeout=30, interval=0.01, what="the release")
        return "<html><head></head><body>released</body></html>"

    return article_page


@pytest.mark.django_db(transaction=True)
def test_preview__cap_on_renders_at_once_over_http(
    live_server, admin_user, settings, monkeypatch, tmp_path
):
    settings.PREVIEW_MAX_CONCURRENT = 1
    settings.PREVIEW_TIME_LIMIT = 10
    release = tmp_path / "release"
    monkeypatch.setattr(documents, "article_page", page_when_released(release))
    first_writer = admin_session(live_server.url, admin_user)
    second_writer = admin_session(live_server.url, admin_user)
    first: dict = {}

    def send_first() -> None:
        first["answer"] = first_writer.post(live_server.url + PREVIEW, data=form(), timeout=60)

    sender = threading.Thread(target=send_first)
    sender.start()
    try:
        wait_for(
            lambda: PreviewSlot.objects.filter(held_until__gt=timezone.now()).exists(),
            timeout=30,
            what="the first preview to hold the render slot",
        )

        refused = second_writer.post(live_server.url + PREVIEW, data=form(), timeout=60)

        assert refused.status_code == 429, refused.text
        assert refused.headers["Retry-After"] == "1"
    finally:
        release.touch()
        sender.join(timeout=60)
    assert first["answer"].status_code == 200
    assert "released" in first["answer"].json()["html"]


def never_finishes(article):
    threading.Event().wait(60)  # far beyond the limit: without it the test would wait and fail
    return "<html><head></head><body>finished after all</body></html>"


def computes_for_ever(article):
    while True:  # a renderer's runaway loop: CPU time, not waiting
        pass


def waits_then_finishes(article):
    threading.Event().wait(1.5)  # three times its CPU limit, but not on the CPU
    return "<html><head></head><body>finished after waiting</body></html>"


@pytest.mark.django_db
def test_preview__render_over_the_time_limit_is_stopped_with_a_message(
    admin_client, settings, monkeypatch
):
    settings.PREVIEW_TIME_LIMIT = 0.5
    # its wall limit far off: only the CPU time can stop it, however busy the host
    monkeypatch.setattr(limits, "WALL_MARGIN", 120)
    monkeypatch.setattr(documents, "article_page", computes_for_ever)

    answer = admin_client.post(PREVIEW, form())

    assert answer.status_code == 200
    body = answer.json()
    assert body["html"] == ""
    assert any("rendering took longer than 0.5 s" in p for p in body["problems"]), body
    assert not PreviewSlot.objects.filter(held_until__isnull=False).exists()  # released


@pytest.mark.django_db
def test_preview__a_render_waiting_without_the_cpu_is_not_stopped_by_its_cpu_limit(
    admin_client, settings, monkeypatch
):
    """A review's finding: at nice 19 on a host busy with readers (three test runs on two
    cores), a short draft's shared preview was stopped "after 10 s" of waiting for the
    CPU. The limit is the CPU a render takes from readers, not the wall clock."""
    settings.PREVIEW_TIME_LIMIT = 0.5
    monkeypatch.setattr(documents, "article_page", waits_then_finishes)

    answer = admin_client.post(PREVIEW, form())

    assert answer.json()["problems"] == []
    assert "finished after waiting" in answer.json()["html"]


@pytest.mark.django_db
def test_preview__a_render_that_waits_for_ever_is_stopped_at_its_wall_limit(
    admin_client, settings, monkeypatch
):
    settings.PREVIEW_TIME_LIMIT = 0.5
    monkeypatch.setattr(limits, "WALL_MARGIN", 1.0)  # 0.5 × 3 + 1 s
    monkeypatch.setattr(documents, "article_page", never_finishes)

    answer = admin_client.post(PREVIEW, form())

    body = answer.json()
    assert body["html"] == ""
    assert any("it waited 2.5 s for the server" in p for p in body["problems"]), body
    assert not PreviewSlot.objects.filter(held_until__isnull=False).exists()  # released


@pytest.mark.django_db
def test_preview__limits_that_cannot_be_read_refuse_it(admin_client):
    # A real database failure: the budget's table is gone (the test's rollback restores it).
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE {PreviewBudget._meta.db_table}")

    answer = admin_client.post(PREVIEW, form())

    assert answer.status_code == 503  # closed: no render without its limits
    assert answer["Retry-After"] == "5"
    assert "unavailable" in answer.json()["error"]


def _backend() -> object:
    """Which server session (PostgreSQL) or which connection object (SQLite) answers
    this process's queries."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            return cursor.fetchone()[0]
    connection.ensure_connection()
    return id(connection.connection)


@pytest.mark.django_db(transaction=True)
def test_preview__the_render_child_queries_over_a_connection_of_its_own():
    """Over the parent's socket a TLS session's state moved on in the child, and the
    web process's next statement failed ("decryption failed or bad record mac": a
    review's finding). Outside a transaction, as every request's preview is, the child
    opens its own connection and closes it; the parent's keeps working."""
    parent = _backend()

    child = limits.run_with_time_limit(lambda _: _backend(), None, seconds=10)

    assert child != parent
    assert _backend() == parent


def _sessions_waiting_on_a_lock() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock'"
        )
        return cursor.fetchone()[0]


@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="a lock held by another session")
@pytest.mark.django_db(transaction=True)
def test_preview__a_render_stopped_while_waiting_on_a_lock_leaves_no_session(settings, monkeypatch):
    """The child's own session waited on a lock (a migration's) after the child was
    killed at its wall limit, until the lock went: one a preview (a review of the
    mend). Its statements now end by the wall limit."""
    settings.PREVIEW_TIME_LIMIT = 0.2
    monkeypatch.setattr(limits, "WALL_MARGIN", 0.5)
    params = connection.get_connection_params()
    with psycopg.connect(**params, autocommit=False) as locker:
        locker.execute("LOCK TABLE publishing_article IN ACCESS EXCLUSIVE MODE")
        with pytest.raises(limits.PreviewTooSlow):
            limits.run_with_time_limit(
                lambda _: Article.objects.count(), None, seconds=settings.PREVIEW_TIME_LIMIT
            )
        wait_for(
            lambda: _sessions_waiting_on_a_lock() == 0,
            timeout=10,
            what="the stopped render's session to end while the lock is held",
        )
