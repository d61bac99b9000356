"""The event path: dispatched after commit only, and never held up by the broker."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest
from django.db import transaction

from publishing.models import Article, ArticleStatus
from tests.support.processes import ROOT, free_port

pytestmark = pytest.mark.django_db(transaction=True)

# settings: socket connect/read timeouts of 0.5 s and one publish retry, so a save
# waits about 1-2 s for a broker that is down; the bound here is generous on purpose
# (shared machines are noisy), and still far from "hangs".
SAVE_BOUND_SECONDS = 10


def save_in_subprocess(slug: str, broker_url: str) -> dict:
    env = {**os.environ, "BLOGPUBLISH_TEST_BROKER": broker_url}
    out = subprocess.run(
        [sys.executable, "-m", "tests.support.save_article", slug],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_save_with_broker_refusing_connections_returns_quickly_and_stays_pending():
    closed_port = free_port()  # nothing listens here

    result = save_in_subprocess("refused-broker", f"redis://127.0.0.1:{closed_port}/0")

    assert result["seconds"] < SAVE_BOUND_SECONDS
    assert Article.objects.get(pk=result["id"]).status == ArticleStatus.PENDING


def test_save_with_broker_that_never_answers_returns_in_bounded_time():
    with socket.socket() as black_hole:
        black_hole.bind(("127.0.0.1", 0))
        black_hole.listen(64)  # the kernel accepts connections; nobody ever replies
        port = black_hole.getsockname()[1]

        result = save_in_subprocess("silent-broker", f"redis://127.0.0.1:{port}/0")

    assert result["seconds"] < SAVE_BOUND_SECONDS
    assert Article.objects.get(pk=result["id"]).status == ArticleStatus.PENDING


def test_rolled_back_transaction_dispatches_nothing(sent_tasks):
    with pytest.raises(RuntimeError), transaction.atomic():
        article = Article(title="Never committed", slug="never-committed", body="x")
        article.full_clean()
        article.save()
        raise RuntimeError("the view failed after saving")

    assert not Article.objects.filter(slug="never-committed").exists()
    assert sent_tasks == []


def test_dispatch_waits_for_the_commit(sent_tasks):
    with transaction.atomic():
        article = Article(title="Committed later", slug="committed-later", body="x")
        article.full_clean()
        article.save()
        assert sent_tasks == []  # saved, but not yet visible to any worker

    assert sent_tasks == [article.pk]
