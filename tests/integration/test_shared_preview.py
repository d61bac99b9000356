"""Shareable previews of a draft (issue 22): a signed, expiring, revocable link that
shows the current draft as its page will look, to anyone, never indexed."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from blogpublish import views
from blogpublish.models import PreviewSlot
from publishing.models import Story
from publishing.services import story_of_article, story_save, story_share, story_unshare
from tests.support.live_tags import listed_with_tags

pytestmark = pytest.mark.django_db

NOT_YET = "Not published yet"


def shared(token: str):
    """The link opened by someone with no session at all."""
    return Client().get(f"/preview/{token}/")


def assert_never_indexed(response) -> None:
    assert response["X-Robots-Tag"] == "noindex, nofollow"
    assert '<meta name="robots" content="noindex, nofollow">' in response.content.decode()
    assert response["Cache-Control"] == "private, no-store"
    assert response["Referrer-Policy"] == "no-referrer"


def test_the_link_shows_the_current_draft_as_its_page_to_anyone():
    story = story_save(title="Shared draft", body="Read *this* first.", slug="shared")
    token = story_share(story_id=story.pk)
    story_save(story_id=story.pk, title="Shared draft", body="Read *this* now.", slug="shared")

    response = shared(token)

    assert response.status_code == 200
    page = response.content.decode()
    assert "Shared draft" in page and "Read <em>this</em> now." in page
    assert "Content-Security-Policy" in response
    assert_never_indexed(response)


def test_the_link_of_a_published_story_leaves_its_article_out_of_its_listings():
    """Built without the story's id (its article's), the page listed the article itself
    under "Related articles" and as its own rel="prev" (a review's finding)."""
    older, me = listed_with_tags(["python"], ["python"])
    token = story_share(story_id=story_of_article(me).pk)

    page = shared(token).content.decode()

    assert f'href="/{me.slug}/"' not in page and f'href="/{older.slug}/"' in page


@pytest.mark.parametrize(
    "spoil",
    [
        "revoked",  # the writer took it back
        "expired",  # past STORY_PREVIEW_SECONDS
        "renewed",  # a new link replaces the old one
        "trashed",  # the story was deleted
    ],
)
def test_a_link_no_longer_valid_says_not_published_yet(spoil):
    story = story_save(title="Soon private", body="Text.")
    token = story_share(story_id=story.pk)
    assert shared(token).status_code == 200
    if spoil == "revoked":
        assert story_unshare(story_id=story.pk)
    elif spoil == "expired":
        Story.objects.filter(pk=story.pk).update(
            preview_expires_at=timezone.now() - timedelta(seconds=1)
        )
    elif spoil == "renewed":
        assert story_share(story_id=story.pk) != token
    else:
        Story.objects.filter(pk=story.pk).update(trashed_at=timezone.now())

    response = shared(token)

    assert response.status_code == 404
    assert NOT_YET in response.content.decode() and "Text." not in response.content.decode()
    assert_never_indexed(response)


@pytest.mark.parametrize(
    "token",
    [
        "nonsense",
        "eyJpZCI6MX0:forged",  # a payload with a made-up signature
        "x" * 5000,
    ],
)
def test_a_forged_or_garbled_token_shows_nothing(token):
    story = story_save(title="Secret draft", body="Hidden.")
    story_share(story_id=story.pk)

    response = shared(token)

    assert response.status_code == 404 and "Hidden." not in response.content.decode()


@pytest.mark.parametrize(
    "site_url", ["http://testserver", "http://testserver/", "http://testserver/blog"]
)
def test_the_story_page_shares_and_revokes(admin_client, settings, site_url):
    """The link is the app's address, the host's root whatever SITE_URL's path (a
    review's: /blog/preview/… under SITE_URL …/blog, a 404; and `//preview` with a
    trailing slash)."""
    settings.SITE_URL = site_url
    story = story_save(title="From the desk", body="Text.")
    page = f"/admin/publishing/story/{story.pk}/change/"
    assert "Share preview" in admin_client.get(page).content.decode()

    admin_client.post(f"/admin/publishing/story/{story.pk}/share/")
    html = admin_client.get(page).content.decode()
    link = html.split('id="desk-share-link" href="', 1)[1].split('"', 1)[0]
    assert link.startswith("http://testserver/preview/"), link
    path = link.split("/preview/", 1)[1]
    assert Client().get(f"/preview/{path}").status_code == 200

    admin_client.post(f"/admin/publishing/story/{story.pk}/unshare/")
    assert Client().get(f"/preview/{path}").status_code == 404


def slot_takes(captured) -> int:
    """How many UPDATEs of the render slots a request made (a try to take one, its
    release): none when no render was tried."""
    return sum(
        1
        for query in captured.captured_queries
        if query["sql"].startswith("UPDATE") and "previewslot" in query["sql"]
    )


def test_a_links_readers_share_one_render_and_an_edit_renders_again():
    story = story_save(title="Many readers", body="First text.", slug="many-readers")
    token = story_share(story_id=story.pk)
    with CaptureQueriesContext(connection) as first:
        assert "First text." in shared(token).content.decode()
    with CaptureQueriesContext(connection) as second:
        assert "First text." in shared(token).content.decode()

    assert slot_takes(first) > 0 and slot_takes(second) == 0  # the second: no render
    story_save(story_id=story.pk, title="Many readers", body="Edited text.", slug="many-readers")
    assert "Edited text." in shared(token).content.decode()


def test_a_link_whose_render_slot_is_busy_answers_at_once_and_reloads_itself():
    """A reader never waits for the slot: 32 readers of one link each waited up to 2 s
    for it and held the web's threads (a review's finding)."""
    story = story_save(title="Busy", body="Text.", slug="busy-link")
    token = story_share(story_id=story.pk)
    PreviewSlot.objects.create(
        number=0, holder="a-writers-preview", held_until=timezone.now() + timedelta(seconds=30)
    )

    with CaptureQueriesContext(connection) as busy:
        response = shared(token)

    assert response.status_code == 429 and "tries again in a moment" in response.content.decode()
    assert response["Retry-After"] == "1"
    assert slot_takes(busy) == 1  # one try, no waiting and trying again


def test_a_web_process_keeps_one_page_a_story_and_a_bounded_number(monkeypatch):
    """Each save of a shared draft is a new version: Django's local-memory cache kept
    every one (an autosaved 1 MB draft, 12 saves: 12.8 MB still held after their 10 s,
    about 300 MB at its 300 entries; a review of the mend)."""
    monkeypatch.setattr(views, "SHARED_PAGES_KEPT", 3)
    monkeypatch.setattr(views, "_shared_pages", {})
    story = story_save(title="Saved often", body="Version 0.", slug="saved-often")
    token = story_share(story_id=story.pk)
    for n in range(1, 4):
        story_save(story_id=story.pk, title="Saved often", body=f"Version {n}.", slug="saved-often")
        assert f"Version {n}." in shared(token).content.decode()
    assert list(views._shared_pages) == [story.pk]  # one page: the latest version's

    for n in range(5):
        other = story_save(title=f"Other {n}", body="Text.", slug=f"other-{n}")
        assert shared(story_share(story_id=other.pk)).status_code == 200
    assert len(views._shared_pages) == 3
