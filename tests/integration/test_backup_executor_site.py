"""The backup executor (`publish_pending`) while the broker is down (docs/operations.md,
"When the broker is down"): what it publishes reaches the site, and so does what was
taken down meanwhile. In this process, on the real database; the saves' and the
delete's messages go where nothing listens."""

from __future__ import annotations

import uuid

import pytest
from django.core.management import call_command

from publishing.models import Article, Refresher
from publishing.services import story_withdraw
from tests.support.broker import broker
from tests.support.processes import free_port
from tests.support.site import read_listing

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def outage(settings, tmp_path):
    settings.SITE_ROOT = tmp_path / "site"
    settings.PUBLISH_PUBLISHERS = ["blogpublish.site.StaticSitePublisher"]
    Refresher.objects.update_or_create(
        pk=1, defaults={"lease_expires_at": None, "wanted": False, "deferred_until": None}
    )
    with broker(f"redis://127.0.0.1:{free_port()}/0"):
        yield settings.SITE_ROOT


def saved(title: str) -> Article:
    article = Article(title=title, slug=f"bx-{uuid.uuid4().hex[:8]}", body=f"{title}.")
    article.full_clean()
    article.save()
    return article


@pytest.mark.parametrize("takedown", ["delete", "withdraw"])
def test_an_article_taken_down_during_an_outage_leaves_the_site_at_the_next_run(outage, takedown):
    keep, gone = saved("Keep"), saved("Takedown")
    call_command("publish_pending")
    assert set(read_listing(outage / "index.html").slugs) == {keep.slug, gone.slug}

    if takedown == "delete":
        gone.delete()  # a legal takedown, while the broker is still down
    else:
        story_withdraw(article_id=gone.pk)
    call_command("publish_pending")  # the next run: nothing to publish

    assert read_listing(outage / "index.html").slugs == [keep.slug]
    assert not (outage / gone.slug / "index.html").exists()
    assert gone.slug not in (outage / "feed.xml").read_text()
