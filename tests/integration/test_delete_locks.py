"""A bulk delete takes its articles' page guards first, in the guards' own order
(publishing.models.ArticleQuerySet.delete): taken one at a time as each row's `forget`
ran, in the rows' order, they deadlocked with a group's guard holding one and waiting
for another (a CI rehearsal of 2026-12-05, PostgreSQL: `test_import.py`'s delete beside
the worker's publishes)."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, connections, transaction

from publishing.models import Article
from tests.support.live_tags import listed_with_tags
from tests.support.waiting import wait_for
from work.db import advisory_key, advisory_locks

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's locks"),
]


def key(article: Article) -> int:
    return advisory_key("article", article.pk)


def waiting_for_an_advisory_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")
        return cursor.fetchone()[0] > 0


def test_a_bulk_delete_and_a_group_guard_never_wait_for_each_other(settings, tmp_path):
    """Two rows whose guards' order differs from the order the delete reaches them in,
    whichever way round that is (two pairs: the lower id's key the higher, and the
    lower): a group's guard holds the lower key, and asks for the higher once the
    delete waits for the lower."""
    settings.SITE_ROOT = tmp_path / "site"
    settings.PUBLISH_PUBLISHERS = ["blogpublish.site.StaticSitePublisher"]
    made = listed_with_tags(*([] for _ in range(8)), slug="deleted")
    one = next((a, b) for a in made for b in made if a.pk < b.pk and key(a) > key(b))
    rest = [a for a in made if a not in one]
    other = next((a, b) for a in rest for b in rest if a.pk < b.pk and key(a) < key(b))
    for pair in (one, other):
        race(*sorted(pair, key=key))


def race(low: Article, high: Article) -> None:
    holding, done, errors = threading.Event(), threading.Event(), []

    def group_guard() -> None:
        """A guard over both, as a group's takes them: the lower key, then the higher,
        the higher once the delete waits."""
        try:
            with transaction.atomic():
                advisory_locks([key(low)])
                holding.set()
                wait_for(waiting_for_an_advisory_lock, interval=0.01, what="the delete's wait")
                advisory_locks([key(high)])
        except Exception as exc:  # reported to the test's thread
            errors.append(exc)
        finally:
            connections.close_all()
            done.set()

    guard = threading.Thread(target=group_guard)
    guard.start()
    assert holding.wait(30)
    try:
        Article.objects.filter(pk__in=[low.pk, high.pk]).delete()
    finally:
        assert done.wait(60)
        guard.join()
    assert not errors, errors
    assert not Article.objects.filter(pk__in=[low.pk, high.pk]).exists()
