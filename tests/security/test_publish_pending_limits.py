"""The backup executor's per-attempt time limit (issue 8, item 2): a real
`manage.py publish_pending` process, no broker, against an article whose publisher hangs.
The attempt must end inside its lease, as a failed attempt that says why."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time

import psycopg
import pytest
from django.core.management import call_command
from django.db import connection
from django.db.models.signals import post_save

from publishing.models import Article, ArticleStatus, AttemptOutcome, PublishAttempt
from publishing.signals import article_saved
from tests.support.processes import ROOT

pytestmark = pytest.mark.django_db(transaction=True)

LEASE = 4  # seconds: the soft limit is 80 % of it (3.2 s), the hard one 90 %


@pytest.fixture
def undispatched():
    """Saves send nothing, so no worker of the session can take the article first."""
    post_save.disconnect(sender=Article, dispatch_uid="publishing.article_saved")
    yield
    post_save.connect(article_saved, sender=Article, dispatch_uid="publishing.article_saved")


def publish_pending(**env: str) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "manage.py", "publish_pending", "--limit", "1"],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done, time.monotonic() - started


def test_publish_pending__hung_publisher_is_stopped_inside_the_lease(
    undispatched, make_article, chaos
):
    chaos("hangs", hold=30)  # waits for a release that never comes, for 30 s
    article = make_article(slug="hangs")

    done, _elapsed = publish_pending(PUBLISH_LEASE_SECONDS=str(LEASE))

    assert done.returncode == 0, done.stderr
    assert "1 retry" in done.stdout
    [attempt] = PublishAttempt.objects.filter(article=article)
    assert attempt.outcome == AttemptOutcome.RETRY
    assert "AttemptTimeLimitExceeded" in attempt.error and "time limit" in attempt.error
    assert attempt.duration.total_seconds() < LEASE
    article.refresh_from_db()
    assert article.status == ArticleStatus.PENDING
    assert article.lease_expires_at is None and article.next_attempt_at is not None
    assert "time limit" in article.last_error


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="a session ended by the server: PostgreSQL's"
)
def test_publish_pending_loop_goes_on_after_its_database_session_is_dropped(
    undispatched, monkeypatch
):
    """`--loop` is what runs while the broker is down: a database restart (its session
    ended by the server) is said, and the next pass publishes (a review's finding: the
    loop ended with a traceback)."""
    from publishing.management.commands import publish_pending as command

    class Stop(Exception):
        pass

    pauses: list[float] = []

    def pause(seconds: float) -> None:  # between passes, in the command's own thread
        pauses.append(seconds)
        if len(pauses) == 1:
            Article.objects.create(title="After the restart", slug="after-the-restart", body="x")
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid()")
                (pid,) = cursor.fetchone()
            params = connection.get_connection_params()
            with psycopg.connect(**params, autocommit=True) as other:
                other.execute("SELECT pg_terminate_backend(%s)", [pid])
        elif len(pauses) == 3:
            raise Stop

    monkeypatch.setattr(command.time, "sleep", pause)
    out, err = io.StringIO(), io.StringIO()

    with pytest.raises(Stop):
        call_command("publish_pending", "--loop", "--interval", "0.1", stdout=out, stderr=err)

    assert "publish_pending: the pass failed, tried again" in err.getvalue()
    assert out.getvalue().splitlines()[-1] == "publish_pending: 1 published", out.getvalue()
    assert Article.objects.get(slug="after-the-restart").status == ArticleStatus.PUBLISHED


def test_publish_pending_loop_stops_on_ctrl_c_with_a_line_not_a_traceback(
    undispatched, monkeypatch
):
    from publishing.management.commands import publish_pending as command

    def pause(seconds: float) -> None:  # Ctrl-C between passes
        raise KeyboardInterrupt

    monkeypatch.setattr(command.time, "sleep", pause)
    out = io.StringIO()

    call_command("publish_pending", "--loop", stdout=out, stderr=io.StringIO())

    assert out.getvalue().splitlines()[-1] == "publish_pending: stopped", out.getvalue()
