"""Drafts in the HTTP API (issue 22): `status: draft` on create, an edit with If-Match,
`POST …/publish` published by a real worker, `POST …/withdraw` back to draft, and a
delete that keeps the text in the trash."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from publishing.models import Article, ArticleStatus, Story
from tests.support.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def api_client(make_token) -> Client:
    return Client(headers={"Authorization": f"Bearer {make_token('drafts')[1]}"})


def send(client: Client, method: str, path: str, body: dict | None = None, **headers):
    data = json.dumps(body) if body is not None else None
    return getattr(client, method)(
        path, data, content_type="application/json", headers=headers or None
    )


def test_a_draft_is_kept_edited_published_withdrawn_and_published_again(worker, api_client):
    made = send(
        api_client, "post", "/api/articles", {"title": "Via API", "body": "One.", "status": "draft"}
    )
    assert made.status_code == 201, made.content
    draft = made.json()
    assert (draft["status"], draft["version"], draft["publish_at"]) == ("draft", 1, None)
    assert not Article.objects.exists()
    listed = send(api_client, "get", "/api/articles").json()
    assert listed["count"] == 0  # the listings are the articles'

    edited = send(
        api_client, "patch", f"/api/articles/{draft['id']}", {"body": "Two."}, **{"If-Match": "1"}
    )
    assert edited.status_code == 200 and edited.json()["version"] == 2
    stale = send(
        api_client,
        "patch",
        f"/api/articles/{draft['id']}",
        {"body": "Old tab."},
        **{"If-Match": "1"},
    )
    assert stale.status_code == 412 and "version 2" in stale.json()["detail"]
    assert Story.objects.get(pk=draft["id"]).body == "Two."

    published = send(api_client, "post", f"/api/articles/{draft['id']}/publish")
    assert published.status_code == 200, published.content
    assert published.json()["id"] == draft["id"]
    wait_for(
        lambda: (
            send(api_client, "get", f"/api/articles/{draft['id']}").json()["status"]
            == ArticleStatus.PUBLISHED
        ),
        timeout=60,
        what="the draft published",
    )

    withdrawn = send(api_client, "post", f"/api/articles/{draft['id']}/withdraw")
    assert withdrawn.status_code == 200 and withdrawn.json()["status"] == "draft"
    assert send(api_client, "get", f"/api/articles/{draft['id']}").json()["status"] == "draft"
    again = send(api_client, "post", f"/api/articles/{draft['id']}/withdraw")
    assert again.status_code == 409

    republished = send(api_client, "post", f"/api/articles/{draft['id']}/publish").json()
    assert (republished["id"], republished["slug"]) == (draft["id"], draft["slug"])


def test_a_bad_draft_is_a_400_naming_the_field_and_stores_nothing(api_client):
    response = send(
        api_client, "post", "/api/articles", {"title": "", "body": "x", "status": "draft"}
    )

    assert response.status_code == 400
    assert "title" in response.json()["errors"]
    assert not Story.objects.exists()


def test_deleting_a_draft_puts_it_in_the_trash(api_client):
    draft = send(
        api_client, "post", "/api/articles", {"title": "Spare", "body": "x", "status": "draft"}
    ).json()

    assert send(api_client, "delete", f"/api/articles/{draft['id']}").status_code == 204

    assert Story.objects.get(pk=draft["id"]).trashed_at is not None
    assert send(api_client, "get", f"/api/articles/{draft['id']}").status_code == 404
    assert send(api_client, "post", f"/api/articles/{draft['id']}/publish").status_code == 404


def test_drafts_are_listed_last_saved_first_and_the_trash_is_not(api_client):
    ids = []
    for title in ("草稿一", "Second draft"):
        draft = {"title": title, "body": "Not yet.", "status": "draft"}
        made = send(api_client, "post", "/api/articles", draft)
        assert made.status_code == 201, made.content
        ids.append(made.json()["id"])
    send(api_client, "patch", f"/api/articles/{ids[0]}", {"body": "Saved last."})

    listed = send(api_client, "get", "/api/drafts")

    assert listed.status_code == 200, listed.content
    page = listed.json()
    assert page["count"] == 2
    assert [item["id"] for item in page["items"]] == [ids[0], ids[1]]
    assert page["items"][0]["title"] == "草稿一" and "body" not in page["items"][0]
    assert send(api_client, "delete", f"/api/articles/{ids[0]}").status_code == 204
    paged = send(api_client, "get", "/api/drafts?page_size=1").json()
    assert (paged["count"], [item["id"] for item in paged["items"]]) == (1, [ids[1]])
    assert send(api_client, "get", "/api/drafts?status=draft").status_code == 400
