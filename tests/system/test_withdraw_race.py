"""A withdraw or a trash racing a publish of the same story, under kills (issue 22): the
site ends exact, the webhook gets one request per event, and a withdrawn story
publishes again at the same address.

Real processes: `celery worker` and `celery beat` subprocesses on a private
redis-server, a real HTTP receiver for the webhook. The publish of the edit is held in
the (chaos) publisher ahead of the site and the webhook, the story is withdrawn or
trashed while it is held, and then the process running it is SIGKILLed.
"""

from __future__ import annotations

import os
import signal

import pytest
from django.conf import settings

from publishing.models import Article, ArticleStatus, Story
from publishing.services import story_publish, story_save, story_trash, story_withdraw
from tests.support.site import read_site
from tests.support.waiting import wait_for
from tests.system.conftest import WEBHOOK_SECRET
from tests.system.helpers import save_articles, wait_all_published
from tests.system.test_recovery import attempt_running, pid_of_attempt

pytestmark = [pytest.mark.system, pytest.mark.django_db(transaction=True)]


def start(pipeline, receiver) -> None:
    """Beat, and a worker that also sends the webhook."""
    webhook = {
        "PUBLISH_WEBHOOK_URL": receiver.url,
        "PUBLISH_WEBHOOK_SECRET": WEBHOOK_SECRET,
        # Inside the system tests' short lease (config/checks.py).
        "PUBLISH_WEBHOOK_TIMEOUT": "0.5",
    }
    pipeline.env.update(webhook)
    pipeline.beat()
    pipeline.worker()


def events(receiver, slug: str) -> list[str]:
    return [r.json["event"] for r in receiver.requests_for(slug) if r.status == 200]


def site_lists_exactly(slugs: set[str]) -> bool:
    view = read_site(settings.SITE_ROOT)
    return (
        view.dirs == slugs
        and set(view.front.slugs) == slugs
        and set(view.feed_slugs) == slugs
        and set(view.sitemap) == slugs
    )


def published_then_held(pipeline, receiver, chaos, slug: str) -> Story:
    """A published story whose edit's attempt is running, held in the publisher."""
    story = story_save(title=f"Story {slug}", body="Version one.", slug=slug)
    story_publish(story_id=story.pk)
    wait_all_published([Article(pk=story.pk)], timeout=60)
    wait_for(lambda: events(receiver, slug) == ["article.published"], what="the first event")
    chaos(slug, hold=30, hold_until_attempt=2)
    story_save(story_id=story.pk, title=f"Story {slug}", body="Version two.", slug=slug)
    story_publish(story_id=story.pk)
    wait_for(lambda: attempt_running(Article.objects.get(pk=story.pk)), what="the edit held")
    return story


@pytest.mark.parametrize("take_back", ["withdraw", "trash"])
def test_taken_back_mid_publish_then_killed_leaves_the_site_exact_and_one_event_each(
    pipeline, receiver, chaos, take_back
):
    start(pipeline, receiver)
    others = save_articles("stays", 2)
    wait_all_published(others)
    slug = f"raced-{take_back}"
    story = published_then_held(pipeline, receiver, chaos, slug)
    child = pid_of_attempt(slug, 1)

    if take_back == "withdraw":
        story_withdraw(article_id=story.pk)
    else:
        story_trash(story_id=story.pk)
    os.kill(child, signal.SIGKILL)  # the attempt of the edit dies mid-publish

    stays = {a.slug for a in others}
    wait_for(lambda: site_lists_exactly(stays), timeout=90, what="the site without it")
    expected = "article.withdrawn" if take_back == "withdraw" else "article.deleted"
    wait_for(lambda: expected in events(receiver, slug), timeout=60, what=expected)
    wait_for(
        lambda: not Article.objects.filter(status=ArticleStatus.PENDING).exists(),
        what="nothing left pending",
    )
    assert not Article.objects.filter(pk=story.pk).exists()
    assert events(receiver, slug) == ["article.published", expected]
    assert site_lists_exactly(stays)
    left = Story.objects.get(pk=story.pk)
    assert left.body == "Version two."  # the writer's text is kept either way
    if take_back == "trash":
        assert left.trashed_at is not None
        return

    # Withdrawn: it publishes again at the same address.
    chaos(slug)
    story_publish(story_id=story.pk)
    wait_for(lambda: site_lists_exactly(stays | {slug}), timeout=90, what="back at its address")
    wait_for(lambda: events(receiver, slug)[-1:] == ["article.published"], what="announced")
    assert events(receiver, slug) == ["article.published", expected, "article.published"]
    page = (settings.SITE_ROOT / slug / "index.html").read_text(encoding="utf-8")
    assert "Version two." in page
