"""The Article form and the Article list's delete when something else changed the
article meanwhile (a review's findings): a form opened before another save (a second
tab, another writer, the API) is refused with its text kept, as the story form refuses
a stale version; a Save of an article withdrawn since says where it went, with its text;
a delete racing a withdraw takes the draft the withdraw left to the trash, as any
delete does, instead of saying "deleted" of nothing. The desk's numbers in requests
(`"²".isdigit()` is true) are a 400, not a 500."""

from __future__ import annotations

import html
import re

import pytest
from django.contrib import admin
from django.contrib.auth.models import Permission
from django.test import RequestFactory

from publishing.models import Article, Story, StoryState
from publishing.services import article_create, article_update, story_save, story_withdraw
from tests.support.desk import article_form

pytestmark = pytest.mark.django_db


def change_page(article_id: int) -> str:
    return f"/admin/publishing/article/{article_id}/change/"


def opened(admin_client, article: Article) -> dict:
    """What the article's page posts when saved unchanged, read from the page: the
    content, and the hidden hash of the content it was opened at."""
    page = admin_client.get(change_page(article.pk)).content.decode()
    base = re.search(r'name="base_hash" value="([0-9a-f]+)"', page)
    assert base, "the form carries the content hash it was opened at"
    form = article_form(title=article.title, body=article.body, slug=article.slug)
    form.update(
        publish_at_0=article.publish_at.strftime("%Y-%m-%d"),
        publish_at_1=article.publish_at.strftime("%H:%M:%S"),
        description=article.description,
        byline=article.byline,
        tags=", ".join(article.tags),
        language=article.language,
        base_hash=base.group(1),
        _save="Save",
    )
    return form


def errors_of(response) -> str:
    return html.unescape(response.content.decode())


def test_article_form__a_tab_opened_before_another_save_is_refused_with_its_text_kept(
    admin_client, settings
):
    settings.TIME_ZONE = "UTC"
    article = article_create(title="Two tabs", body="Original body.", slug="two-tabs")
    tab_a, tab_b = opened(admin_client, article), opened(admin_client, article)

    saved = admin_client.post(change_page(article.pk), {**tab_a, "title": "Title fixed by A"})
    assert saved.status_code == 302, errors_of(saved)[:3000]
    refused = admin_client.post(change_page(article.pk), {**tab_b, "body": "Body improved by B."})

    assert refused.status_code == 200
    page = errors_of(refused)
    assert "saved elsewhere" in page and "Body improved by B." in page
    article.refresh_from_db()
    assert (article.title, article.body) == ("Title fixed by A", "Original body.")


def test_article_form__a_tab_opened_before_an_api_edit_does_not_wipe_it(admin_client, settings):
    """The API's PATCH saves through the same service (article_update)."""
    settings.TIME_ZONE = "UTC"
    article = article_create(title="Tagged later", body="Body.", slug="tagged-later")
    tab = opened(admin_client, article)
    article_update(article=Article.objects.get(pk=article.pk), tags=["breaking"], description="Why")

    refused = admin_client.post(change_page(article.pk), {**tab, "body": "Edited in the tab."})

    assert refused.status_code == 200 and "saved elsewhere" in errors_of(refused)
    article.refresh_from_db()
    assert (article.tags, article.description, article.body) == (["breaking"], "Why", "Body.")


@pytest.mark.parametrize("base", [None, ""], ids=["left out", "empty"])
def test_article_form__a_save_without_the_hash_it_was_opened_at_is_refused(
    admin_client, settings, base
):
    """A form that does not say what it was opened at (a tab older than the field, a
    script's post) could be checked against nothing: it was saved, and undid an API
    edit (a review's finding). Refused, its text kept in the form."""
    settings.TIME_ZONE = "UTC"
    article = article_create(title="No base", body="Body.", slug="no-base")
    tab = opened(admin_client, article)
    article_update(article=Article.objects.get(pk=article.pk), title="Renamed by the API")
    tab.pop("base_hash")

    refused = admin_client.post(
        change_page(article.pk),
        {**tab, "body": "Edited in the tab."} | ({} if base is None else {"base_hash": base}),
    )

    assert refused.status_code == 200
    page = errors_of(refused)
    assert "does not say which version it was opened at" in page
    assert "Edited in the tab." in page
    article.refresh_from_db()
    assert (article.title, article.body) == ("Renamed by the API", "Body.")


def test_article_form__a_tab_opened_at_the_current_content_saves(admin_client, settings):
    settings.TIME_ZONE = "UTC"
    article = article_create(title="One tab", body="Body.", slug="one-tab")
    first = admin_client.post(change_page(article.pk), {**opened(admin_client, article)})
    article.refresh_from_db()

    again = admin_client.post(
        change_page(article.pk), {**opened(admin_client, article), "body": "Second edit."}
    )

    assert (first.status_code, again.status_code) == (302, 302)
    article.refresh_from_db()
    assert article.body == "Second edit."


def test_article_form__a_save_of_an_article_withdrawn_since_says_where_and_keeps_the_text(
    admin_client, settings
):
    settings.TIME_ZONE = "UTC"
    article = article_create(title="Tab then withdraw", body="Original.", slug="tab-withdraw")
    tab = opened(admin_client, article)
    story_withdraw(article_id=article.pk)

    response = admin_client.post(
        change_page(article.pk), {**tab, "body": "An hour of careful rewriting."}
    )

    assert response.status_code == 200
    page = errors_of(response)
    assert "taken off the blog" in page and "An hour of careful rewriting." in page
    link = f'<a href="/admin/publishing/story/{article.pk}/change/">story {article.pk}</a>'
    assert link in response.content.decode()  # a link, not its escaped text
    assert not Article.objects.filter(pk=article.pk).exists()
    story = Story.objects.get(pk=article.pk)
    assert (story.state, story.body) == (StoryState.DRAFT, "Original.")


def test_article_form__an_article_that_never_was_still_redirects(admin_client):
    response = admin_client.post(change_page(987654), {"title": "x"})

    assert response.status_code == 302 and response["Location"] == "/admin/"


def _admin_request(admin_user, data: dict | None = None):
    request = RequestFactory().post("/admin/publishing/article/", data or {})
    request.user = admin_user
    return request


def test_article_delete__of_one_withdrawn_meanwhile_trashes_the_draft_it_left(admin_user):
    """The delete page read the article, then a withdraw took it before the delete: the
    delete found no row, said "deleted successfully", and the draft stayed publishable."""
    article = article_create(title="Race", body="Body.", slug="race")
    model_admin = admin.site.get_model_admin(Article)
    read_by_the_delete_page = model_admin.get_object(_admin_request(admin_user), str(article.pk))
    story_withdraw(article_id=article.pk)

    model_admin.delete_model(_admin_request(admin_user), read_by_the_delete_page)

    assert not Article.objects.filter(pk=article.pk).exists()
    assert Story.objects.get(pk=article.pk).trashed_at is not None


def test_article_delete_selected__one_withdrawn_meanwhile_goes_to_the_trash_too(admin_user):
    """ "Delete selected": its confirmation posts the ids it listed; one withdrawn since
    is no longer in the list's queryset when the delete runs."""
    withdrawn = article_create(title="Withdrawn", body="Body.", slug="withdrawn")
    deleted = article_create(title="Deleted", body="Body.", slug="deleted")
    bystander = story_save(title="Someone's draft", body="Body.")
    ids = [withdrawn.pk, deleted.pk]
    request = _admin_request(admin_user, {"_selected_action": ids, "post": "yes"})
    story_withdraw(article_id=withdrawn.pk)

    admin.site.get_model_admin(Article).delete_queryset(request, Article.objects.filter(pk__in=ids))

    assert not Article.objects.filter(pk__in=ids).exists()
    trashed = set(Story.objects.filter(trashed_at__isnull=False).values_list("pk", flat=True))
    assert trashed == {withdrawn.pk, deleted.pk}
    assert Story.objects.get(pk=bystander.pk).trashed_at is None


AUTOSAVE = "/admin/publishing/story/autosave/"


# Digits Python's isdigit() takes and int() refuses, letters, and a number past any id.
@pytest.mark.parametrize("story_id", ["²", "١٢", "abc", "1.5", "-3"])
def test_autosave__a_story_id_that_is_no_number_is_a_400(admin_client, story_id):
    form = article_form(title="Typed", body="Half a")

    response = admin_client.post(AUTOSAVE, {**form, "story_id": story_id})

    assert response.status_code == 400
    assert "not a number" in response.json()["error"]
    assert not Story.objects.exists()


@pytest.mark.parametrize("query", ["old=²", "new=³", "old=abc", "old=1&new=٣"])
def test_diff__a_version_that_is_no_number_is_a_400(admin_client, query):
    story = story_save(title="Versions", body="One.")

    response = admin_client.get(f"/admin/publishing/story/{story.pk}/diff/?{query}")

    assert response.status_code == 400
    assert b"Not a version number" in response.content


def test_diff__numbers_still_choose_the_versions(admin_client):
    story = story_save(title="Versions", body="One.")
    story_save(story_id=story.pk, title="Versions", body="Two.")

    response = admin_client.get(f"/admin/publishing/story/{story.pk}/diff/?old=1&new=2")

    assert response.status_code == 200
    assert "One." in response.content.decode() and "Two." in response.content.decode()


def test_autosave__a_story_id_past_any_id_is_a_404(admin_client):
    form = article_form(title="Typed", body="Half a")

    response = admin_client.post(AUTOSAVE, {**form, "story_id": "99999999999999999999"})

    assert response.status_code == 404


def test_article_form__a_save_to_an_id_past_any_is_the_admins_redirect(admin_client):
    response = admin_client.post(change_page(99999999999999999999), {"title": "x"})

    assert response.status_code == 302


def test_article_form__view_only_staff_see_the_page_without_the_hash(django_user_model, client):
    article = article_create(title="Read only", body="Body.", slug="read-only")
    reader = django_user_model.objects.create_user("reader", password="x", is_staff=True)
    reader.user_permissions.add(Permission.objects.get(codename="view_article"))
    client.force_login(reader)

    response = client.get(change_page(article.pk))

    assert response.status_code == 200
    assert 'name="base_hash"' not in response.content.decode()
