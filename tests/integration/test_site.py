"""The site readers see, built by a real worker (prefork, concurrency 2) through Redis,
on the run's SQLite or PostgreSQL database."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.conf import settings
from django.utils.encoding import iri_to_uri

from publishing.models import Article, ArticleStatus, PublishAttempt
from publishing.tasks import publish_catch_up
from tests.support.chaos import release
from tests.support.processes import ROOT, free_port
from tests.support.settling import wait_settled
from tests.support.site import read_feed, read_listing, read_site
from tests.support.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def wait_published(article: Article, timeout: float = 30.0) -> Article:
    """Published with its current content, and on the front page under its current
    title: the refresh runs just after the outcome commits, so wait for both."""
    wait_for(
        lambda: Article.objects.filter(
            pk=article.pk, status=ArticleStatus.PUBLISHED, published_hash=article.content_hash
        ).exists(),
        timeout=timeout,
        what=f"article {article.pk} to be published with its current content",
    )
    article.refresh_from_db()
    front = settings.SITE_ROOT / "index.html"

    def listed() -> bool:
        listing = read_listing(front)
        return (article.slug, article.title) in zip(listing.slugs, listing.titles, strict=True)

    wait_for(listed, timeout=timeout, what=f"{article.slug} on the front page")
    return article


def run_catch_up() -> None:
    """The next catch-up, as Celery Beat sends it: the worker runs publish_catch_up,
    whose last step reconciles the site against the database."""
    publish_catch_up.delay()


def test_published_article_is_in_page_index_feed_and_sitemap_with_a_stable_feed_id(
    site, make_article
):
    article = wait_published(make_article(title="First light", body="The first *words*."))

    page = (site / article.slug / "index.html").read_text(encoding="utf-8")
    assert "<em>words</em>" in page
    view = read_site(site)
    assert view.front.slugs == [article.slug]
    assert view.front.titles == ["First light"]
    assert list(view.sitemap) == [article.slug]
    assert view.dirs == {article.slug}
    (entry,) = read_feed(site).entries
    assert entry.id == f"urn:uuid:{article.uid}"
    assert entry.title == "First light"
    assert entry.link == f"{settings.SITE_URL}/{article.slug}/"
    first_updated = entry.updated_parsed

    article.title, article.body = "First light, revised", "The second *words*."
    article.save()
    wait_published(article)

    (edited,) = read_feed(site).entries
    assert edited.id == entry.id
    assert edited.title == "First light, revised"
    assert edited.updated_parsed >= first_updated
    assert read_listing(site / "index.html").titles == ["First light, revised"]
    assert "second" in (site / article.slug / "index.html").read_text(encoding="utf-8")


def test_concurrent_publishes_edits_and_deletes_settle_to_exactly_the_published_set(
    site, make_article, chaos
):
    # The first four are held in the publisher, so edits and deletes land in flight.
    slow = [f"slow-{n}" for n in range(4)]
    for slug in slow:
        chaos(slug, hold=6)
    articles = [make_article(slug=slug, body=f"v1 of {slug}") for slug in slow]
    articles += [make_article(slug=f"quick-{n}", body=f"v1 of quick-{n}") for n in range(16)]
    by_slug = {a.slug: a for a in articles}

    def in_flight(slug: str) -> bool:
        return PublishAttempt.objects.filter(
            article=by_slug[slug], finished_at__isnull=True
        ).exists()

    wait_for(lambda: in_flight("slow-0") and in_flight("slow-1"), what="two attempts running")
    edit(by_slug["slow-0"], title="slow-0 edited", body="v2 of slow-0")
    by_slug.pop("slow-1").delete()
    release("slow-0")
    release("slow-1")  # they take both worker slots: the next ones start after them
    wait_for(lambda: in_flight("slow-2"), what="slow-2 running")
    moved = by_slug.pop("slow-2")
    edit(moved, slug="slow-2-moved", body="v2 of slow-2-moved")
    by_slug[moved.slug] = moved
    release("slow-2")
    wait_for(lambda: in_flight("slow-3"), what="slow-3 running")
    by_slug.pop("slow-3").delete()
    release("slow-3")
    # And some that are still waiting, or already out.
    edit(by_slug["quick-14"], title="quick-14 edited", body="v2 of quick-14")
    by_slug.pop("quick-15").delete()
    wait_published(by_slug["quick-0"])
    by_slug.pop("quick-0").delete()
    edit(by_slug["quick-1"], body="v2 of quick-1")

    wait_settled()

    live = Article.objects.order_by("-publish_at", "-id")
    assert {a.slug for a in live} == set(by_slug)
    assert all(a.status == ArticleStatus.PUBLISHED for a in live)
    view = read_site(site)
    newest_first = [a.slug for a in live]
    assert view.front.slugs == newest_first
    assert view.front.titles == [a.title for a in live]
    assert view.feed_slugs == newest_first
    assert set(view.sitemap) == set(newest_first)
    assert view.dirs == set(newest_first)
    for article in live:
        page = (site / article.slug / "index.html").read_text(encoding="utf-8")
        assert article.body in page, article.slug
        assert article.title in page, article.slug


def edit(article: Article, **fields) -> None:
    for name, value in fields.items():
        setattr(article, name, value)
    article.full_clean()
    article.save()


def test_delete_while_the_broker_is_down_leaves_the_site_at_the_next_catch_up(site, make_article):
    article = wait_published(make_article(title="Short-lived"))
    down = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there

    deleted = subprocess.run(
        [
            sys.executable,
            "-c",
            "import django; django.setup(); from publishing.models import Article; "
            f"Article.objects.get(pk={article.pk}).delete()",
        ],
        cwd=ROOT,
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "tests.settings",
            "BLOGPUBLISH_TEST_BROKER": down,
        },
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert deleted.returncode == 0, deleted.stderr
    assert "the broker is unreachable" in deleted.stderr
    assert not Article.objects.filter(pk=article.pk).exists()
    # Nothing was sent, so nothing has touched the site yet.
    assert (site / article.slug / "index.html").exists()
    assert read_listing(site / "index.html").slugs == [article.slug]

    run_catch_up()

    wait_for(lambda: not (site / article.slug).exists(), what="the page to go")
    wait_for(lambda: read_listing(site / "index.html").slugs == [], what="the index to drop it")
    view = read_site(site)
    assert view.dirs == set()
    assert view.front.slugs == []
    assert view.feed_slugs == []
    assert view.sitemap == {}


def test_hostile_markdown_is_sanitised_and_rich_markdown_renders(site, make_article):
    body = "\n".join(
        [
            "Hello <script>alert('x')</script> there.",
            "",
            '<img src="cat.png" onerror="alert(1)">',
            "",
            "[click me](javascript:alert(1)) and [a safe one](https://example.com/).",
            "",
            "| Name | Value |",
            "|------|------:|",
            "| pi   | 3.14  |",
            "",
            "```python",
            "print('fenced')",
            "```",
            "",
            "A claim.[^1]",
            "",
            "[^1]: The footnote.",
        ]
    )
    article = wait_published(make_article(body=body))

    page = (site / article.slug / "index.html").read_text(encoding="utf-8")
    main = page.split("<main", 1)[1]
    assert "<script" not in main.lower()
    assert "alert(" not in main
    assert "onerror" not in main.lower()
    assert "javascript:" not in main.lower()
    assert '<img src="cat.png" alt="" loading="lazy" decoding="async">' in main
    assert '<a href="https://example.com/" rel="noopener noreferrer">a safe one</a>' in main
    assert "<table>" in main and '<td style="text-align:right">3.14</td>' in main
    assert "<code class=\"language-python\">print('fenced')" in main
    assert '<section class="footnotes">' in main and "The footnote." in main


def test_chinese_title_gives_a_working_page_index_entry_and_feed_entry(site, make_article):
    article = wait_published(make_article(title="你好，世界：第一篇文章", slug=""))

    assert article.slug == "你好世界第一篇文章"
    page = site / "你好世界第一篇文章" / "index.html"  # raw UTF-8 on disk
    assert "<h1>你好，世界：第一篇文章</h1>" in page.read_text(encoding="utf-8")
    encoded = iri_to_uri("/你好世界第一篇文章/")
    assert (
        encoded
        == "/%E4%BD%A0%E5%A5%BD%E4%B8%96%E7%95%8C%E7%AC%AC%E4%B8%80%E7%AF%87%E6%96%87%E7%AB%A0/"
    )
    front = (site / "index.html").read_text(encoding="utf-8")
    assert f'href="{encoded}">你好，世界：第一篇文章</a>' in front
    (entry,) = read_feed(site).entries
    assert entry.title == "你好，世界：第一篇文章"
    assert entry.link == f"{settings.SITE_URL}{encoded}"
    assert list(read_site(site).sitemap) == ["你好世界第一篇文章"]
