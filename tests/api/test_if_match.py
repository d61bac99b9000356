"""If-Match is honoured or refused, never ignored (RFC 9110 §13.1.1; a review's finding:
a PATCH whose If-Match named the draft went live on the article published meanwhile,
and a publish with the reviewed version put a later text live)."""

from __future__ import annotations

import json

import pytest

from publishing.models import Article, Story
from publishing.services.stories import story_publish, story_save

pytestmark = pytest.mark.django_db

ARTICLES = "/api/articles"


def patch(api, story_id: int, fields: dict, if_match: str | None = None):
    headers = {"If-Match": if_match} if if_match is not None else {}
    return api.patch(
        f"{ARTICLES}/{story_id}",
        json.dumps(fields),
        content_type="application/json",
        headers=headers,
    )


def publish(api, story_id: int, if_match: str | None = None):
    headers = {"If-Match": if_match} if if_match is not None else {}
    return api.post(f"{ARTICLES}/{story_id}/publish", headers=headers)


@pytest.mark.parametrize(
    "if_match",
    [
        "1",  # the draft's version when the writer read it
        '"1"',
        'W/"1"',
        '"999"',
    ],
)
def test_a_patch_with_if_match_of_an_article_is_412_and_changes_nothing(api, if_match):
    """The draft was published since the writer read it: the PATCH is refused, not
    applied to the live article."""
    story = story_save(title="T", body="Reviewed.", slug="published-meanwhile")
    story_publish(story_id=story.pk)

    response = patch(api, story.pk, {"body": "WIP"}, if_match)

    assert response.status_code == 412, response.content
    detail = response.json()["detail"]
    assert "names a draft's version" in detail and "GET it again" in detail
    assert Article.objects.get(pk=story.pk).body == "Reviewed."


def test_two_clients_patching_an_article_by_its_etag_lose_nothing(api):
    """GET gives an article's ETag (its content's hash); a PATCH with it as If-Match
    goes through only if nothing changed since (a review's finding: the second of two
    clients' PATCHes, each from its own GET, silently undid the first's paragraph)."""
    story = story_save(title="T", body="para1\n\npara2", slug="two-clients")
    story_publish(story_id=story.pk)
    read = api.get(f"{ARTICLES}/{story.pk}")
    etag = read.headers["ETag"]
    assert etag == f'"{Article.objects.get(pk=story.pk).content_hash}"'

    first = patch(api, story.pk, {"body": "para1\n\npara2\n\nB added this"}, etag)
    second = patch(api, story.pk, {"body": "para1 fixed by A\n\npara2"}, etag)

    assert first.status_code == 200, first.content
    assert first.headers["ETag"] == f'"{Article.objects.get(pk=story.pk).content_hash}"'
    assert first.headers["ETag"] != etag
    assert second.status_code == 412, second.content
    assert "changed since" in second.json()["detail"]
    assert first.headers["ETag"] in second.json()["detail"]
    assert Article.objects.get(pk=story.pk).body == "para1\n\npara2\n\nB added this"
    again = patch(api, story.pk, {"title": "Merged"}, first.headers["ETag"])
    assert again.status_code == 200, again.content


def test_a_drafts_etag_is_its_version_and_an_articles_etag_does_not_match_it(api):
    """A draft's ETag is its version; an article's ETag names content that is no longer
    what the id holds once it is withdrawn to a draft: 412 for a PATCH and a publish."""
    story = story_save(title="T", body="Live.", slug="withdrawn-since")
    story_publish(story_id=story.pk)
    etag = api.get(f"{ARTICLES}/{story.pk}").headers["ETag"]
    assert api.post(f"{ARTICLES}/{story.pk}/withdraw").status_code == 200

    read = api.get(f"{ARTICLES}/{story.pk}")
    version = Story.objects.get(pk=story.pk).version
    edited = patch(api, story.pk, {"body": "Edited."}, etag)
    published = publish(api, story.pk, etag)

    assert read.headers["ETag"] == f'"{version}"'
    assert (edited.status_code, published.status_code) == (412, 412)
    assert Story.objects.get(pk=story.pk).body == "Live."
    assert not Article.objects.filter(pk=story.pk).exists()


def test_a_patch_of_an_article_with_if_match_and_invalid_content_is_400(api):
    """What the request's content has wrong is said first (schemathesis expects a 400
    for a body its schema refuses), as for a draft."""
    story = story_save(title="T", body="Reviewed.", slug="invalid-and-if-match")
    story_publish(story_id=story.pk)

    for fields in ({"title": ""}, {"publish_at": ""}):
        response = patch(api, story.pk, fields, "1")
        assert response.status_code == 400, response.content
        assert set(response.json()["errors"]) == set(fields)


def test_a_patch_of_an_article_with_if_match_any_or_none_is_applied(api):
    story = story_save(title="T", body="Reviewed.", slug="any-version")
    story_publish(story_id=story.pk)

    assert patch(api, story.pk, {"body": "One."}, "*").status_code == 200
    assert patch(api, story.pk, {"title": "Two"}).status_code == 200
    article = Article.objects.get(pk=story.pk)
    assert (article.title, article.body) == ("Two", "One.")


def test_a_publish_with_if_match_of_an_older_version_is_412_and_publishes_nothing(api):
    story = story_save(title="T", body="Reviewed.", slug="edited-after-review")
    assert patch(api, story.pk, {"body": "WIP"}, "1").json()["version"] == 2

    response = publish(api, story.pk, "1")

    assert response.status_code == 412, response.content
    assert "version 2" in response.json()["detail"]
    assert not Article.objects.filter(pk=story.pk).exists()
    assert Story.objects.get(pk=story.pk).state == "draft"


@pytest.mark.parametrize("if_match", ["2", '"2"', 'W/"2"', "*", None])
def test_a_publish_with_if_match_of_the_current_version_or_none_publishes(api, if_match):
    story = story_save(title="T", body="First.", slug="publish-current")
    patch(api, story.pk, {"body": "Reviewed."}, "1")

    response = publish(api, story.pk, if_match)

    assert response.status_code == 200, response.content
    assert response.json()["status"] == "pending"
    assert Article.objects.get(pk=story.pk).body == "Reviewed."


def test_a_publish_with_if_match_checks_the_draft_of_a_published_article(api):
    story = story_save(title="T", body="Live.", slug="published-draft-edited")
    story_publish(story_id=story.pk)
    story_save(story_id=story.pk, title="T", body="Unreviewed.", slug="published-draft-edited")

    response = publish(api, story.pk, "1")

    assert response.status_code == 412, response.content
    assert Article.objects.get(pk=story.pk).body == "Live."


@pytest.mark.parametrize("if_match", ["one", '"1', "1.0", "W/1"])
def test_a_publish_with_an_if_match_that_is_no_version_is_400(api, if_match):
    story = story_save(title="T", body="x", slug="publish-bad-if-match")

    response = publish(api, story.pk, if_match)

    assert response.status_code == 400
    assert "If-Match" in response.json()["errors"]
    assert not Article.objects.filter(pk=story.pk).exists()


def test_a_live_articles_draft_can_be_read_before_it_is_published(api):
    """A live article's draft with changes not published yet: GET /articles/<id> gives
    the live text, and a publish refused for its version asked the client to review a
    draft it could not read (a review's finding). …/draft gives it, with its version as
    ETag, and the 412 names that address."""
    story = story_save(title="Live title", body="Live.", slug="draft-of-a-live-one")
    story_publish(story_id=story.pk)
    story_save(story_id=story.pk, title="New title", slug="draft-of-a-live-one", body="Next.")
    version = Story.objects.get(pk=story.pk).version

    live = api.get(f"{ARTICLES}/{story.pk}").json()
    draft = api.get(f"{ARTICLES}/{story.pk}/draft")
    refused = publish(api, story.pk, str(version - 1))

    assert (live["title"], live["body"]) == ("Live title", "Live.")
    assert draft.status_code == 200, draft.content
    assert (draft.json()["title"], draft.json()["body"]) == ("New title", "Next.")
    assert draft.json()["version"] == version and draft.headers["ETag"] == f'"{version}"'
    assert refused.status_code == 412
    assert f"GET /api/articles/{story.pk}/draft" in refused.json()["detail"]
    assert publish(api, story.pk, draft.headers["ETag"]).status_code == 200
    assert Article.objects.get(pk=story.pk).title == "New title"


def test_an_article_never_opened_in_the_desk_has_no_draft(api):
    made = api.post(
        ARTICLES,
        json.dumps({"title": "By the API", "body": "Text.", "slug": "no-draft-here"}),
        content_type="application/json",
    )
    assert made.status_code == 201, made.content

    assert api.get(f"{ARTICLES}/{made.json()['id']}/draft").status_code == 404


def test_an_articles_etag_is_compared_strongly_and_as_sent(api):
    """If-Match compares strongly (RFC 9110 §13.1.1): a weak tag of the article, or its
    hash in capitals, matches nothing, a 412 (a review's: the weak one was taken, the
    capitals a 400). A publish answers with the article's ETag, for the next PATCH."""
    story = story_save(title="T", body="Text.", slug="strongly")
    published = publish(api, story.pk)
    etag = published.headers["ETag"]
    assert etag == f'"{Article.objects.get(pk=story.pk).content_hash}"'

    weak = patch(api, story.pk, {"body": "Weak."}, f"W/{etag}")
    capitals = patch(api, story.pk, {"body": "Capitals."}, etag.upper())

    assert (weak.status_code, capitals.status_code) == (412, 412)
    assert "weak entity tag" in weak.json()["detail"]
    assert Article.objects.get(pk=story.pk).body == "Text."
    assert patch(api, story.pk, {"body": "Strong."}, etag).status_code == 200


def test_a_delete_with_a_stale_if_match_is_412_and_deletes_nothing(api):
    """DELETE ignored If-Match (a review's finding: a client that read one text deleted
    the article another had rewritten since, 204)."""
    story = story_save(title="T", body="One.", slug="deleted-if-unchanged")
    etag = publish(api, story.pk).headers["ETag"]
    assert patch(api, story.pk, {"body": "Two."}).status_code == 200
    now = api.get(f"{ARTICLES}/{story.pk}").headers["ETag"]

    stale = api.delete(f"{ARTICLES}/{story.pk}", headers={"If-Match": etag})
    weak = api.delete(f"{ARTICLES}/{story.pk}", headers={"If-Match": f"W/{now}"})
    garbage = api.delete(f"{ARTICLES}/{story.pk}", headers={"If-Match": '"deadbeef"'})

    assert (stale.status_code, weak.status_code, garbage.status_code) == (412, 412, 400)
    assert "changed since" in stale.json()["detail"] and now in stale.json()["detail"]
    assert "nothing was deleted" in stale.json()["detail"]
    assert "If-Match" in garbage.json()["errors"]
    assert Article.objects.get(pk=story.pk).body == "Two."
    assert api.delete(f"{ARTICLES}/{story.pk}", headers={"If-Match": now}).status_code == 204
    assert not Article.objects.filter(pk=story.pk).exists()
    assert Story.objects.get(pk=story.pk).trashed_at is not None


def test_a_delete_of_a_draft_with_if_match_checks_its_version(api):
    story = story_save(title="T", body="One.", slug="draft-deleted-if-unchanged")
    assert patch(api, story.pk, {"body": "Two."}, "1").status_code == 200

    stale = api.delete(f"{ARTICLES}/{story.pk}", headers={"If-Match": "1"})

    assert stale.status_code == 412
    assert "version 2" in stale.json()["detail"]
    assert Story.objects.get(pk=story.pk).trashed_at is None
    assert api.delete(f"{ARTICLES}/{story.pk}", headers={"If-Match": '"2"'}).status_code == 204
    assert Story.objects.get(pk=story.pk).trashed_at is not None


def test_a_withdraw_with_a_stale_or_garbage_if_match_is_refused_and_withdraws_nothing(api):
    """Withdraw ignored If-Match too (a review's finding: a garbage one, 200)."""
    story = story_save(title="T", body="One.", slug="withdrawn-if-unchanged")
    etag = publish(api, story.pk).headers["ETag"]
    assert patch(api, story.pk, {"body": "Two."}).status_code == 200
    now = api.get(f"{ARTICLES}/{story.pk}").headers["ETag"]

    stale = api.post(f"{ARTICLES}/{story.pk}/withdraw", headers={"If-Match": etag})
    garbage = api.post(f"{ARTICLES}/{story.pk}/withdraw", headers={"If-Match": '"deadbeef"'})

    assert (stale.status_code, garbage.status_code) == (412, 400)
    assert "nothing was withdrawn" in stale.json()["detail"]
    assert Article.objects.filter(pk=story.pk).exists()
    withdrawn = api.post(f"{ARTICLES}/{story.pk}/withdraw", headers={"If-Match": now})
    assert withdrawn.status_code == 200, withdrawn.content
    assert not Article.objects.filter(pk=story.pk).exists()
