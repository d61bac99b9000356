"""Every rule of the HTTP API, through the whole Django app (middleware included), on
the test database: tokens, validation, idempotency, and each operation."""

from __future__ import annotations

import hashlib
import json
import logging

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from api.models import ApiToken, IdempotencyKey
from api.tokens import tokens_revoke
from publishing.models import Article, ArticleStatus, Story
from publishing.services import article_create

pytestmark = pytest.mark.django_db

ARTICLES = "/api/articles"


def post(client: Client, data, **headers):
    body = data if isinstance(data, str | bytes) else json.dumps(data)
    return client.post(ARTICLES, body, content_type="application/json", headers=headers)


def patch(client: Client, article_id: int, data):
    return client.patch(
        f"{ARTICLES}/{article_id}", json.dumps(data), content_type="application/json"
    )


def stored(status=None, **fields) -> Article:
    article = Article(**{"body": "Text.", **fields})
    article.full_clean()
    article.save()
    if status:
        Article.objects.filter(pk=article.pk).update(status=status, last_error="boom", attempts=3)
        article.refresh_from_db()
    return article


# --- tokens: 401 --------------------------------------------------------------------


@pytest.mark.parametrize(
    "authorization",
    [
        None,  # no header
        "Bearer",  # the scheme without a token
        "Bearer bp_not-a-token-anyone-was-given",
        "Basic d3JpdGVyOnB3",  # another scheme
        "bp_token-without-scheme",
    ],
)
def test_a_request_without_a_valid_token_is_401_with_www_authenticate(authorization):
    headers = {"Authorization": authorization} if authorization else {}
    client = Client(headers=headers)

    responses = [
        client.get(ARTICLES),
        client.post(ARTICLES, "{}", content_type="application/json"),
        client.get(f"{ARTICLES}/1"),
        client.delete(f"{ARTICLES}/1"),
        client.post(f"{ARTICLES}/1/requeue"),
    ]

    for response in responses:
        assert response.status_code == 401
        assert response["WWW-Authenticate"].startswith("Bearer ")
        assert response.json()["detail"]
    assert Article.objects.count() == 0


@pytest.mark.parametrize("written", ["{token}", "Token {token}", "bearer:{token}", "Basic {token}"])
def test_a_token_sent_without_its_scheme_is_401_and_never_logged(settings, caplog, token, written):
    """With DEBUG on, django-ninja logged the whole header, the token in it, when its
    scheme was not Bearer (a review's finding)."""
    settings.DEBUG = True
    caplog.set_level(logging.DEBUG)
    response = Client(headers={"Authorization": written.format(token=token)}).get(ARTICLES)

    assert response.status_code == 401
    assert 'error="invalid_token"' in response["WWW-Authenticate"]
    assert not [r for r in caplog.records if token in r.getMessage()]
    # Bearer in any case is the scheme (RFC 9110 §11.1).
    assert Client(headers={"Authorization": f"bEARER {token}"}).get(ARTICLES).status_code == 200


def test_a_revoked_token_is_401_at_once(make_token):
    user, token = make_token()
    client = Client(headers={"Authorization": f"Bearer {token}"})
    assert client.get(ARTICLES).status_code == 200

    tokens_revoke(token_ids=[user.api_tokens.get().pk])

    response = client.get(ARTICLES)
    assert response.status_code == 401
    assert 'error="invalid_token"' in response["WWW-Authenticate"]


@pytest.mark.parametrize("change", [{"is_staff": False}, {"is_active": False}])
def test_a_token_stops_working_when_its_user_is_no_longer_active_staff(make_token, change):
    user, token = make_token()
    get_user_model().objects.filter(pk=user.pk).update(**change)

    response = Client(headers={"Authorization": f"Bearer {token}"}).get(ARTICLES)

    assert response.status_code == 401


def test_only_the_tokens_hash_is_stored(make_token):
    user, token = make_token()

    row = ApiToken.objects.get(user=user)
    assert row.digest == hashlib.sha256(token.encode()).hexdigest()
    stored_text = " ".join(str(getattr(row, f.attname)) for f in ApiToken._meta.concrete_fields)
    assert token not in stored_text
    assert token.startswith(row.prefix) and len(row.prefix) < len(token) // 3


def test_a_request_records_when_its_token_was_last_used(make_token):
    user, token = make_token()
    assert ApiToken.objects.get(user=user).last_used_at is None

    Client(headers={"Authorization": f"Bearer {token}"}).get(ARTICLES)

    assert ApiToken.objects.get(user=user).last_used_at is not None


def test_the_schema_is_served_and_names_the_operations(client):
    schema = client.get("/api/schema").json()

    assert set(schema["paths"]) == {
        "/api/articles",
        "/api/articles/{id}",
        "/api/articles/{id}/requeue",
        "/api/articles/{id}/draft",
        "/api/webhook-deliveries/{id}/requeue",
        "/api/articles/{id}/publish",
        "/api/articles/{id}/withdraw",
        "/api/drafts",
        "/api/tags",
    }
    assert set(schema["paths"]["/api/articles"]) == {"get", "post"}
    assert set(schema["paths"]["/api/articles/{id}"]) == {"get", "patch", "delete"}
    assert schema["components"]["securitySchemes"]["BearerToken"]["scheme"] == "bearer"


# --- POST: 201, and 400 naming each field ------------------------------------------


def test_post_creates_a_pending_article(api):
    response = post(api, {"title": "标题：你好，世界", "body": "# Hi\n\n<script>x</script>"})

    assert response.status_code == 201
    data = response.json()
    article = Article.objects.get(pk=data["id"])
    assert data["status"] == article.status == ArticleStatus.PENDING
    assert data["slug"] == article.slug == "标题你好世界"
    assert data["url"].endswith("/%E6%A0%87%E9%A2%98%E4%BD%A0%E5%A5%BD%E4%B8%96%E7%95%8C/")
    assert article.body == "# Hi\n\n<script>x</script>"  # kept as written; sanitised on render


def test_post_with_slug_and_publish_at(api):
    response = post(
        api,
        {
            "title": "Later",
            "body": "x",
            "slug": "Later-On",
            "publish_at": "2030-01-02T03:04:05+01:00",
        },
    )

    assert response.status_code == 201
    data = response.json()
    assert data["slug"] == "later-on"
    assert data["publish_at"] == "2030-01-02T02:04:05Z"
    assert data["scheduled"] is True


@pytest.mark.parametrize(
    ("given", "stored_as"),
    [
        ("2030-01-02T03:04:05.678Z", "2030-01-02T03:04:05Z"),  # whole seconds, as the admin
        ("2030-01-02t03:04:05z", "2030-01-02T03:04:05Z"),
        # RFC 3339 allows offsets to ±23:59, PostgreSQL stores ±15:59: kept in UTC.
        ("1999-03-04T09:42:10+17:48", "1999-03-03T15:54:10Z"),
    ],
)
def test_post_publish_at_in_any_rfc3339_form(api, given, stored_as):
    response = post(api, {"title": "When", "body": "x", "publish_at": given})

    assert response.status_code == 201
    assert response.json()["publish_at"] == stored_as
    assert Article.objects.get().publish_at.isoformat() == stored_as.replace("Z", "+00:00")


def admin_messages(**fields) -> dict:
    """What the admin's service says of these fields (the API must say the same)."""
    with pytest.raises(ValidationError) as caught:
        article_create(**{"title": "A title", "body": "Text.", **fields})
    return caught.value.message_dict


# Each bad field, and the field the 400 must name. The messages are the admin's.
CONTENT_CASES = [
    ({"title": ""}, "title"),
    ({"title": "   "}, "title"),
    ({"title": "x" * 201}, "title"),
    ({"title": "two\nlines"}, "title"),
    ({"slug": "admin"}, "slug"),  # reserved
    ({"slug": "ＡＰＩ"}, "slug"),  # reserved in another width
    ({"slug": "a/b"}, "slug"),
    ({"slug": "has space"}, "slug"),
    ({"slug": "..", "title": "dots"}, "slug"),
    ({"slug": "é" * 101}, "slug"),  # 202 bytes of UTF-8
    ({"body": ""}, "body"),
    ({"body": "x" * (2**20 + 1)}, "body"),
    ({"body": "control \x01 char"}, "body"),  # a character XML 1.0 cannot carry
]


@pytest.mark.parametrize(("fields", "field"), CONTENT_CASES)
def test_post_invalid_content_is_400_with_the_admins_message_and_stores_nothing(api, fields, field):
    expected = admin_messages(**fields)

    response = post(api, {"title": "A title", "body": "Text.", **fields})

    assert response.status_code == 400
    assert response.json()["errors"][field] == expected[field]
    assert Article.objects.count() == 0


def test_post_a_slug_taken_in_another_case_is_400(api):
    stored(title="First", slug="straße")

    response = post(api, {"title": "Second", "body": "x", "slug": "STRASSE"})

    assert response.status_code == 400
    assert "already exists" in response.json()["errors"]["slug"][0]
    assert Article.objects.count() == 1


@pytest.mark.parametrize("slug", ["\ud800", "a\udfffb"])
def test_a_slug_with_a_lone_surrogate_is_400_on_post_and_patch(api, slug):
    """JSON can carry a lone surrogate (\\ud800); the slug's validators name it, where
    the database's encoder failed with a 500 (a review's finding)."""
    response = post(api, {"title": "A title", "body": "Text.", "slug": slug})
    assert response.status_code == 400
    assert "slug" in response.json()["errors"]
    article = stored(title="Kept", slug="kept")

    response = patch(api, article.pk, {"slug": slug})

    assert response.status_code == 400
    assert "slug" in response.json()["errors"]
    assert Article.objects.get(pk=article.pk).slug == "kept"


def test_post_names_every_bad_field_at_once(api):
    response = post(api, {"title": "", "body": "", "slug": "feed", "publish_at": "tomorrow"})

    assert response.status_code == 400
    assert set(response.json()["errors"]) == {"title", "body", "slug", "publish_at"}
    assert Article.objects.count() == 0


# Input whose shape is wrong: the field named, nothing stored.
SHAPE_CASES = [
    ({"title": 5, "body": "x"}, "title"),
    ({"title": "x", "body": ["a"]}, "body"),
    ({"title": "x", "body": None}, "body"),
    ({"body": "x"}, "title"),  # missing
    ({"title": "x", "body": "x", "status": "published"}, "status"),  # not writable
    ({"title": "x", "body": "x", "publish_at": "2030-01-02"}, "publish_at"),  # no time
    ({"title": "x", "body": "x", "publish_at": "2030-01-02T03:04:05"}, "publish_at"),  # no zone
    ({"title": "x", "body": "x", "publish_at": "2030-02-30T03:04:05Z"}, "publish_at"),
    ({"title": "x", "body": "x", "publish_at": 1700000000}, "publish_at"),
    ({"title": "x", "body": "x", "publish_at": "0001-01-01T00:00:00+01:00"}, "publish_at"),
    (["not", "an", "object"], "__all__"),
    # As the admin's form refuses it, before any query (PostgreSQL cannot compare it).
    ({"title": "x", "body": "x", "slug": "nul\x00"}, "slug"),
    ({"title": "nul\x00", "body": "x"}, "title"),
    ({"title": "x", "body": "nul \x00 char"}, "body"),
]


@pytest.mark.parametrize(("data", "field"), SHAPE_CASES)
def test_post_input_of_the_wrong_shape_is_400_naming_the_field(api, data, field):
    response = post(api, data)

    assert response.status_code == 400
    errors = response.json()["errors"]
    assert field in errors and all(errors[field])
    assert Article.objects.count() == 0


def test_an_unknown_field_is_400_naming_every_field_an_article_has(api):
    """The reader fields too (a review's finding: the message named four fields)."""
    response = post(api, {"title": "x", "body": "x", "colour": "red"})

    assert response.status_code == 400
    [message] = response.json()["errors"]["colour"]
    for name in ("title", "body", "slug", "publish_at", "description", "language", "byline"):
        assert name in message, name
    assert "tags" in message and "status" in message


def test_post_invalid_json_is_400(api):
    response = post(api, '{"title": "x", ')

    assert response.status_code == 400
    assert "JSON" in response.json()["detail"]


def test_an_integer_too_long_to_read_is_400_in_the_apis_words(api):
    """Python reads no integer of more than 4,300 digits (a ValueError of its own, which
    ninja answered with its generic "Cannot parse request body")."""
    response = post(api, '{"title": "T", "body": "x", "tags": [1' + "1" * 5000 + "]}")

    assert response.status_code == 400
    assert response.json()["detail"].startswith("The request body is not valid JSON: ")
    assert "4300 digits" in response.json()["detail"]
    assert not Article.objects.exists()


def test_a_key_given_twice_is_400_naming_it_and_stores_nothing(api):
    """JSON leaves a repeated key undefined and Python keeps the last: one of the
    writer's two titles would vanish without a word."""
    response = post(api, '{"title": "First", "body": "x", "title": "Second"}')

    assert response.status_code == 400
    assert "'title'" in response.json()["detail"] and "twice" in response.json()["detail"]
    assert not Article.objects.exists()


def test_a_body_nested_too_deeply_is_400_saying_so(api):
    response = post(api, "[" * 100_000)

    assert response.status_code == 400
    assert "nested too deeply" in response.json()["detail"]


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"],
)
def test_a_body_not_sent_as_json_is_415_naming_its_type_and_stores_nothing(api, content_type):
    response = api.post(ARTICLES, '{"title": "T", "body": "x"}', content_type=content_type)

    assert response.status_code == 415
    assert content_type.split(";")[0] in response.json()["detail"]
    assert "application/json" in response.json()["detail"]
    assert not Article.objects.exists()


def test_a_json_type_with_a_charset_or_a_suffix_is_read(api):
    for kind in ("application/json; charset=utf-8", "application/merge-patch+json"):
        response = api.post(ARTICLES, json.dumps({"title": kind, "body": "x"}), content_type=kind)
        assert response.status_code == 201, (kind, response.content)


@pytest.mark.parametrize("if_match", ['"1"', 'W/"1"', "1", " 1 "])
def test_if_match_takes_a_version_as_a_number_or_an_entity_tag(api, if_match):
    draft = post(api, {"title": "D", "body": "x", "status": "draft"}).json()
    url = f"{ARTICLES}/{draft['id']}"

    def edit(body: str):
        return api.patch(
            url,
            json.dumps({"body": body}),
            content_type="application/json",
            headers={"If-Match": if_match},
        )

    edited, stale = edit("Second."), edit("Third, from an old tab.")

    assert edited.status_code == 200 and edited.json()["version"] == 2
    assert stale.status_code == 412


@pytest.mark.parametrize("if_match", ["one", '"1', "1.0", "-1", "١", "W/1", 'w/"1"'])
def test_an_if_match_that_is_no_version_is_400_naming_the_header(api, if_match):
    draft = post(api, {"title": "D", "body": "x", "status": "draft"}).json()
    live = post(api, {"title": "L", "body": "x"}).json()

    for target in (draft, live):
        response = api.patch(
            f"{ARTICLES}/{target['id']}",
            json.dumps({"body": "y"}),
            content_type="application/json",
            headers={"If-Match": if_match},
        )
        assert response.status_code == 400, (target, response.content)
        assert "If-Match" in response.json()["errors"], response.json()


def test_post_of_a_request_body_over_the_upload_limit_is_413(api, settings):
    body = "x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1)

    response = post(api, {"title": "Huge", "body": body})

    assert response.status_code == 413
    assert "too large" in response.json()["detail"]
    assert Article.objects.count() == 0


def test_post_needs_no_csrf_token_but_the_admin_still_does(api):
    # `api` enforces CSRF checks, as a browser's session would be held to them.
    assert post(api, {"title": "No CSRF", "body": "x"}).status_code == 201

    response = Client(enforce_csrf_checks=True).post(
        "/admin/login/", {"username": "x", "password": "y"}
    )
    assert response.status_code == 403


# --- Idempotency-Key: 201, then 200 with the same article, 409 with another body ----


def test_the_same_key_and_body_return_the_same_article(api):
    data = {"title": "Once", "body": "Only once.", "slug": "once"}

    first = post(api, data, **{"Idempotency-Key": "k-1"})
    again = post(api, data, **{"Idempotency-Key": "k-1"})
    # The same JSON in another order and layout is the same request.
    reordered = post(
        api, '{ "slug":"once" , "body":"Only once.", "title":"Once"}', **{"Idempotency-Key": "k-1"}
    )

    assert first.status_code == 201
    assert again.status_code == 200 and reordered.status_code == 200
    assert first.json()["id"] == again.json()["id"] == reordered.json()["id"]
    assert Article.objects.count() == 1
    assert IdempotencyKey.objects.get(key="k-1").article_id == first.json()["id"]


def test_the_same_key_with_another_body_is_409_and_stores_nothing(api):
    post(api, {"title": "Once", "body": "x"}, **{"Idempotency-Key": "k-2"})

    response = post(api, {"title": "Another", "body": "x"}, **{"Idempotency-Key": "k-2"})

    assert response.status_code == 409
    assert "another request body" in response.json()["detail"]
    assert list(Article.objects.values_list("title", flat=True)) == ["Once"]


@pytest.mark.parametrize(
    ("first", "retry"),
    [
        ({}, {"status": "pending"}),
        ({}, {"slug": "", "tags": [], "description": "", "language": "", "byline": ""}),
        ({"tags": [], "status": "pending"}, {}),
    ],
)
def test_a_retry_that_spells_out_a_default_or_leaves_it_out_is_the_same_request(api, first, retry):
    """A retry that said `"tags": []` where the first left tags out was "another request
    body", a 409 (a review's finding): the digest is of the request with its defaults."""
    base = {"title": "Once", "body": "Only once."}

    made = post(api, {**base, **first}, **{"Idempotency-Key": "k-defaults"})
    again = post(api, {**base, **retry}, **{"Idempotency-Key": "k-defaults"})
    other = post(api, {**base, "tags": ["x"]}, **{"Idempotency-Key": "k-defaults"})

    assert (made.status_code, again.status_code, other.status_code) == (201, 200, 409)
    assert again.json()["id"] == made.json()["id"]
    assert Article.objects.count() == 1


def test_a_key_spent_before_defaults_were_digested_still_replays(api, token):
    """A key spent before this release holds the digest of the fields sent only: its
    retry with the same body replays; another body is still a 409."""
    body = {"title": "Before", "body": "x"}
    article = article_create(title="Before", body="x", slug="before")
    user = ApiToken.objects.get().user
    former = hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode())
    IdempotencyKey.objects.create(
        user=user, key="k-old", request_digest=former.hexdigest(), article=article
    )

    again = post(api, body, **{"Idempotency-Key": "k-old"})
    other = post(api, {**body, "body": "y"}, **{"Idempotency-Key": "k-old"})

    assert (again.status_code, again.json()["id"]) == (200, article.pk)
    assert other.status_code == 409


def test_keys_belong_to_their_user(api, make_token):
    _other, other_token = make_token()
    other = Client(headers={"Authorization": f"Bearer {other_token}"})

    mine = post(api, {"title": "Mine", "body": "x"}, **{"Idempotency-Key": "shared"})
    theirs = post(other, {"title": "Theirs", "body": "x"}, **{"Idempotency-Key": "shared"})

    assert mine.status_code == theirs.status_code == 201
    assert mine.json()["id"] != theirs.json()["id"]


def test_a_rejected_request_does_not_spend_its_key(api):
    bad = post(api, {"title": "", "body": "x"}, **{"Idempotency-Key": "k-3"})
    good = post(api, {"title": "Fixed", "body": "x"}, **{"Idempotency-Key": "k-3"})

    assert (bad.status_code, good.status_code) == (400, 201)


def test_a_key_whose_article_was_deleted_is_409(api):
    created = post(api, {"title": "Gone", "body": "x"}, **{"Idempotency-Key": "k-4"}).json()
    api.delete(f"{ARTICLES}/{created['id']}")

    response = post(api, {"title": "Gone", "body": "x"}, **{"Idempotency-Key": "k-4"})

    assert response.status_code == 409
    assert "deleted" in response.json()["detail"]
    assert Article.objects.count() == 0


def test_the_keys_are_kept_in_the_database(api, token):
    first = post(api, {"title": "Durable", "body": "x"}, **{"Idempotency-Key": "k-5"}).json()
    # A new client (as another web process would be) finds the key in the database.
    fresh = Client(headers={"Authorization": f"Bearer {token}"})

    again = post(fresh, {"title": "Durable", "body": "x"}, **{"Idempotency-Key": "k-5"})

    assert (again.status_code, again.json()["id"]) == (200, first["id"])


@pytest.mark.parametrize("key", ["x" * 256, "has space", "tab\tkey"])
def test_a_malformed_key_is_400(api, key):
    response = post(api, {"title": "K", "body": "x"}, **{"Idempotency-Key": key})

    assert response.status_code == 400
    assert "Idempotency-Key" in response.json()["errors"]
    assert Article.objects.count() == 0


# --- GET, list, PATCH, DELETE, requeue -----------------------------------------------


def test_get_one_article_says_status_attempts_error_and_url(api):
    article = stored(title="Broken", slug="broken", status=ArticleStatus.DEAD)

    data = api.get(f"{ARTICLES}/{article.pk}").json()

    assert data["status"] == "dead"
    assert (data["attempts"], data["last_error"]) == (3, "boom")
    assert data["url"] == "http://127.0.0.1:8000/broken/"
    assert data["body"] == "Text."


def test_get_an_unknown_article_is_404(api):
    response = api.get(f"{ARTICLES}/987654")

    assert response.status_code == 404
    assert response.json()["detail"]


@pytest.mark.parametrize("bad_id", ["abc", "0", "-1", "99999999999999999999"])
def test_a_malformed_id_is_400(api, bad_id):
    assert api.get(f"{ARTICLES}/{bad_id}").status_code == 400


def test_list_filters_by_status_and_pages(api):
    dead = [
        stored(title=f"Dead {n}", slug=f"dead-{n}", status=ArticleStatus.DEAD) for n in range(3)
    ]
    stored(title="Alive", slug="alive")

    first = api.get(f"{ARTICLES}?status=dead&page_size=2").json()
    second = api.get(f"{ARTICLES}?status=dead&page_size=2&page=2").json()
    everything = api.get(ARTICLES).json()

    assert first["count"] == second["count"] == 3
    ids = [a["id"] for a in first["items"] + second["items"]]
    assert ids == sorted((a.pk for a in dead), reverse=True)  # newest first
    assert {a["status"] for a in first["items"] + second["items"]} == {"dead"}
    assert everything["count"] == 4
    assert "body" not in everything["items"][0]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("status=gone", "status"),
        ("page=0", "page"),
        ("page_size=500", "page_size"),
        ("stauts=dead", "stauts"),
    ],
)
def test_list_with_a_bad_query_is_400_naming_it(api, query, field):
    response = api.get(f"{ARTICLES}?{query}")

    assert response.status_code == 400
    assert field in response.json()["errors"]


@pytest.mark.parametrize(
    ("path", "query", "field"),
    [
        (ARTICLES, "status=dead&status=pending", "status"),
        (ARTICLES, "page_size=1&page_size=200", "page_size"),
        ("/api/drafts", "page=1&page=2", "page"),
        ("/api/tags", "prefix=a&prefix=b", "prefix"),
    ],
)
def test_a_query_parameter_given_twice_is_400_naming_it(api, path, query, field):
    """Ninja took one of the two, and the list answered as if the other had not been
    asked for (a review's finding)."""
    response = api.get(f"{path}?{query}")

    assert response.status_code == 400
    assert response.json()["errors"] == {field: ["Given more than once; give it once."]}


@pytest.mark.parametrize("method", ["get", "delete"])
def test_an_unknown_query_parameter_is_the_requests_fault_not_the_articles(api, method):
    """A read or a delete with a typo in its query said "The article is not valid;
    nothing was stored" (a review's finding): it is the request that is not valid."""
    article = stored(title="Kept", slug="kept-by-a-typo")

    response = getattr(api, method)(f"{ARTICLES}/{article.pk}?x=1")

    assert response.status_code == 400
    assert response.json()["detail"] == "The request is not valid."
    assert response.json()["errors"] == {"x": ["Not a query parameter of this operation."]}
    assert Article.objects.filter(pk=article.pk).exists()


def test_patch_changes_only_the_fields_given(api):
    article = stored(title="Before", slug="before")

    response = patch(api, article.pk, {"title": "After"})

    assert response.status_code == 200
    article.refresh_from_db()
    assert (article.title, article.slug, article.body) == ("After", "before", "Text.")


def test_patch_of_a_published_article_makes_it_pending_again(api):
    article = stored(title="Live", slug="live", status=ArticleStatus.PUBLISHED)
    Article.objects.filter(pk=article.pk).update(published_hash=article.content_hash)

    data = patch(api, article.pk, {"body": "New text."}).json()

    assert data["status"] == "pending"


def test_patch_of_a_dead_article_resets_its_attempts(api):
    article = stored(title="Dead", slug="dead-one", status=ArticleStatus.DEAD)

    data = patch(api, article.pk, {"body": "Fixed."}).json()

    assert (data["status"], data["attempts"], data["last_error"]) == ("pending", 0, "")


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"slug": "admin"}, "slug"),
        ({"title": ""}, "title"),
        ({"publish_at": "soon"}, "publish_at"),
        ({"id": 5}, "id"),
        ({"title": None}, "title"),
    ],
)
def test_patch_invalid_is_400_and_changes_nothing(api, fields, field):
    article = stored(title="Kept", slug="kept")

    response = patch(api, article.pk, fields)

    assert response.status_code == 400
    assert field in response.json()["errors"]
    article.refresh_from_db()
    assert (article.title, article.slug) == ("Kept", "kept")


def test_patch_to_a_taken_slug_is_400(api):
    stored(title="Other", slug="taken")
    article = stored(title="Mine", slug="mine")

    response = patch(api, article.pk, {"slug": "TAKEN"})

    assert response.status_code == 400
    assert Article.objects.get(pk=article.pk).slug == "mine"


def test_delete_removes_the_article(api):
    article = stored(title="Bye", slug="bye")

    response = api.delete(f"{ARTICLES}/{article.pk}")

    assert response.status_code == 204
    assert not Article.objects.filter(pk=article.pk).exists()
    assert api.delete(f"{ARTICLES}/{article.pk}").status_code == 404


def test_requeue_makes_a_dead_article_pending_with_a_fresh_budget(api):
    article = stored(title="Again", slug="again", status=ArticleStatus.DEAD)

    response = api.post(f"{ARTICLES}/{article.pk}/requeue")

    assert response.status_code == 200
    data = response.json()
    assert (data["status"], data["attempts"], data["last_error"]) == ("pending", 0, "")


@pytest.mark.parametrize("status", [ArticleStatus.PENDING, ArticleStatus.PUBLISHED])
def test_requeue_of_an_article_that_is_not_dead_is_409(api, status):
    article = stored(title="Alive", slug="alive", status=status)

    response = api.post(f"{ARTICLES}/{article.pk}/requeue")

    assert response.status_code == 409
    assert Article.objects.get(pk=article.pk).status == status


def test_requeue_of_an_unknown_article_is_404(api):
    assert api.post(f"{ARTICLES}/987654/requeue").status_code == 404


# --- the reader fields (issue 21) ----------------------------------------------------


def test_reader_fields__posted_patched_and_read_back(api):
    response = post(
        api,
        {
            "title": "T",
            "body": "x",
            "byline": " 王小明 ",
            "tags": ["数据库", "Python", "python"],
            "language": "en_GB",
            "description": "Two\nlines.",
        },
    )
    assert response.status_code == 201, response.content
    data = response.json()
    assert (data["byline"], data["tags"], data["language"], data["description"]) == (
        "王小明",
        ["数据库", "Python"],
        "en-GB",
        "Two lines.",
    )

    patched = patch(api, data["id"], {"tags": ["web"]})

    assert patched.status_code == 200, patched.content
    assert patched.json()["tags"] == ["web"] and patched.json()["byline"] == "王小明"
    assert Article.objects.get(pk=data["id"]).tags == ["web"]


def test_reader_fields__a_bad_one_is_a_400_naming_it(api):
    response = post(api, {"title": "T", "body": "x", "language": "english please"})

    assert response.status_code == 400
    assert set(response.json()["errors"]) == {"language"}
    assert not Article.objects.exists()


def test_reader_fields__a_draft_keeps_them_through_a_patch(api):
    created = post(api, {"title": "D", "body": "x", "status": "draft", "byline": "Ann"}).json()

    response = patch(api, created["id"], {"title": "D2"})

    assert response.status_code == 200, response.content
    assert response.json()["byline"] == "Ann" and response.json()["title"] == "D2"


def test_a_request_django_refuses_itself_is_a_json_400_under_the_api(api):
    """A Host header Django refuses (schemathesis sent `G&>`): JSON, as the API documents
    every 400, not Django's HTML page; the rest of the site keeps Django's."""
    response = api.get(ARTICLES, headers={"host": "G&>"})

    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"detail": "Bad request.", "errors": {}}
    assert "text/html" in Client().get("/", headers={"host": "G&>"})["Content-Type"]


# --- drafts: a bad date names the date only (a review's finding) --------------------


@pytest.mark.parametrize(
    ("draft", "errors"),
    [
        # An empty body is a draft's right; status is no content to validate.
        ({"title": "t", "body": ""}, {"publish_at"}),
        # The draft's other rules still speak, in the same answer.
        ({"title": "", "body": ""}, {"title", "publish_at"}),
    ],
)
def test_a_draft_with_a_bad_publish_at_is_400_naming_what_a_draft_has_wrong(api, draft, errors):
    response = post(api, {**draft, "status": "draft", "publish_at": "x"})

    assert response.status_code == 400, response.content
    assert set(response.json()["errors"]) == errors, response.json()
    assert not Story.objects.exists()


def test_a_patch_of_a_draft_with_an_empty_body_and_a_bad_publish_at_names_the_date_only(api):
    created = post(api, {"title": "t", "body": "", "status": "draft"}).json()

    response = patch(api, created["id"], {"publish_at": "x", "byline": "Ann"})

    assert response.status_code == 400, response.content
    assert set(response.json()["errors"]) == {"publish_at"}, response.json()
    assert Story.objects.get(pk=created["id"]).version == 1


# --- the list's items carry the reader fields (a review's finding) -------------------


def test_list_items_carry_the_reader_fields_read_in_one_query(api):
    def listed() -> tuple[list[dict], int]:
        with CaptureQueriesContext(connection) as queries:
            response = api.get(ARTICLES)
        assert response.status_code == 200
        return response.json()["items"], len(queries)

    stored(title="First", slug="first", byline="Ann", tags=["web", "db"], language="fr")
    one, queries_for_one = listed()
    for n in range(3):
        stored(title=f"More {n}", slug=f"more-{n}", description=f"About {n}.")
    four, queries_for_four = listed()

    assert {k: one[0][k] for k in ("description", "language", "byline", "tags")} == {
        "description": "",
        "language": "fr",
        "byline": "Ann",
        "tags": ["web", "db"],
    }
    assert four[0]["description"] == "About 2." and four[0]["tags"] == []
    assert queries_for_four == queries_for_one  # none per item


def test_requeue_of_an_unknown_delivery_is_404_naming_a_delivery(api):
    response = api.post("/api/webhook-deliveries/987654/requeue")

    assert response.status_code == 404
    assert response.json()["detail"] == "No webhook delivery with this id."
