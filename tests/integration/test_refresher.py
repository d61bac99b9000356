"""The coalescing refresher of the shared views, with a real worker (prefork,
concurrency 2) through Redis: publishes never wait for it, a burst costs a few passes,
and a pass held elsewhere or a refresher that died delays the front page, never a
publish, and loses nothing."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from blogpublish.site import StaticSitePublisher
from publishing.models import Article, ArticleStatus, Refresher
from publishing.services import catch_up
from tests.support.settling import wait_settled
from tests.support.site import read_listing, read_site
from tests.support.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def site(worker):
    StaticSitePublisher().reconcile()
    Refresher.objects.update_or_create(
        pk=1, defaults={"lease_expires_at": None, "wanted": False, "deferred_until": None}
    )
    return settings.SITE_ROOT


def passes() -> int:
    return Refresher.objects.values_list("passes", flat=True).get(pk=1)


def published(article: Article) -> bool:
    return Article.objects.filter(pk=article.pk, status=ArticleStatus.PUBLISHED).exists()


def on_front_page(article: Article) -> bool:
    return article.slug in read_listing(settings.SITE_ROOT / "index.html").slugs


def hold_lease(seconds: float) -> None:
    """As a pass running on another host holds it (or one whose refresher died)."""
    Refresher.objects.filter(pk=1).update(
        lease_expires_at=timezone.now() + timedelta(seconds=seconds)
    )


def test_burst_is_listed_by_a_few_passes_not_one_per_publish(site, make_article):
    before = passes()
    burst = [make_article(slug=f"burst-{n}") for n in range(60)]

    wait_settled()

    assert all(published(a) for a in burst)
    view = read_site(site)
    newest_first = [a.slug for a in Article.objects.order_by("-publish_at", "-id")]
    assert view.front.slugs == newest_first[:50]
    assert view.feed_slugs == newest_first[:50]
    assert set(view.sitemap) == set(newest_first)
    # One pass per publish would be 60; requests made during a pass, or within the
    # interval after one, fold into the next.
    assert passes() - before < len(burst) / 2


def test_publish_does_not_wait_for_a_pass_held_elsewhere(site, make_article):
    hold_lease(60)
    article = make_article(slug="while-held")

    wait_for(lambda: published(article), what="the publish, with the refresher's lease held")
    assert (site / "while-held" / "index.html").exists()
    assert not on_front_page(article)  # no pass could run: the request waits for one

    Refresher.objects.filter(pk=1).update(lease_expires_at=None)  # the other pass ends

    wait_for(lambda: on_front_page(article), what="the deferred pass after the lease")
    wait_settled()


def test_refresher_that_died_mid_pass_is_taken_over_when_its_lease_runs_out(site, make_article):
    hold_lease(2)  # its refresher was killed: nobody will let go of the lease
    article = make_article(slug="after-a-dead-refresher")

    wait_for(lambda: published(article), what="the publish")
    wait_for(lambda: on_front_page(article), timeout=20, what="a pass after the dead lease")
    wait_settled()


def test_catch_up_runs_the_pass_whose_message_was_lost(site, make_article):
    article = make_article(slug="lost-pass")
    wait_for(lambda: published(article) and on_front_page(article), what="the first listing")
    wait_settled()
    # What only a pass can show: the front page is written from the database each pass.
    Article.objects.filter(pk=article.pk).update(published_title="Shown by the catch-up")
    # A pass is wanted and was "deferred", but its message is gone (a Redis restart).
    Refresher.objects.filter(pk=1).update(wanted=True, deferred_until=timezone.now())
    before = passes()

    catch_up()

    assert passes() == before + 1
    assert "Shown by the catch-up" in read_listing(site / "index.html").titles
    assert not Refresher.objects.filter(pk=1, wanted=True).exists()
