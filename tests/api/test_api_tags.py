"""GET /api/tags: the tags live articles carry, most used first, with the API's
authentication (a read token of a user who may view articles)."""

from __future__ import annotations

import pytest
from django.test import Client

from publishing.models import Article
from publishing.services.live_tags import live_tags_write
from tests.support.api import VIEW, bearer
from tests.support.live_tags import listed_with_tags

pytestmark = pytest.mark.django_db

TAGS = "/api/tags"


def test_the_tags_in_use_most_used_first_with_their_counts(api: Client):
    listed_with_tags(["Python", "web"], ["python", "数据库"], ["PYTHON", "web"], ["pytest"])
    withdrawn = listed_with_tags(["withdrawn-only", "web"], slug="gone")
    Article.objects.filter(pk=withdrawn[0].pk).update(published_hash="")  # not listed

    response = api.get(TAGS)

    assert response.status_code == 200, response.content
    assert response.json() == [
        {"name": "Python", "articles": 3},  # one tag whatever the case
        {"name": "web", "articles": 2},
        {"name": "pytest", "articles": 1},
        {"name": "数据库", "articles": 1},
    ]
    assert [t["name"] for t in api.get(TAGS, {"prefix": "PY"}).json()] == ["Python", "pytest"]
    assert api.get(TAGS, {"limit": 1}).json() == [{"name": "Python", "articles": 3}]


def test_a_byline_is_not_a_tag(api: Client):
    [article] = listed_with_tags(["python"])
    Article.objects.filter(pk=article.pk).update(published_byline="Ann Writer")

    live_tags_write(Article.objects.filter(pk=article.pk))

    assert api.get(TAGS).json() == [{"name": "python", "articles": 1}]


def test_the_tags_need_a_token_that_may_view_articles(make_token):
    assert Client().get(TAGS).status_code == 401
    _user, token = make_token(perms=[VIEW], scope="read")
    assert bearer(token).get(TAGS).status_code == 200
    _user, token = make_token(perms=["add_article"])  # may create, not view
    assert bearer(token).get(TAGS).status_code == 403


def test_an_unknown_query_parameter_is_refused(api: Client):
    assert api.get(TAGS, {"tag": "x"}).status_code == 400
    assert api.get(TAGS, {"limit": 0}).status_code == 400  # names the field


def test_a_prefix_no_tag_could_have_is_refused_not_a_server_error(api: Client):
    """A NUL (PostgreSQL refuses it in a query: it was a 500, found by the schema fuzz)
    or another character the feed cannot carry: 400 naming the prefix."""
    for prefix in ("py\x00", "\x08web"):
        response = api.get(TAGS, {"prefix": prefix})

        assert response.status_code == 400, response.content
        assert "prefix" in response.content.decode()
