"""The reader fields live (issue 21): through a real worker (prefork) and Redis, on the
run's database, a byline, tags, a description and a language reach the page and both
feeds; changing only one of them republishes the article; the live tags' index follows
the live version (a re-tag replaces it)."""

from __future__ import annotations

import json

import pytest
from django.conf import settings

from blogpublish.site import StaticSitePublisher
from publishing.models import Article, ArticleStatus, ArticleTag, TagKind
from tests.support.settling import wait_settled
from tests.support.site import read_feed, run_full_check
from tests.support.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def site(worker):
    run_full_check(StaticSitePublisher())
    return settings.SITE_ROOT


def live_tags(article: Article) -> set[str]:
    rows = ArticleTag.objects.filter(article=article, tag__kind=TagKind.TAG)
    return set(rows.values_list("tag__name", flat=True))


def wait_live(article: Article, what: str) -> None:
    """Published with its current content, and its feeds refreshed after."""
    wait_for(
        lambda: Article.objects.filter(
            pk=article.pk, status=ArticleStatus.PUBLISHED, published_hash=article.content_hash
        ).exists(),
        timeout=30,
        what=what,
    )
    wait_settled()


def test_byline_tags_description_language_reach_page_and_feeds_and_an_edit_of_one_republishes(
    site, make_article
):
    article = make_article(
        title="你好，世界",
        body="The *first* words.",
        byline="王小明",
        tags=["数据库", "Python"],
        description="A greeting.",
        language="zh-Hans",
    )
    wait_live(article, "the article to go live")

    page = (site / article.slug / "index.html").read_text(encoding="utf-8")
    assert (
        '<html lang="zh-Hans">' in page
        and 'rel="author" href="/author/%E7%8E%8B%E5%B0%8F%E6%98%8E/">王小明</a>' in page
    )
    (entry,) = read_feed(site).entries
    assert entry.author == "王小明" and [t.term for t in entry.tags] == ["数据库", "Python"]
    assert "<em>first</em>" in entry.content[0].value
    (item,) = json.loads((site / "feed.json").read_text(encoding="utf-8"))["items"]
    assert item["authors"] == [{"name": "王小明"}] and item["summary"] == "A greeting."
    assert live_tags(article) == {"数据库", "Python"}
    assert (site / "404.html").exists() and (site / "favicon.svg").exists()

    # Only the byline and the tags change: new content, published again.
    article.byline, article.tags = "Wang Xiaoming", ["Python", "web"]
    article.save()
    assert article.status == ArticleStatus.PENDING
    wait_live(article, "the new byline to go live")

    page = (site / article.slug / "index.html").read_text(encoding="utf-8")
    assert 'rel="author" href="/author/wang-xiaoming/">Wang Xiaoming</a>' in page
    assert read_feed(site).entries[0].author == "Wang Xiaoming"
    assert live_tags(article) == {"Python", "web"}  # the old tag's row is gone

    # Saved unchanged: nothing to publish.
    article.save()
    assert Article.objects.get(pk=article.pk).status == ArticleStatus.PUBLISHED
