"""Drafts, publish and withdraw (issue 22), through a real worker (prefork, concurrency
2) and Redis, on the run's SQLite or PostgreSQL database: a draft is on no page, a
publish goes through the pipeline as any save, a withdraw takes the page and every
listing off as a delete does, and the story publishes again at the same address."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from publishing.models import Article, ArticleStatus, Revision, Story, StoryState
from publishing.services import (
    story_publish,
    story_save,
    story_trash,
    story_untrash,
    story_withdraw,
)
from tests.support.chaos import journal_entries
from tests.support.settling import wait_settled
from tests.support.site import read_site
from tests.support.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def wait_listed(site, slug: str, *, listed: bool = True) -> None:
    """The page, the front page, the feed and the sitemap all show `slug` (or none)."""

    def settled() -> bool:
        view = read_site(site)
        places = (
            slug in view.dirs,
            slug in view.front.slugs,
            slug in view.feed_slugs,
            slug in view.sitemap,
        )
        return all(places) if listed else not any(places)

    wait_for(settled, timeout=60, what=f"{slug} {'listed' if listed else 'gone'} everywhere")


def test_a_draft_is_on_no_page_until_published(site, make_article):
    other = make_article(slug="already-live")
    story = story_save(title="Work in progress", body="Not *yet*.", slug="wip", saved_by="ann")
    wait_listed(site, other.slug)
    wait_settled()

    assert not Article.objects.filter(pk=story.pk).exists()
    assert journal_entries("wip") == []  # no target was ever asked to publish it
    view = read_site(site)
    assert "wip" not in view.dirs and view.front.slugs == [other.slug]

    article = story_publish(story_id=story.pk)

    assert article.pk == story.pk  # one id names the story and its article
    wait_listed(site, "wip")
    page = (site / "wip" / "index.html").read_text(encoding="utf-8")
    assert "Work in progress" in page and "<em>yet</em>" in page
    assert Story.objects.get(pk=story.pk).state == StoryState.PUBLISHED


def test_an_edit_of_the_draft_stays_off_the_site_until_published_again(site):
    story = story_save(title="First words", body="Version one.", slug="words")
    story_publish(story_id=story.pk)
    wait_listed(site, "words")

    story_save(story_id=story.pk, title="First words", body="Version two.", slug="words")
    wait_settled()
    assert "Version one." in (site / "words" / "index.html").read_text(encoding="utf-8")
    assert Story.objects.get(pk=story.pk).has_unpublished_changes

    story_publish(story_id=story.pk)
    wait_for(
        lambda: "Version two." in (site / "words" / "index.html").read_text(encoding="utf-8"),
        timeout=60,
        what="the second version live",
    )
    assert not Story.objects.get(pk=story.pk).has_unpublished_changes


def test_withdraw_takes_page_and_listings_off_and_the_story_publishes_again_there(
    site, make_article
):
    stays = make_article(slug="stays", title="Stays")
    story = story_save(title="Taken back", body="Soon gone.", slug="taken-back")
    story_publish(story_id=story.pk)
    wait_listed(site, "taken-back")
    wait_listed(site, "stays")

    withdrawn = story_withdraw(article_id=story.pk, saved_by="ann")

    wait_listed(site, "taken-back", listed=False)
    assert not Article.objects.filter(pk=story.pk).exists()
    assert (withdrawn.state, withdrawn.slug, withdrawn.body) == (
        StoryState.DRAFT,
        "taken-back",
        "Soon gone.",
    )
    # The address stays the story's: no other article may take it meanwhile.
    with pytest.raises(ValidationError, match="slug"):
        make_article(slug="taken-back")
    wait_settled()
    view = read_site(site)
    assert view.front.slugs == ["stays"] and view.feed_slugs == ["stays"]
    assert Article.objects.get(pk=stays.pk).status == ArticleStatus.PUBLISHED

    again = story_publish(story_id=story.pk)

    assert (again.pk, again.slug) == (story.pk, "taken-back")
    wait_listed(site, "taken-back")
    assert "Soon gone." in (site / "taken-back" / "index.html").read_text(encoding="utf-8")


def test_withdraw_of_an_article_written_in_the_article_form_keeps_its_text(site, make_article):
    article = make_article(slug="form-made", title="Made in the form", body="Form text.")
    wait_listed(site, "form-made")

    story = story_withdraw(article_id=article.pk, saved_by="ann")

    wait_listed(site, "form-made", listed=False)
    assert (story.pk, story.state, story.title, story.body) == (
        article.pk,
        StoryState.DRAFT,
        "Made in the form",
        "Form text.",
    )
    assert Revision.objects.filter(story=story, body="Form text.").exists()


def test_a_deleted_article_waits_in_the_trash_and_comes_back_as_a_draft(site, make_article):
    article = make_article(slug="binned", title="Binned", body="Kept in the trash.")
    wait_listed(site, "binned")

    Article.objects.filter(pk=article.pk).delete()  # a bulk delete, as the admin's action

    wait_listed(site, "binned", listed=False)
    story = Story.objects.get(pk=article.pk)
    assert story.trashed_at is not None and story.body == "Kept in the trash."
    # The trash frees the address, as WordPress does: another article may take it.
    taker = make_article(slug="binned", title="The new one")
    wait_listed(site, "binned")

    restored, renamed = story_untrash(story_id=story.pk)

    assert renamed and restored.slug == "binned-2" and restored.trashed_at is None
    assert restored.state == StoryState.DRAFT
    story_publish(story_id=story.pk)
    wait_listed(site, "binned-2")
    assert Article.objects.get(pk=taker.pk).slug == "binned"


def test_trashing_a_published_story_takes_it_off_the_site(site):
    story = story_save(title="Short-lived", body="Gone soon.", slug="short-lived")
    story_publish(story_id=story.pk)
    wait_listed(site, "short-lived")

    story_trash(story_id=story.pk)

    wait_listed(site, "short-lived", listed=False)
    assert not Article.objects.filter(pk=story.pk).exists()
    with pytest.raises(ValidationError, match="trash"):
        story_publish(story_id=story.pk)
