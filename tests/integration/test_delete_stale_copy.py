"""A delete through a copy of the article read before its publish completed (the API's
`DELETE` reads the row, then deletes it; a form holds its copy): the delete's signal
tells the site where the article was live and listed from the row as it is when
deleted, not from the copy, which said "never listed", so its neighbours' links, the
archive and the sitemap waited for the full check (a review's finding)."""

from __future__ import annotations

import pytest

from publishing import signals
from publishing.models import Article, ArticleStatus
from tests.support.waiting import wait_status

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_stale_copys_delete_says_where_the_article_is_listed(worker, monkeypatch):
    """The copy is the saved instance itself, never read again while a real worker
    publishes its row."""
    stale = Article(title="Soon gone", slug="soon-gone", body="Body.")
    stale.full_clean()
    stale.save()
    wait_status(stale.pk, ArticleStatus.PUBLISHED)  # by id: the copy stays as saved
    assert stale.published_publish_at is None
    live = Article.objects.get(pk=stale.pk)
    told = []
    real_forget = signals.article_forget

    def forget(*, snapshot):
        told.append(snapshot)
        real_forget(snapshot=snapshot)

    monkeypatch.setattr(signals, "article_forget", forget)

    stale.delete()

    assert not Article.objects.filter(pk=live.pk).exists()
    [snapshot] = told
    assert snapshot["listed_at"] == live.published_publish_at.isoformat()
    assert snapshot["published_slug"] == "soon-gone"


def test_a_delete_of_a_row_deleted_meanwhile_deletes_nothing_and_tells_nothing(monkeypatch):
    article = Article(title="Twice", slug="twice", body="Body.")
    article.full_clean()
    article.save()
    other = Article.objects.get(pk=article.pk)
    monkeypatch.setattr(signals, "dispatch_unpublish", lambda snapshot: True)
    article.delete()
    told = []
    monkeypatch.setattr(signals, "article_forget", lambda *, snapshot: told.append(snapshot))

    assert other.delete() == (0, {})
    assert told == []
