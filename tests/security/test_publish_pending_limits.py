"""The backup executor's per-attempt time limit (issue 8, item 2): a real
`manage.py publish_pending` process, no broker, against an article whose publisher hangs.
The attempt must end inside its lease, as a failed attempt that says why."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
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
