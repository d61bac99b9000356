"""A property-based run of schemathesis against /api/schema: every operation, with
generated valid and invalid input and a real token, through the whole Django app
(its middleware included, over WSGI). No response is a 500, and every response matches
the schema: its status is documented, its content type and body conform."""

from __future__ import annotations

import secrets

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from api.models import ApiToken, TokenScope
from api.tokens import token_digest
from publishing.models import Article
from tests.support.api import staff_user

# What "matches the schema" means here. Not `positive_data_acceptance`: the schema
# states the shape of an article, while the content rules (a free slug, Markdown the
# renderer can read, sizes after normalising) are the model's, so schema-valid input
# may rightly get a 400 naming the field.
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    negative_data_rejection,
]


# Loaded from the running app's /api/schema (over WSGI: the schema view needs no database).
schema = schemathesis.openapi.from_wsgi("/api/schema", get_wsgi_application())


# A write token of a staff user with every permission on articles, made for each test
# (the row), known to the auth provider below.
FUZZ_TOKEN = "bp_schemathesis-" + secrets.token_urlsafe(32)


@schema.auth(refresh_interval=None)
class BearerToken:
    """Schemathesis applies the token itself, so it knows the request is authenticated
    (and does not count a request it generated without the header as still valid)."""

    def get(self, case, context) -> str:
        return FUZZ_TOKEN

    def set(self, case, data, context) -> None:
        case.headers = {**(case.headers or {}), "Authorization": f"Bearer {data}"}


@pytest.fixture(autouse=True)
def _staff_token_and_articles(db):
    ApiToken.objects.create(
        user=staff_user("fuzzer"),
        scope=TokenScope.WRITE,
        prefix=FUZZ_TOKEN[:9],
        digest=token_digest(FUZZ_TOKEN),
    )
    # Articles for the operations on one article to find: pending, published, dead.
    for n, status in enumerate(["pending", "published", "dead"] * 4):
        article = Article(title=f"Existing {n}", slug=f"existing-{n}", body=f"Text {n}.")
        article.full_clean()
        article.save()
        Article.objects.filter(pk=article.pk).update(status=status)


def aim_at_an_existing_article(case) -> None:
    """A generated id is a random integer, which names no article: map a well-formed
    one onto an article that exists, so edits, deletes and requeues really run."""
    given = (case.path_parameters or {}).get("id")
    ids = list(Article.objects.order_by("pk").values_list("pk", flat=True))
    if isinstance(given, int) and not isinstance(given, bool) and given >= 1 and ids:
        case.path_parameters["id"] = ids[given % len(ids)]


@pytest.fixture(autouse=True)
def _requests_in_the_test_transaction(db):
    """Each request runs inside the test's transaction, as the test client runs it:
    Django must not close the connection at a request's start or end."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@schema.parametrize()
@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
def test_api_conforms_to_its_schema(case):
    aim_at_an_existing_article(case)
    case.call_and_validate(checks=CHECKS)
