"""The API lets a token do what the admin lets its user do, and no more (issue 19, 1):
each operation needs its model permission (add, view or change, change, delete, change
for requeue), a write needs a write token, and a token whose user has no permission on
articles does nothing. Through the whole Django app (middleware, auth, the views) with
the test client; the fixtures are tests/support/api.py's."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
from django.contrib.auth.models import Group
from django.test import Client

from api.tokens import token_create
from publishing.models import (
    Article,
    ArticleStatus,
    ArticleTag,
    DeliveryStatus,
    Story,
    Tag,
    WebhookDelivery,
)
from publishing.reader_fields import tag_key, tag_slug
from publishing.services import story_of_article, story_save
from tests.support.api import (
    ADD,
    ADD_STORY,
    ARTICLE_PERMISSIONS,
    CHANGE,
    CHANGE_DELIVERY,
    CHANGE_STORY,
    DELETE,
    DELETE_STORY,
    VIEW,
    article_permissions,
    bearer,
)

pytestmark = pytest.mark.django_db


@dataclass(frozen=True)
class Operation:
    name: str
    method: str
    path: str  # "{id}": the id of an existing dead article (and of its dead webhook delivery)
    body: dict | None
    needs: tuple[str, ...]  # any one of these permissions (codenames)
    writes: bool
    ok: int  # the status when allowed

    def __str__(self) -> str:
        return self.name

    def call(self, client: Client, article_id: int):
        path = self.path.format(id=article_id)
        if self.body is None:
            return getattr(client, self.method)(path)
        return getattr(client, self.method)(
            path, json.dumps(self.body), content_type="application/json"
        )


OPERATIONS = [
    # A draft, as on the desk: the stories' permission; a new article that goes out needs
    # ADD and CHANGE (its own test, below). PATCH and DELETE of a draft: their own tests.
    Operation(
        "create",
        "post",
        "/api/articles",
        {"title": "Made", "body": "x", "status": "draft"},
        (ADD_STORY,),
        True,
        201,
    ),
    # As in the admin, the permission to change implies the permission to view.
    Operation("list", "get", "/api/articles", None, (VIEW, CHANGE), False, 200),
    Operation("get", "get", "/api/articles/{id}", None, (VIEW, CHANGE), False, 200),
    Operation("drafts", "get", "/api/drafts", None, (VIEW, CHANGE), False, 200),
    Operation("draft", "get", "/api/articles/{id}/draft", None, (VIEW, CHANGE), False, 200),
    Operation("tags", "get", "/api/tags", None, (VIEW, CHANGE), False, 200),
    Operation("patch", "patch", "/api/articles/{id}", {"title": "Changed"}, (CHANGE,), True, 200),
    Operation("delete", "delete", "/api/articles/{id}", None, (DELETE,), True, 204),
    Operation("requeue", "post", "/api/articles/{id}/requeue", None, (CHANGE,), True, 200),
    # The article's webhook delivery: its own permission, as the admin's Requeue action
    # (a review's finding: the articles' CHANGE requeued deliveries).
    Operation(
        "requeue-delivery",
        "post",
        "/api/webhook-deliveries/{id}/requeue",
        None,
        (CHANGE_DELIVERY,),
        True,
        200,
    ),
    # Publishing and withdrawing change what readers see, as in the admin (issue 22).
    Operation("publish", "post", "/api/articles/{id}/publish", None, (CHANGE,), True, 200),
    Operation("withdraw", "post", "/api/articles/{id}/withdraw", None, (CHANGE,), True, 200),
]
WRITES = [op for op in OPERATIONS if op.writes]
READS = [op for op in OPERATIONS if not op.writes]
# Each operation with each one permission that allows it, alone.
ALLOWED_BY_ONE = [
    pytest.param(op, perm, id=f"{op}-{perm}") for op in OPERATIONS for perm in op.needs
]


@pytest.fixture
def article() -> Article:
    """Someone else's article, dead, with a dead webhook delivery of the same id (so that
    a requeue of either has something to do), and someone else's draft."""
    article = Article(title="Someone else's", slug="someone-elses", body="Their text.")
    article.full_clean()
    article.save()
    # Dead after an earlier version went live with a tag (what GET /api/tags lists).
    Article.objects.filter(pk=article.pk).update(
        status=ArticleStatus.DEAD, last_error="boom", published_hash="e" * 64
    )
    name = "Someone else's tag"
    tag = Tag.objects.create(name=name, key=tag_key(name), slug=tag_slug(name))
    ArticleTag.objects.create(article=article, tag=tag, publish_at=article.publish_at)
    WebhookDelivery.objects.create(
        pk=article.pk,
        article_id=article.pk,
        event="article.published",
        key="k" * 64,
        body="{}",
        status=DeliveryStatus.DEAD,
    )
    story_save(title="Someone else's draft", body="Not yet.", slug="someone-elses-draft")
    story_of_article(article)  # its own draft, as the desk makes it (…/draft reads it)
    return article


def articles() -> list[tuple]:
    """Everything an operation could change, to compare before and after."""
    return [
        *Article.objects.order_by("pk").values_list("pk", "title", "status", "attempts"),
        *WebhookDelivery.objects.order_by("pk").values_list("pk", "status", "attempts"),
        *Story.objects.order_by("pk").values_list("pk", "title", "version"),  # drafts
    ]


def refused(response, *words: str) -> dict:
    assert response.status_code == 403, response.content
    data = response.json()
    for word in words:
        assert word in data["detail"], data
    return data


# --- each operation × permission -------------------------------------------------------


@pytest.mark.parametrize(("op", "perm"), ALLOWED_BY_ONE)
def test_an_operation_with_exactly_its_permission_is_allowed(make_token, article, op, perm):
    _user, token = make_token(perms=[perm])
    before = articles()

    response = op.call(bearer(token), article.pk)

    assert response.status_code == op.ok, response.content
    assert (articles() != before) == op.writes
    if not op.writes:
        assert "Someone else's" in response.content.decode()


@pytest.mark.parametrize("op", OPERATIONS, ids=str)
def test_an_operation_with_every_other_permission_but_not_its_own_is_403(make_token, article, op):
    others = [perm for perm in ARTICLE_PERMISSIONS if perm not in op.needs]
    _user, token = make_token(perms=others)
    before = articles()

    response = op.call(bearer(token), article.pk)

    refused(response, *(f"publishing.{perm}" for perm in op.needs))
    assert articles() == before
    assert "Someone else's" not in response.content.decode()


@pytest.mark.parametrize("op", OPERATIONS, ids=str)
def test_without_the_permission_a_missing_article_is_403_too_not_404(make_token, op):
    """The permission is checked first: a user who may not do it learns nothing of
    which ids exist (nor whether the body is valid)."""
    others = [perm for perm in ARTICLE_PERMISSIONS if perm not in op.needs]
    _user, token = make_token(perms=others)

    refused(op.call(bearer(token), 987654))


@pytest.mark.parametrize("op", OPERATIONS, ids=str)
def test_a_token_whose_user_lost_every_permission_is_403(make_token, article, op):
    user, token = make_token()
    user.user_permissions.clear()
    before = articles()

    response = op.call(bearer(token), article.pk)

    refused(response, "no permission on articles", user.get_username())
    assert articles() == before


@pytest.mark.parametrize("op", OPERATIONS, ids=str)
def test_a_superuser_may_do_everything_without_a_permission_of_its_own(admin_user, article, op):
    assert admin_user.is_superuser and not admin_user.user_permissions.exists()
    _row, token = token_create(user=admin_user, scope="write")

    assert op.call(bearer(token), article.pk).status_code == op.ok


def test_a_permission_through_a_group_counts_as_in_the_admin(make_token, article):
    user, token = make_token(perms=[VIEW])
    editors = Group.objects.create(name="editors")
    editors.permissions.add(*article_permissions([CHANGE]))
    patch = next(op for op in OPERATIONS if op.name == "patch")
    refused(patch.call(bearer(token), article.pk))

    user.groups.add(editors)

    assert patch.call(bearer(token), article.pk).status_code == 200
    assert Article.objects.get(pk=article.pk).title == "Changed"


# --- scopes ----------------------------------------------------------------------------


@pytest.fixture(params=["editor", "superuser"])
def read_token(request, make_token) -> str:
    """A read token of a user who may do everything."""
    if request.param == "editor":
        return make_token(scope="read")[1]
    return token_create(user=request.getfixturevalue("admin_user"), scope="read")[1]


@pytest.mark.parametrize("op", WRITES, ids=str)
def test_a_read_token_is_refused_every_write(read_token, article, op):
    before = articles()

    response = op.call(bearer(read_token), article.pk)

    refused(response, "read-only", "--scope write")
    assert 'error="insufficient_scope"' in response["WWW-Authenticate"]
    assert articles() == before


@pytest.mark.parametrize("op", READS, ids=str)
def test_a_read_token_reads(read_token, article, op):
    assert op.call(bearer(read_token), article.pk).status_code == op.ok


# --- the table is the API --------------------------------------------------------------


def test_every_operation_of_the_api_is_in_the_table_and_documents_403(client):
    """An operation added to the API without a row here fails this test: its
    permission must be decided (and tested), not left to the default."""
    schema = client.get("/api/schema").json()
    operations = {
        (method, path): spec
        for path, methods in schema["paths"].items()
        for method, spec in methods.items()
    }

    table = {(op.method, op.path) for op in OPERATIONS}
    assert set(operations) == table
    for spec in operations.values():
        assert "403" in spec["responses"]


def test_creating_an_article_that_goes_out_needs_add_and_change(make_token):
    """As the admin's Article → Add: it is published as soon as a worker takes it. With
    `add_article` alone it was published all the same once the admin refused it (a
    review's finding); a draft needs `add_article` only."""
    body = json.dumps({"title": "Goes out", "body": "x"})
    answers = {}
    for perms in ([ADD], [CHANGE], [ADD, CHANGE]):
        _user, token = make_token("-".join(perms), perms=perms)
        answers[tuple(perms)] = bearer(token).post(
            "/api/articles", body, content_type="application/json"
        )

    assert [a.status_code for a in answers.values()] == [403, 403, 201]
    assert '"status": "draft"' in answers[(ADD,)].json()["detail"]
    assert list(Article.objects.values_list("title", flat=True)) == ["Goes out"]


def test_without_change_a_non_draft_is_403_before_its_content_is_looked_at(make_token):
    """The permission comes first (docs/api.md): a user with `add_article` alone got a
    400 naming the bad fields, and saying whether another's draft held the slug (a
    review's finding)."""
    story_save(title="Secret plans", body="x", slug="secret-plans")
    _user, token = make_token(perms=[ADD])
    body = {"title": "", "body": "x", "slug": "secret-plans", "publish_at": "tomorrow"}

    response = bearer(token).post(
        "/api/articles", json.dumps(body), content_type="application/json"
    )

    data = refused(response, f"publishing.{CHANGE}")
    assert data["errors"] == {} and "secret" not in response.content.decode()
    assert not Article.objects.exists()


# --- drafts: the stories' permissions, as on the desk ---------------------------------


def draft_call(token: str, method: str, story: Story, **data):
    client = bearer(token)
    if method == "post":
        body = {"title": "New draft", "body": "x", "status": "draft"}
        return client.post("/api/articles", json.dumps(body), content_type="application/json")
    path = f"/api/articles/{story.pk}"
    if method == "patch":
        return client.patch(path, json.dumps({"body": "Vandal."}), content_type="application/json")
    return client.delete(path, **data)


@pytest.mark.parametrize(
    ("method", "mine", "theirs"),
    [
        # (the method, the stories' permission it needs, the articles' one that was taken)
        ("post", ADD_STORY, ADD),
        ("patch", CHANGE_STORY, CHANGE),
        ("delete", DELETE_STORY, DELETE),
    ],
)
def test_a_draft_needs_the_stories_permission_not_the_articles(make_token, method, mine, theirs):
    """Saving a draft and trashing one on no page need the stories' permissions on the
    desk (StoryAdmin; docs/writing.md); the API took the articles' (a review's finding:
    delete_article and view_article trashed a draft, change_article rewrote one)."""
    story = story_save(title="Someone else's draft", body="Not yet.", slug="theirs")
    _user, token = make_token("article-only", perms=[theirs, VIEW])
    before = articles()

    response = draft_call(token, method, story)

    refused(response, f"publishing.{mine}")
    assert articles() == before
    assert Story.objects.get(pk=story.pk).trashed_at is None
    _user, token = make_token("story-too", perms=[mine, VIEW])
    assert draft_call(token, method, story).status_code in (200, 201, 204)
    trashed = Story.objects.filter(trashed_at__isnull=False).exists()
    assert articles() != before or trashed


@pytest.mark.parametrize(("method", "mine"), [("patch", CHANGE_STORY), ("delete", DELETE_STORY)])
def test_who_may_change_drafts_only_gets_403_for_an_article_and_for_a_missing_id(
    make_token, article, method, mine
):
    """Not a 404 for a missing id: a user who may do it to drafts only learns nothing of
    which ids hold nothing; an article is the articles' permission's."""
    _user, token = make_token(perms=[mine, VIEW])
    before = articles()

    for target in (article, Story(pk=987654)):
        refused(draft_call(token, method, target))
    assert articles() == before


def test_a_delete_with_if_match_of_a_draft_needs_the_stories_permission_too(make_token):
    story = story_save(title="Someone else's draft", body="Not yet.", slug="theirs-if-match")
    _user, token = make_token(perms=[DELETE, VIEW])

    response = draft_call(token, "delete", story, headers={"If-Match": "1"})

    refused(response, f"publishing.{DELETE_STORY}")
    assert Story.objects.get(pk=story.pk).trashed_at is None
