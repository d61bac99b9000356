"""Drafts on the desk (issue 22) through the admin's pages: "Save as draft" beside the
Article form's Save, the story's page (Save draft, Save and publish, Withdraw), its
history with a diff and Restore, a stale tab refused. Publishing runs with the real
worker, Redis and database."""

from __future__ import annotations

import html
import re
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.contrib.auth.models import Permission
from django.core.exceptions import ValidationError
from django.db import connection
from django.db.models import F
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from blogpublish.desk import drafts
from publishing.models import Article, ArticleStatus, Revision, Story, StoryState
from publishing.services import (
    DIFF_MAX_LINES,
    diff_too_large,
    story_of_article,
    story_publish,
    story_save,
    story_share,
    story_trash,
    story_withdraw,
)
from tests.support.broker import broker
from tests.support.desk import article_form
from tests.support.live_tags import listed_with_tags
from tests.support.processes import free_port
from tests.support.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

STORY_ADD = "/admin/publishing/story/add/"


def story_page(story_id: int) -> str:
    return f"/admin/publishing/story/{story_id}/change/"


def story_form(story: Story, **changes) -> dict:
    """What the story's page posts when the writer changes `changes` (the date kept)."""
    form = article_form(title=story.title, body=story.body, slug=story.slug, when=story.publish_at)
    form.update(base_version=str(story.version))
    form.update(changes)
    return form


def listed(admin_client, url: str) -> list[str]:
    """The titles in a changelist's rows, sorted."""
    html = admin_client.get(url).content.decode()
    return sorted(re.findall(r'class="field-title"><a [^>]*>([^<]*)</a>', html))


def wait_published(story_id: int, body: str) -> Article:
    wait_for(
        lambda: Article.objects.filter(
            pk=story_id, status=ArticleStatus.PUBLISHED, published_body=body
        ).exists(),
        timeout=60,
        what=f"article {story_id} published with {body!r}",
    )
    return Article.objects.get(pk=story_id)


def test_the_article_form_offers_save_as_draft_and_its_save_still_publishes(admin_client):
    page = admin_client.get("/admin/publishing/article/add/").content.decode()
    assert 'id="desk-save-draft"' in page and f'formaction="{STORY_ADD}"' in page

    response = admin_client.post(
        STORY_ADD, {**article_form(title="Kept back", body="Not yet."), "_continue": "1"}
    )

    assert response.status_code == 302, response.content.decode()[:2000]
    story = Story.objects.get()
    assert (story.title, story.state, story.version) == ("Kept back", StoryState.DRAFT, 1)
    assert not Article.objects.exists()
    assert response["Location"] == story_page(story.pk)
    listed = admin_client.get("/admin/publishing/story/?state=draft").content.decode()
    assert "Kept back" in listed


def test_publish_edit_diff_restore_and_withdraw_from_the_story_page(worker, admin_client):
    admin_client.post(STORY_ADD, {**article_form(title="Desk story", body="First."), "_save": "1"})
    story = Story.objects.get()

    response = admin_client.post(story_page(story.pk), {**story_form(story), "_publish": "1"})
    assert response.status_code == 302, response.content.decode()[:2000]
    wait_published(story.pk, "First.")

    story.refresh_from_db()
    admin_client.post(story_page(story.pk), {**story_form(story, body="Second."), "_continue": "1"})
    story.refresh_from_db()
    assert story.body == "Second." and story.has_unpublished_changes
    assert Article.objects.get(pk=story.pk).published_body == "First."

    diff = admin_client.get(f"/admin/publishing/story/{story.pk}/diff/?old=1").content.decode()
    assert re.search(r'desk-diff-del">.*?<pre>First\.</pre>', diff)
    assert re.search(r'desk-diff-add">.*?<pre>Second\.</pre>', diff)

    restored = admin_client.post(f"/admin/publishing/story/{story.pk}/restore/1/")
    assert restored.status_code == 302
    story.refresh_from_db()
    assert story.body == "First." and story.version == 3
    assert Revision.objects.get(story=story, number=3).note == "restored from version 1"

    article_page = admin_client.get(f"/admin/publishing/article/{story.pk}/change/")
    assert "Withdraw (back to draft)" in article_page.content.decode()
    withdrawn = admin_client.post(f"/admin/publishing/article/{story.pk}/withdraw/")
    assert withdrawn["Location"] == story_page(story.pk)
    assert not Article.objects.filter(pk=story.pk).exists()
    story = Story.objects.get(pk=story.pk)
    assert story.state == StoryState.DRAFT
    # Its attempts stay in the story's history (issue 22, item 6): the one that
    # published "First." (and a second try, if an edit came while it ran).
    assert [entry["outcome"] for entry in story.publish_log][-1] == "ok"
    assert story.publish_log[0]["number"] == 1 and story.publish_log[0]["worker"]
    history = admin_client.get(story_page(story.pk)).content.decode()
    assert "attempts of earlier publications" in history.lower()
    assert re.search(r"<td>#1</td><td>[0-9-]+ [0-9:]+</td><td>ok</td>", history)


def test_versions_too_large_to_compare_line_by_line_say_so_and_are_not_diffed(admin_client):
    """difflib's cost grows with the product of the lines: two bodies of 100,000
    shuffled lines took 14.7 s of the web process and made 17.8 MB of HTML (a review's
    finding). Over DIFF_MAX_LINES the bodies are not compared, and the page says so
    with their sizes; what is besides the body still is."""
    lines = [f"line {n % 1001}" for n in range(DIFF_MAX_LINES + 1)]
    story = story_save(title="Long", body="\n".join(lines))
    body = "\n".join(reversed(lines))
    story = story_save(story_id=story.pk, title="Longer", body=body, if_version=1)

    response = admin_client.get(f"/admin/publishing/story/{story.pk}/diff/?old=1")

    page = html.unescape(response.content.decode())
    size = f"{DIFF_MAX_LINES + 1:,} lines, {len(body.encode()):,} bytes"
    assert (
        "These versions are too large to compare line by line (a body of more than "
        f"{DIFF_MAX_LINES:,} lines). Their bodies are different (version 1: {size}; the "
        f"draft: {size})"
    ) in page
    assert "<pre>Title: Long</pre>" in page and "<pre>Title: Longer</pre>" in page
    assert "<pre>line 1</pre>" not in page


def test_the_diff_bound_holds_bodies_of_few_lines_repeated():
    """difflib skips a line as "popular" only past 1 % of the lines: bodies of about 120
    distinct lines each repeated (a table, code) are its worst case, 5.3 s at 10,000
    lines, the first bound (a review of the mend)."""
    rows = ["x" * 50 + str(n % 120) for n in range(5_000)]
    old = SimpleNamespace(body="\n".join(rows))
    new = SimpleNamespace(body="\n".join(rows[::-7] + rows))

    assert diff_too_large(old, new)


@pytest.mark.parametrize(
    ("address", "left_out"),
    [
        ("/admin/publishing/story/", ('"publishing_story"."body"', '"publish_log"')),
        ("/admin/publishing/article/", ('"publishing_article"."body"', '"published_body"')),
    ],
)
def test_the_lists_read_no_body_and_the_change_page_does(admin_client, address, left_out):
    """A list of 100 stories read 100 bodies of up to 1 MiB each, which no column shows
    (a review's finding): its rows leave them out (work.admin.RowsWithout), and read
    them one by one neither; a story's or an article's own page reads them."""
    article, _ = listed_with_tags(["python"], ["web"])
    story_of_article(article)

    with CaptureQueriesContext(connection) as listing:
        response = admin_client.get(address)
    with CaptureQueriesContext(connection) as changing:
        admin_client.get(f"{address}{article.pk}/change/")

    assert response.status_code == 200 and article.title in response.content.decode()
    for column in left_out:
        assert [q["sql"] for q in listing if column in q["sql"]] == []
        assert any(column in q["sql"] for q in changing)


def test_a_drafts_body_keeps_its_first_lines_indentation(admin_client):
    """An indented code block first: the form keeps its spaces (Django's forms strip a
    field's value by default), as the article's form does; only the blank lines around
    the text go (normalize_body), so the draft's preview and its page agree."""
    body = "\n    code first\n\ntext\n\n"
    admin_client.post(STORY_ADD, {**article_form(title="Indented", body=body), "_save": "1"})

    assert Story.objects.get(title="Indented").body == "    code first\n\ntext"


def test_publishing_a_new_slug_of_a_live_article_warns_that_its_old_address_dies(
    worker, admin_client
):
    """A writer who publishes a live article under another slug is told the old address
    sends readers on, until another article takes it (a writer's review: links shared
    and indexed died without a word). A publish that keeps the slug says nothing."""
    admin_client.post(STORY_ADD, {**article_form(title="Moving", body="Text."), "_save": "1"})
    story = Story.objects.get()
    admin_client.post(story_page(story.pk), {**story_form(story), "_publish": "1"})
    wait_published(story.pk, "Text.")
    story.refresh_from_db()

    kept = admin_client.post(
        story_page(story.pk), {**story_form(story, body="Edited."), "_publish": "1"}, follow=True
    )
    story.refresh_from_db()
    moved = admin_client.post(
        story_page(story.pk), {**story_form(story, slug="moved"), "_publish": "1"}, follow=True
    )

    def said(response) -> list[str]:
        return [str(m) for m in response.context["messages"]]

    assert not any("are sent on to the new one" in m for m in said(kept))
    assert any(
        "The address “moving” becomes “moved”" in m and "are sent on to the new one" in m
        for m in said(moved)
    ), said(moved)


def test_a_stale_tab_is_refused_with_its_text_kept(admin_client):
    admin_client.post(STORY_ADD, {**article_form(title="Two tabs", body="One."), "_save": "1"})
    story = Story.objects.get()
    stale = story_form(story, body="The first tab's words.", _continue="1")
    admin_client.post(story_page(story.pk), {**story_form(story, body="Newer."), "_continue": "1"})

    response = admin_client.post(story_page(story.pk), stale)

    assert response.status_code == 200
    page = response.content.decode()
    assert "saved elsewhere" in page and "The first tab&#x27;s words." in page
    assert Story.objects.get(pk=story.pk).body == "Newer."


def test_a_story_form_without_its_version_is_refused_with_its_text_kept(admin_client):
    """Without `base_version` a save was checked against nothing and overwrote a newer
    version (a review's finding)."""
    admin_client.post(STORY_ADD, {**article_form(title="No version", body="One."), "_save": "1"})
    story = Story.objects.get()
    stale = story_form(story, body="The old tab's words.", _continue="1")
    stale.pop("base_version")
    admin_client.post(story_page(story.pk), {**story_form(story, body="Newer."), "_continue": "1"})

    response = admin_client.post(story_page(story.pk), stale)

    assert response.status_code == 200
    page = html.unescape(response.content.decode())
    assert "does not say which version it was opened at" in page
    assert "The old tab's words." in page
    assert Story.objects.get(pk=story.pk).body == "Newer."


def test_publish_and_withdraw_need_change_article(django_user_model, client, admin_client):
    admin_client.post(STORY_ADD, {**article_form(title="Guarded", body="Text."), "_save": "1"})
    story = Story.objects.get()
    writer = django_user_model.objects.create_user("writer", password="x", is_staff=True)
    writer.user_permissions.add(
        *Permission.objects.filter(codename__in=["change_story", "view_story", "view_article"])
    )
    client.force_login(writer)

    assert "Save and publish" not in client.get(story_page(story.pk)).content.decode()
    response = client.post(story_page(story.pk), {**story_form(story), "_publish": "1"})

    assert response.status_code == 403
    assert not Article.objects.filter(pk=story.pk).exists()


def staff_with(django_user_model, *codenames: str, name: str = "someone"):
    user = django_user_model.objects.create_user(name, password="x", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    return user


def test_the_article_lists_actions_need_change_article(django_user_model, client):
    """Publish now (which breaks an embargo) and Requeue were offered to, and run for,
    anyone who could view the list (a review's finding: an action without
    `permissions=` is Django's for any user of the list)."""
    later = (timezone.now() + timedelta(days=30)).replace(microsecond=0)
    scheduled = story_save(title="Embargoed", body="Not before the 30th.", publish_at=later)
    story_publish(story_id=scheduled.pk)
    dead = story_save(title="Dead", body="Text.")
    story_publish(story_id=dead.pk)
    Article.objects.filter(pk=dead.pk).update(status=ArticleStatus.DEAD)
    client.force_login(staff_with(django_user_model, "view_article"))

    assert 'value="publish_now"' not in client.get("/admin/publishing/article/").content.decode()
    for action, pk in (("publish_now", scheduled.pk), ("requeue", dead.pk)):
        client.post(
            "/admin/publishing/article/",
            {"action": action, "_selected_action": [pk], "index": "0"},
        )

    assert Article.objects.get(pk=scheduled.pk).publish_at == later
    assert Article.objects.get(pk=dead.pk).status == ArticleStatus.DEAD


def test_adding_an_article_needs_change_article(django_user_model, client):
    """Adding an article publishes it: with `add_article` and no `change_article` (a
    writer refused Save and publish), Article → Add published the draft all the same."""
    client.force_login(
        staff_with(django_user_model, "add_article", "view_article", "add_story", "change_story")
    )

    response = client.post(
        "/admin/publishing/article/add/", article_form(title="Around", body="Text.")
    )

    assert response.status_code == 403
    assert not Article.objects.exists()


def test_a_writer_of_drafts_may_preview_and_upload_images(django_user_model, client):
    """The story's page uses the article form's preview and image upload: the stories'
    permissions (all saving drafts needs) were a 403 there; a viewer's still is."""
    client.force_login(staff_with(django_user_model, "add_story", "change_story", "view_story"))
    preview = client.post("/admin/publishing/article/preview/", {"title": "T", "body": "B"})
    upload = client.post("/admin/publishing/article/image/", {})

    assert preview.status_code == 200 and "<p>B</p>" in preview.json()["html"]
    assert upload.status_code == 400  # no file: past the permission, at the form's error
    client.force_login(staff_with(django_user_model, "view_story", name="viewer"))
    assert client.post("/admin/publishing/article/preview/", {"title": "T"}).status_code == 403


@pytest.mark.parametrize("bulk", [False, True], ids=["delete page", "delete selected"])
def test_trashing_a_story_on_the_blog_needs_delete_article(django_user_model, client, bulk):
    """Its article goes with it: a delete of what readers see, as the Article list's
    delete, which needs `delete_article`. A draft on no page needs only the story's."""
    live = story_save(title="On the blog", body="Text.")
    story_publish(story_id=live.pk)
    draft = story_save(title="Only a draft", body="Text.")
    writer = django_user_model.objects.create_user("writer", password="x", is_staff=True)
    writer.user_permissions.add(
        *Permission.objects.filter(
            codename__in=["view_story", "change_story", "delete_story", "view_article"]
        )
    )
    client.force_login(writer)

    for story in (live, draft):
        if bulk:
            response = client.post(
                "/admin/publishing/story/",
                {"action": "delete_selected", "_selected_action": [story.pk], "post": "yes"},
            )
        else:
            url = f"/admin/publishing/story/{story.pk}/delete/"
            response = client.post(url, {"post": "yes"})
        assert response.status_code in {200, 302, 403}

    assert Article.objects.filter(pk=live.pk).exists()
    assert Story.objects.get(pk=live.pk).trashed_at is None
    assert Story.objects.get(pk=draft.pk).trashed_at is not None


def test_delete_moves_to_the_trash_and_the_trash_restores_or_purges(admin_client):
    for title in ("Keep me", "Lose me"):
        admin_client.post(STORY_ADD, {**article_form(title=title, body="Text."), "_save": "1"})
    keep, lose = Story.objects.order_by("pk")

    for story in (keep, lose):
        deleted = admin_client.post(f"/admin/publishing/story/{story.pk}/delete/", {"post": "yes"})
        assert deleted.status_code == 302

    assert Story.objects.filter(trashed_at__isnull=False).count() == 2
    assert listed(admin_client, "/admin/publishing/story/") == []
    assert listed(admin_client, "/admin/publishing/story/?state=trash") == ["Keep me", "Lose me"]
    changelist = "/admin/publishing/story/?state=trash"
    admin_client.post(
        changelist, {"action": "untrash", "_selected_action": [keep.pk], "index": "0"}
    )
    admin_client.post(changelist, {"action": "purge", "_selected_action": [lose.pk], "index": "0"})

    assert Story.objects.get(pk=keep.pk).trashed_at is None
    assert not Story.objects.filter(pk=lose.pk).exists()


def test_a_restore_of_a_story_deleted_for_good_meanwhile_says_so(admin_client, monkeypatch):
    """Restore from the trash racing a delete for good: story_untrash found no row and
    the action answered 500 (a review's finding). The other stories are restored."""
    first, second = (story_trash(story_id=story_save(title=t, body="Text.").pk) for t in "AB")
    restore = drafts.story_untrash

    def the_other_purged_meanwhile(*, story_id):
        Story.objects.filter(pk=second.pk).delete()
        return restore(story_id=story_id)

    monkeypatch.setattr(drafts, "story_untrash", the_other_purged_meanwhile)
    answer = admin_client.post(
        "/admin/publishing/story/?state=trash",
        {"action": "untrash", "_selected_action": [first.pk, second.pk], "index": "0"},
        follow=True,
    )

    assert answer.status_code == 200
    assert f"Story {second.pk} was deleted for good meanwhile." in answer.content.decode()
    assert Story.objects.get(pk=first.pk).trashed_at is None


def test_delete_in_the_trash_deletes_for_good_one_or_selected(admin_client):
    """A delete of a story in the trash did nothing and said "deleted successfully" (a
    review's finding): it deletes for good, as "Delete forever" does and as WordPress's
    delete does in its trash; the page's Delete and the list's "Delete selected" alike."""
    one, two, three, draft = (story_save(title=t, body="Text.") for t in ("1", "2", "3", "D"))
    for story in (one, two, three):
        story_trash(story_id=story.pk)

    single = admin_client.post(f"/admin/publishing/story/{one.pk}/delete/", {"post": "yes"})
    selected = admin_client.post(
        "/admin/publishing/story/?state=trash",
        {"action": "delete_selected", "_selected_action": [two.pk, three.pk], "post": "yes"},
        follow=True,
    )

    assert single.status_code == 302
    assert "Successfully deleted 2 stories." in selected.content.decode()
    assert list(Story.objects.values_list("pk", flat=True)) == [draft.pk]
    assert Revision.objects.filter(story_id__in=[one.pk, two.pk, three.pk]).count() == 0


AUTOSAVE = "/admin/publishing/story/autosave/"


def test_autosave_makes_the_story_then_saves_it_and_refuses_a_stale_tab(admin_client):
    first = admin_client.post(
        AUTOSAVE, {**article_form(title="Typed", body="Half a"), "story_id": ""}
    )
    assert first.status_code == 200, first.content
    made = first.json()
    assert made["version"] == 1 and made["change_url"] == story_page(made["id"])
    story = Story.objects.get(pk=made["id"])
    tab = {"story_id": str(story.pk), "base_version": "1"}

    second = admin_client.post(AUTOSAVE, {**story_form(story, body="Half a sentence."), **tab})
    assert second.json()["version"] == 2
    stale = admin_client.post(AUTOSAVE, {**story_form(story, body="Other tab."), **tab})

    assert stale.status_code == 409 and "saved elsewhere" in stale.json()["error"]
    assert Story.objects.get(pk=story.pk).body == "Half a sentence."
    assert not Article.objects.exists()  # nothing was published


def test_autosaves_of_a_few_minutes_are_one_version_in_the_history(admin_client):
    """Each autosave was a revision of the whole text: 61 of a 200 KB draft in two
    minutes, 12 MB, and the version published last fell out of the 50 the history
    shows (a review's finding). The same writer's autosaves fold into one for
    AUTOSAVE_FOLD_SECONDS; an explicit save, a publish and a pause each begin another."""

    def autosave(story: Story, body: str) -> int:
        tab = {"story_id": str(story.pk), "base_version": str(story.version)}
        answer = admin_client.post(AUTOSAVE, {**story_form(story, body=body), **tab}).json()
        story.refresh_from_db()
        return answer["version"]

    def history(story: Story) -> list[tuple[int, str, str]]:
        rows = Revision.objects.filter(story=story).order_by("number")
        return list(rows.values_list("number", "note", "body"))

    story = story_save(title="Typing", body="A")
    for body in ("AB", "ABC", "ABCD"):
        autosave(story, body)
    assert story.version == 4
    assert history(story) == [(1, "created", "A"), (4, "autosaved", "ABCD")]

    admin_client.post(story_page(story.pk), {**story_form(story, body="ABCDE"), "_continue": "1"})
    story.refresh_from_db()
    autosave(story, "ABCDEF")
    story_publish(story_id=story.pk)
    story.refresh_from_db()
    autosave(story, "ABCDEFG")  # not into the version published
    # Typing on, an autosave every four minutes (the history's times moved back, as
    # they would be): a version begins every ten, its time the one it began at (moved
    # at each fold, the window never closed: hours of typing were one version).
    for n in range(1, 5):
        Revision.objects.filter(story=story).update(saved_at=F("saved_at") - timedelta(minutes=4))
        autosave(story, f"ABCDEFG {n}")
    assert history(story)[3:] == [
        (6, "autosaved", "ABCDEF"),
        (9, "autosaved", "ABCDEFG 2"),
        (11, "autosaved", "ABCDEFG 4"),
    ]


def test_autosave_of_text_that_is_no_draft_yet_is_a_400_that_stores_nothing(admin_client):
    response = admin_client.post(AUTOSAVE, {**article_form(title="", body="x"), "story_id": ""})

    assert response.status_code == 400 and "title" in response.json()["error"].lower()
    assert not Story.objects.exists()


def test_the_preview_of_a_draft_without_a_date_is_no_problem(admin_client):
    form = {"title": "Undated", "body": "Text.", "publish_at_0": "", "publish_at_1": ""}

    article = admin_client.post("/admin/publishing/article/preview/", form).json()
    draft = admin_client.post("/admin/publishing/article/preview/", {**form, "draft": "1"}).json()

    assert any("date" in problem for problem in article["problems"])
    assert draft["problems"] == [] and "Undated" in draft["html"]


def test_the_previews_of_an_undated_draft_show_the_date_it_keeps(admin_client):
    """Published before, an undated draft keeps its first publish's date when published
    again (stories._date_of_undated); its previews showed today's (a review's finding)."""
    story = story_save(title="Old post", body="First.")
    story_publish(story_id=story.pk)
    first = (timezone.now() - timedelta(days=40)).replace(microsecond=0)
    Article.objects.filter(pk=story.pk).update(publish_at=first, published_publish_at=first)
    Story.objects.filter(pk=story.pk).update(first_publish_at=first)
    story = story_save(story_id=story.pk, title="Old post", body="A typo fixed.", if_version=1)
    form = {"title": "Old post", "body": "A typo fixed.", "draft": "1"}
    form |= {"publish_at_0": "", "publish_at_1": "", "article_id": str(story.pk)}
    shown = f'datetime="{timezone.localtime(first).isoformat()}"'

    desk = admin_client.post("/admin/publishing/article/preview/", form).json()["html"]
    shared = Client().get(f"/preview/{story_share(story_id=story.pk)}/").content.decode()

    assert shown in desk and shown in shared
    assert story_publish(story_id=story.pk).publish_at == first


@pytest.mark.parametrize(
    ("zone", "day", "time"),
    [
        ("Europe/Berlin", "0001-01-01", "00:00:00"),
        ("America/Los_Angeles", "9999-12-31", "23:00:00"),
    ],
)
def test_a_date_past_the_calendar_in_utc_is_a_preview_problem(admin_client, zone, day, time):
    """The preview runs at every pause in typing: a date that leaves datetime's range once
    in UTC (year 1 east of it, 9999 west) was a 500 there (OverflowError in the page's
    dates); it is the problem a save would name."""
    form = {"title": "Edge", "body": "Text.", "publish_at_0": day, "publish_at_1": time}
    with override_settings(TIME_ZONE=zone):
        for extra in ({}, {"draft": "1"}):
            response = admin_client.post("/admin/publishing/article/preview/", {**form, **extra})

            assert response.status_code == 200
            assert "The date must be in the years" in " ".join(response.json()["problems"])


@pytest.mark.parametrize(
    "day",
    [
        "2027-03-28",  # 02:30 does not exist in Berlin: the clocks go from 02:00 to 03:00
        "2026-10-25",  # 02:30 is there twice: the clocks go back from 03:00 to 02:00
    ],
)
def test_a_time_a_daylight_saving_change_skips_or_repeats_is_named_as_the_form_does(
    admin_client, day
):
    """The preview said "not a valid date and time yet" where the form names the time
    and the zone (a review's finding)."""
    said = (
        f"{day} 02:30:00 couldn’t be interpreted in time zone Europe/Berlin; it may be "
        "ambiguous or it may not exist."
    )
    form = {"title": "Night", "body": "Text.", "publish_at_0": day, "publish_at_1": "02:30:00"}
    with override_settings(TIME_ZONE="Europe/Berlin"):
        saved = admin_client.post(STORY_ADD, {**form, "_save": "1"})
        previewed = admin_client.post("/admin/publishing/article/preview/", form)

    assert said in saved.content.decode()
    assert previewed.json()["problems"] == [said]


def test_a_refused_save_and_publish_saves_nothing(admin_client):
    """A draft may have an empty body, an article may not. Saved before its publish was
    refused, "Save and publish" on the add page left a draft holding `brand-new`, and the
    writer's retry went live at `brand-new-2`; on a draft's page the save was made and
    the form, still at the old version, called the writer's next save another's."""
    refused = admin_client.post(
        STORY_ADD, {**article_form(title="Brand new", body=""), "_publish": "1"}
    )
    assert refused.status_code == 200 and not Story.objects.exists()
    admin_client.post(
        STORY_ADD, {**article_form(title="Brand new", body="Now with text."), "_publish": "1"}
    )
    assert list(Story.objects.values_list("slug", flat=True)) == ["brand-new"]

    story = story_save(title="Half", body="Some text.")
    refused = admin_client.post(
        story_page(story.pk), {**story_form(story, body=""), "_publish": "1"}
    )
    assert refused.status_code == 200
    assert Story.objects.get(pk=story.pk).version == story.version
    fixed = admin_client.post(
        story_page(story.pk), {**story_form(story, body="Fixed text."), "_publish": "1"}
    )
    assert "saved elsewhere" not in html.unescape(fixed.content.decode())
    assert Article.objects.get(pk=story.pk).body == "Fixed text."


def test_a_story_in_the_trash_offers_no_preview_link(admin_client):
    """Its link only ever showed "not published yet" (a review's finding)."""
    story = story_save(title="Binned", body="Text.")
    story_trash(story_id=story.pk)

    admin_client.post(f"/admin/publishing/story/{story.pk}/share/")

    assert Story.objects.get(pk=story.pk).preview_key in ("", None)
    page = admin_client.get(story_page(story.pk)).content.decode()
    assert "desk-share" not in page and "restore it to share a preview" in page


@pytest.mark.parametrize(
    ("field", "typed"),
    [
        ("byline", "Jane\tDoe"),  # a tab, pasted
        ("byline", "Jane\x0bDoe"),  # a vertical tab
        ("byline", "Jane\x0cDoe"),  # a form feed
        ("description", "First line.\r\nSecond line."),  # Enter in the text area
        ("description", "First line.\x85Second line."),  # NEL
    ],
)
def test_a_reader_field_with_a_line_break_or_tab_is_saved_one_line_as_the_article_form_does(
    admin_client, field, typed
):
    """The form's model check ran the validators on the text as typed, after the form
    had saved and published it made one line: "Save and publish" answered "must be one
    line" over an article gone live, and an autosave's 400 over a version saved made
    the tab's next one "saved elsewhere" (a review's finding)."""
    one_line = typed.replace("\r\n", " ").replace("\t", " ").replace("\x0b", " ")
    one_line = one_line.replace("\x0c", " ").replace("\x85", " ")
    published = admin_client.post(
        STORY_ADD, {**article_form(title="Pasted", body="Text."), field: typed, "_publish": "1"}
    )

    assert published.status_code == 302, html.unescape(published.content.decode())[-3000:]
    story = Story.objects.get()
    article = Article.objects.get(pk=story.pk)
    assert getattr(story, field) == getattr(article, field) == one_line
    tab = {"story_id": str(story.pk), "base_version": str(story.version)}
    first = admin_client.post(AUTOSAVE, {**story_form(story, body="More."), field: typed, **tab})
    assert first.status_code == 200, first.content
    tab["base_version"] = str(first.json()["version"])
    second = admin_client.post(AUTOSAVE, {**story_form(story, body="More still."), **tab})
    assert second.status_code == 200, second.content


def test_a_refusal_of_the_forms_last_checks_stores_and_publishes_nothing(admin_client, monkeypatch):
    """The form saved (and published) in its clean(), and ModelForm's own checks of the
    model come after it: any refusal there was shown over a save already made. Here a
    uniqueness check refuses, the last of them."""

    def refused(self, exclude=None):
        raise ValidationError({"slug": "Refused by the last check."})

    monkeypatch.setattr(Story, "validate_unique", refused)
    answer = admin_client.post(
        STORY_ADD, {**article_form(title="Late", body="Text."), "_publish": "1"}
    )

    assert answer.status_code == 200 and "Refused by the last check." in answer.content.decode()
    assert not Story.objects.exists() and not Article.objects.exists()


def test_a_withdraw_by_an_editor_who_may_not_see_stories_lands_on_the_article_list(
    django_user_model, client
):
    """The story's page afterwards was a 403 for a user with `change_article` and no
    story permission, after a withdraw that had succeeded (a review's finding)."""
    story = story_save(title="Going", body="Text.")
    story_publish(story_id=story.pk)
    client.force_login(
        staff_with(django_user_model, "view_article", "add_article", "change_article")
    )

    answer = client.post(f"/admin/publishing/article/{story.pk}/withdraw/", follow=True)

    assert answer.redirect_chain == [("/admin/publishing/article/", 302)]
    assert answer.status_code == 200 and "Withdrawn: its page" in answer.content.decode()
    assert not Article.objects.filter(pk=story.pk).exists()


ARTICLE_ADD = "/admin/publishing/article/add/"


def test_save_as_draft_is_offered_only_to_who_may_add_stories(django_user_model, client):
    """Without `add_story` its post to the story's add page was a bare 403, and the text
    typed was lost; with `add_story` alone the draft was saved and the writer sent to its
    page, a 403 (the reviews' findings): it needs `change_story` too."""
    article_perms = ("view_article", "add_article", "change_article")
    for name, story_perms, offered in [
        ("writer", (), False),
        ("adder", ("add_story",), False),
        ("drafter", ("add_story", "change_story"), True),
    ]:
        client.force_login(staff_with(django_user_model, *article_perms, *story_perms, name=name))
        page = client.get(ARTICLE_ADD).content.decode()
        assert ('id="desk-save-draft"' in page) is offered, name


def test_save_and_publish_of_a_scheduled_draft_says_when_it_goes_live(admin_client):
    """It said "it goes live as soon as a worker takes it" of a draft dated tomorrow,
    and its page "On the blog (status: pending)" (a review's finding)."""
    tomorrow = timezone.now() + timedelta(days=1)
    form = article_form(title="Tomorrow", body="Text.", when=tomorrow)

    answer = admin_client.post(STORY_ADD, {**form, "_publish": "1"}, follow=True)

    page = html.unescape(answer.content.decode())
    assert "Saved and scheduled for " in page and "as soon as a worker" not in page
    story = Story.objects.get()
    state = html.unescape(admin_client.get(story_page(story.pk)).content.decode())
    assert "Not on the blog yet: scheduled for " in state and "status: pending" not in state


def test_the_story_page_says_an_article_dead_before_it_was_live_was_never_on_the_blog(
    admin_client,
):
    story = story_save(title="Doomed", body="Text.", publish_at=timezone.now() + timedelta(days=1))
    story_publish(story_id=story.pk)
    Article.objects.filter(pk=story.pk).update(status=ArticleStatus.DEAD, last_error="Boom.")

    page = html.unescape(admin_client.get(story_page(story.pk)).content.decode())

    assert "Never on the blog: dead: Boom." in page and "View the live page" not in page


def live(story_id: int) -> None:
    """What a worker's completion writes (no worker here: this test's messages go where
    nothing listens): the article's content live."""
    Article.objects.filter(pk=story_id).update(
        status=ArticleStatus.PUBLISHED,
        published_hash=F("content_hash"),
        published_at=timezone.now(),
        published_publish_at=F("publish_at"),
    )


def test_a_story_live_once_then_withdrawn_and_dead_is_not_said_never_on_the_blog(admin_client):
    """Its new article row has no live version, but the story was on the blog (the review
    of the mend found "Never on the blog: dead")."""
    with broker(f"redis://127.0.0.1:{free_port()}/0"):
        story = story_save(title="Was live", body="Text.")
        story_publish(story_id=story.pk)
        live(story.pk)
        story_withdraw(article_id=story.pk)
        story_publish(story_id=story.pk)
    Article.objects.filter(pk=story.pk).update(status=ArticleStatus.DEAD, last_error="Boom.")

    page = html.unescape(admin_client.get(story_page(story.pk)).content.decode())

    assert "Not on the blog: dead: Boom." in page and "Never on the blog" not in page


def test_save_and_publish_of_a_live_story_unchanged_says_it_is_live_already(admin_client):
    """Nothing is sent for content already live: "it goes live as soon as a worker takes
    it" was said (the review of the mend)."""
    with broker(f"redis://127.0.0.1:{free_port()}/0"):
        story = story_save(title="Live", body="Text.")
        story_publish(story_id=story.pk)
        live(story.pk)
        story.refresh_from_db()
        answer = admin_client.post(
            story_page(story.pk), {**story_form(story), "_publish": "1"}, follow=True
        )

    said = " ".join(str(m) for m in answer.context["messages"])
    assert "on the blog already" in said and "goes live as soon" not in said, said
    assert Article.objects.get(pk=story.pk).status == ArticleStatus.PUBLISHED


def test_restore_from_the_trash_says_how_many_it_restored(admin_client, monkeypatch):
    """It said "Restored as drafts." when it had restored none: the selection out of the
    trash, or restored by someone else meanwhile (a review's finding)."""
    first, second = (story_trash(story_id=story_save(title=t, body="Text.").pk) for t in "AB")
    restore = drafts.story_untrash

    def the_other_restored_meanwhile(*, story_id):
        if Story.objects.filter(trashed_at__isnull=False).count() == 2:
            restore(story_id=({first.pk, second.pk} - {story_id}).pop())
        return restore(story_id=story_id)

    monkeypatch.setattr(drafts, "story_untrash", the_other_restored_meanwhile)
    trash = "/admin/publishing/story/?state=trash"
    both = {"action": "untrash", "_selected_action": [first.pk, second.pk], "index": "0"}
    page = html.unescape(admin_client.post(trash, both, follow=True).content.decode())

    assert "1 story(ies) restored as drafts." in page
    assert "1 story(ies) not in the trash (restored meanwhile, or never in it)" in page
    again = html.unescape(admin_client.post(trash, both, follow=True).content.decode())
    assert "No story was restored." in again and "restored as drafts" not in again
