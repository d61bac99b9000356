"""The page guard's relaxed commit stays inside its own transaction (issue 17,
finding 4): a delete calls the guard inside the delete's transaction, and that
transaction must still commit synchronously, since its `article.deleted` webhook goes
out after the commit (PostgreSQL only: SQLite has no asynchronous commit)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from blogpublish.site.lock import page_guard, snapshot

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="synchronous_commit is PostgreSQL's"
)


def synchronous_commit() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        return cursor.fetchone()[0]


def test_delete__its_own_transaction_commits_synchronously(make_article):
    # Scheduled, so no worker of the run publishes it while the test deletes it.
    article = make_article(title="Deleted durably", publish_at=timezone.now() + timedelta(days=1))

    with transaction.atomic():
        article.delete()  # the site publisher's `forget` runs the page guard in here
        assert synchronous_commit() == "on"


def test_page_guard__relaxes_only_a_transaction_it_opened(transactional_db):
    with page_guard(slugs=["a-page"]):
        assert synchronous_commit() == "off"  # its own bookkeeping: one fsync less

    with transaction.atomic():
        with page_guard(slugs=["a-page"]):
            pass
        assert synchronous_commit() == "on"


def test_snapshot__its_own_transaction_is_relaxed(transactional_db):
    with snapshot():
        assert synchronous_commit() == "off"
