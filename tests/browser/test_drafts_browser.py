"""The writer's workflow in a real browser (issue 22): Playwright drives Debian's
Chromium against a live server, with the real worker publishing.

Write a draft and let it autosave, close the tab, come back and find the text; publish;
edit, see the diff, restore the published version and publish it; share a preview and
open it in a fresh browser context with no session; withdraw, see the page and the
listings gone, and publish again at the same address. Screenshots go to the run's
directory, and to $BLOGPUBLISH_SCREENSHOTS_DIR when set (`docs/img/` holds them).
"""

from __future__ import annotations

import pytest
from django.db import connections

from publishing.models import Article, ArticleStatus, Revision, Story
from publishing.services import story_of_article, story_save
from tests.browser.test_desk_browser import TIMEOUT_MS, save_shot
from tests.support.browser import log_in
from tests.support.live_tags import listed_with_tags
from tests.support.site import read_site
from tests.support.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

FIRST = "The garden woke up **early** this year."
TYPED_LATER = "\n\nThe apple tree is still asleep."


def published(story_id: int, body: str) -> bool:
    return Article.objects.filter(
        pk=story_id, status=ArticleStatus.PUBLISHED, published_body=body
    ).exists()


def test_autosave_publish_diff_restore_share_and_withdraw(
    worker, live_server, admin_user, browser, screenshots, settings, monkeypatch, request
):
    from playwright.sync_api import expect

    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    request.addfinalizer(connections.close_all)
    settings.SITE_URL = live_server.url
    settings.SESSION_COOKIE_SECURE = settings.CSRF_COOKIE_SECURE = False
    expect.set_options(timeout=TIMEOUT_MS)
    writer = browser.new_context(viewport={"width": 1440, "height": 1000})
    page = writer.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    log_in(
        page, live_server.url, admin_user.username, "password", then="/admin/publishing/story/add/"
    )

    # Write: the draft saves itself, and the page becomes the story's.
    page.fill("#id_title", "Spring in the garden")
    page.fill("#id_body", FIRST)
    expect(page.locator("#desk-autosave")).to_contain_text("Draft saved")
    page.wait_for_url("**/admin/publishing/story/*/change/")
    story = Story.objects.get()
    assert not Article.objects.exists()

    # Type more and close the tab at once: the text is there when the writer comes back.
    page.locator("#id_body").press("End")
    page.locator("#id_body").type(TYPED_LATER)
    page.close(run_before_unload=True)
    wait_for(
        lambda: Story.objects.get(pk=story.pk).body == FIRST + TYPED_LATER,
        what="the text typed before closing to be saved",
    )
    page = writer.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    change = f"{live_server.url}/admin/publishing/story/{story.pk}/change/"
    page.goto(change)
    expect(page.locator("#id_body")).to_have_value(FIRST + TYPED_LATER)
    save_shot(page, screenshots, "draft-autosaved.png", full_page=True)

    # Publish: the worker puts it on the site.
    page.click("#desk-publish")
    wait_for(lambda: published(story.pk, FIRST + TYPED_LATER), what="the draft published")
    slug = Article.objects.get(pk=story.pk).slug
    reader = page.context.new_page()
    reader.goto(f"{live_server.url}/{slug}/")
    expect(reader.locator("h1")).to_have_text("Spring in the garden")

    # Edit the draft: the site keeps the published text; the diff shows the change.
    page.goto(change)
    page.fill("#id_body", "The garden is a mess.")
    page.click("input[name=_continue]")
    expect(page.locator(".desk-story-state")).to_contain_text("changes not published yet")
    page.click("text=Compare versions")
    page.select_option("select[name=old]", str(Story.objects.get(pk=story.pk).published_version))
    page.click("input[value=Compare]")
    expect(page.locator(".desk-diff-del")).to_contain_text(["The garden woke up"])
    expect(page.locator(".desk-diff-add")).to_contain_text(["The garden is a mess."])
    save_shot(page, screenshots, "draft-diff.png", full_page=True)

    # Restore the published version, and publish it.
    page.goto(change)
    number = Story.objects.get(pk=story.pk).published_version
    page.locator(f"button.desk-restore[formaction$='/restore/{number}/']").click()
    expect(page.locator(".messagelist")).to_contain_text(f"Version {number} is the draft again")
    expect(page.locator("#id_body")).to_have_value(FIRST + TYPED_LATER)
    page.click("#desk-publish")
    wait_for(
        lambda: not Story.objects.get(pk=story.pk).has_unpublished_changes,
        what="the restored version published",
    )

    # Share a preview of a new edit; a browser with no session reads it.
    page.goto(change)
    page.fill("#id_body", "A *new* paragraph for the editor.")
    page.click("input[name=_continue]")
    page.click("#desk-share")
    link = page.locator("#desk-share-link").get_attribute("href")
    save_shot(page, screenshots, "draft-share.png")
    stranger = browser.new_context()
    shared = stranger.new_page()
    shared.goto(link)
    expect(shared.locator("h1")).to_have_text("Spring in the garden")
    expect(shared.locator("article em")).to_have_text("new")
    assert shared.locator("meta[name=robots]").get_attribute("content") == "noindex, nofollow"
    save_shot(shared, screenshots, "shared-preview.png", full_page=True)
    stranger.close()

    # Withdraw: the page and the listings go; publishing again puts it back there.
    page.goto(change)
    page.click("#desk-withdraw")
    expect(page.locator(".messagelist")).to_contain_text("Withdrawn")
    wait_for(
        lambda: (
            slug not in read_site(settings.SITE_ROOT).dirs
            and slug not in read_site(settings.SITE_ROOT).front.slugs
        ),
        timeout=60,
        what="the withdrawn page and its listing gone",
    )
    assert reader.goto(f"{live_server.url}/{slug}/").status == 404
    page.click("#desk-publish")
    wait_for(lambda: Article.objects.filter(pk=story.pk, status="published").exists())
    assert Article.objects.get(pk=story.pk).slug == slug
    reader.goto(f"{live_server.url}/{slug}/")
    expect(reader.locator("article em")).to_have_text("new")
    writer.close()


@pytest.mark.each_database  # two saves of one draft at once: the database's locks decide
def test_save_draft_pressed_while_the_first_autosave_is_on_its_way_makes_one_story(
    live_server, admin_user, browser, settings, monkeypatch, request
):
    """The first autosave of a new story makes the story; "Save draft" pressed before
    its answer came waits for it and saves that story (issue 22 review: two stories,
    "x" and "x-2", were made)."""
    from playwright.sync_api import expect

    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    request.addfinalizer(connections.close_all)
    settings.SESSION_COOKIE_SECURE = settings.CSRF_COOKIE_SECURE = False
    expect.set_options(timeout=TIMEOUT_MS)
    page = browser.new_context().new_page()
    page.set_default_timeout(TIMEOUT_MS)
    log_in(
        page, live_server.url, admin_user.username, "password", then="/admin/publishing/story/add/"
    )
    # The autosave reaches the server (which makes the story); its answer is held back
    # from the page until the test lets it go.
    held = []

    def hold_the_answer(route) -> None:
        held.append((route, route.fetch()))

    page.route("**/admin/publishing/story/autosave/", hold_the_answer)

    page.fill("#id_title", "One story")
    page.fill("#id_body", "Typed, then saved at once.")
    deadline = TIMEOUT_MS
    while not held and deadline > 0:  # the autosave starts 2 s after typing stops
        page.wait_for_timeout(50)
        deadline -= 50
    assert held, "the autosave never started"
    assert Story.objects.count() == 1  # made by the autosave, unknown to the page yet
    page.click("input[name=_continue]")  # Save draft, with the autosave unanswered
    route, answer = held[0]
    route.fulfill(response=answer)

    page.wait_for_url("**/admin/publishing/story/*/change/")
    wait_for(lambda: Story.objects.filter(body="Typed, then saved at once.").exists())
    assert Story.objects.count() == 1
    expect(page.locator(".messagelist")).not_to_contain_text("elsewhere")


@pytest.fixture
def desk(live_server, admin_user, browser, settings, monkeypatch, request):
    """A signed-in tab on the desk: `desk(path)` opens it there (its browser context is
    the page's `.context`)."""
    from playwright.sync_api import expect

    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    request.addfinalizer(connections.close_all)
    settings.SESSION_COOKIE_SECURE = settings.CSRF_COOKIE_SECURE = False
    expect.set_options(timeout=TIMEOUT_MS)
    context = browser.new_context()
    request.addfinalizer(context.close)

    def open_at(path: str):
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        log_in(page, live_server.url, admin_user.username, "password", then=path)
        return page

    return open_at


def test_an_autosave_after_the_session_ended_says_it_saved_nothing(desk):
    """Signed out meanwhile (the session ended, Log out in another tab), the autosave is
    sent the login page: followed, it was a 200, and the desk said "Draft saved" over
    text saved nowhere (a review's finding)."""
    from playwright.sync_api import expect

    page = desk("/admin/publishing/story/add/")
    page.fill("#id_title", "Session")
    page.fill("#id_body", "Saved while signed in.")
    expect(page.locator("#desk-autosave")).to_contain_text("Draft saved")
    page.context.clear_cookies(name="sessionid")

    page.fill("#id_body", "Saved while signed in. An hour of work after that.")

    expect(page.locator("#desk-autosave")).to_contain_text("Not saved: you are signed out")
    assert Story.objects.get().body == "Saved while signed in."


def test_text_typed_before_restore_is_saved_first_as_a_version(desk):
    """Restore (and Withdraw, Share) belong to another form: text typed and not yet
    autosaved was thrown away by it (a review's finding). It is saved first, so it is a
    version in the history the restore starts from."""
    from playwright.sync_api import expect

    story = story_save(title="Restore", body="Version one.")
    story = story_save(story_id=story.pk, title="Restore", body="Version two.", if_version=1)
    page = desk(f"/admin/publishing/story/{story.pk}/change/")
    page.locator("#id_body").press("End")
    page.locator("#id_body").type(" A paragraph typed just now.")

    page.locator("button.desk-restore").last.click()  # version 1: the history is newest first

    expect(page.locator(".messagelist")).to_contain_text("Version 1 is the draft again")
    bodies = list(
        Revision.objects.filter(story=story).order_by("number").values_list("body", flat=True)
    )
    assert bodies == [
        "Version one.",
        "Version two.",
        "Version two. A paragraph typed just now.",
        "Version one.",
    ]


def test_closing_a_tab_whose_text_another_save_refused_asks_first(desk):
    """After a 409 (another tab saved since) the text typed is saved nowhere: the
    browser asks before the tab closes, as for any form with unsaved text (a review's
    finding); a tab with everything saved closes without asking."""
    from playwright.sync_api import expect

    story = story_save(title="Two tabs", body="Mine.")
    page = desk(f"/admin/publishing/story/{story.pk}/change/")
    story_save(story_id=story.pk, title="Two tabs", body="The other tab's.", if_version=1)
    page.locator("#id_body").press("End")
    page.locator("#id_body").type(" And more of mine.")
    expect(page.locator("#desk-autosave")).to_contain_text("elsewhere")
    url, context = page.url, page.context
    with page.expect_event("dialog") as asked:
        page.close(run_before_unload=True)

    assert asked.value.type == "beforeunload"
    asked.value.accept()
    quiet = context.new_page()
    quiet.goto(url)
    with quiet.expect_event("close"):  # a dialog would keep it open
        quiet.close(run_before_unload=True)


def test_the_preview_shows_the_reader_fields_and_leaves_the_article_itself_out(desk):
    """The desk sent the preview only the title, slug, body and date: the byline, tags,
    description and language typed were not shown, nor did typing them refresh it; and
    without the page's id a published article's preview was its own related article
    (a review's findings)."""
    from playwright.sync_api import expect

    older, me = listed_with_tags(["python"], ["python"])
    page = desk(f"/admin/publishing/story/{story_of_article(me).pk}/change/")
    frame = page.frame_locator("#desk-frame")
    expect(frame.locator(f'aside.related a[href="/{older.slug}/"]')).to_have_count(1)
    expect(frame.locator(f'a[href="/{me.slug}/"]')).to_have_count(0)

    page.fill("#id_byline", "Ada Lovelace")
    page.fill("#id_tags", "python, engines")
    page.fill("#id_description", "Notes on the engine.")
    page.fill("#id_language", "fr")

    expect(frame.locator("body")).to_contain_text("Ada Lovelace")
    expect(frame.locator('a[href="/tag/engines/"]')).to_have_count(1)
    expect(frame.locator("meta[name=description]")).to_have_attribute(
        "content", "Notes on the engine."
    )
    expect(frame.locator("html")).to_have_attribute("lang", "fr")


def test_closing_a_tab_while_its_autosave_is_on_its_way_asks_first(desk):
    """The autosave on its way (a slow upload) is cut off with the page, and its text
    was in no beacon: the tab closed without a word and the text was saved nowhere (a
    review's finding). The browser asks; staying, the autosave lands."""
    from playwright.sync_api import expect

    story = story_save(title="Slow link", body="Saved before.")
    page = desk(f"/admin/publishing/story/{story.pk}/change/")
    held = []
    page.route("**/admin/publishing/story/autosave/", lambda route: held.append(route))
    page.locator("#id_body").press("End")
    page.locator("#id_body").type(" An hour of work.")
    deadline = TIMEOUT_MS
    while not held and deadline > 0:  # the autosave starts 2 s after typing stops
        page.wait_for_timeout(50)  # Playwright's events run only inside its calls
        deadline -= 50
    assert held, "the autosave never started"

    with page.expect_event("dialog") as asked:
        page.close(run_before_unload=True)

    assert asked.value.type == "beforeunload"
    asked.value.dismiss()  # stay
    held[0].continue_()
    expect(page.locator("#desk-autosave")).to_contain_text("Draft saved")
    assert Story.objects.get(pk=story.pk).body == "Saved before. An hour of work."
    with page.expect_event("close"):  # saved: a dialog would keep it open
        page.close(run_before_unload=True)


@pytest.mark.parametrize(
    "body",
    [
        "A long chapter. " * 5000,  # 80,000 bytes
        # 55,000 bytes typed, 66,000 sent: each line break goes as CR LF, and counted as
        # typed the text passed for one that fits (a review of the mend).
        "abcd\n" * 11000,
    ],
    ids=["long", "many short lines"],
)
def test_closing_a_tab_with_more_unsaved_text_than_a_beacon_carries_asks_first(desk, body):
    """The text typed since the last autosave goes in a beacon as the tab closes; a
    beacon carries at most 64 KiB (the body may have 1 MiB), and the browser refuses a
    larger one: the browser asks before the tab closes instead."""
    story = story_save(title="Long read", body="Short so far.")
    page = desk(f"/admin/publishing/story/{story.pk}/change/")
    page.locator("#id_body").evaluate(  # as typed (fill() took minutes on 11,000 lines)
        "(body, text) => { body.value = text;"
        " body.dispatchEvent(new Event('input', {bubbles: true})); }",
        body,
    )

    with page.expect_event("dialog") as asked:
        page.close(run_before_unload=True)

    assert asked.value.type == "beforeunload"
    asked.value.accept()
