"""Two requests with one Idempotency-Key at once make one article: the unique
constraint on (user, key) decides, and the request that loses answers as a retry."""

from __future__ import annotations

import json
import threading

import pytest
from django.db import connection
from django.test import Client

from api import services
from api.models import IdempotencyKey
from publishing.models import Article


def test_the_request_that_loses_the_race_answers_with_the_winners_article(make_token, monkeypatch):
    """Deterministic: the key is looked up before the other request commits it (the
    first lookup sees nothing), so this request creates an article, then meets the
    committed key at its INSERT. Its article is rolled back; the answer is the other's."""
    user, _token = make_token()
    fields = {"title": "Raced", "body": "x"}
    digest = services.request_digest(fields)
    winner = Article.objects.create(title="Raced", body="x", slug="raced")
    IdempotencyKey.objects.create(user=user, key="race", request_digest=digest, article=winner)
    lookups = []
    real_spent = services._spent

    def spent_after_the_other_commits(user, key):
        lookups.append(key)
        return None if len(lookups) == 1 else real_spent(user, key)

    monkeypatch.setattr(services, "_spent", spent_after_the_other_commits)

    article, created = services.article_create_once(
        user=user, key="race", digest=digest, fields=fields
    )

    assert (article.pk, created) == (winner.pk, False)
    assert len(lookups) == 2
    assert list(Article.objects.values_list("pk", flat=True)) == [winner.pk]


@pytest.mark.django_db(transaction=True)
def test_concurrent_posts_with_one_key_make_one_article(make_token):
    _user, token = make_token()
    rounds, per_round = 5, 3

    def post(key: str, results: list) -> None:
        try:
            client = Client(headers={"Authorization": f"Bearer {token}"})
            response = client.post(
                "/api/articles",
                json.dumps({"title": f"Concurrent {key}", "body": "x"}),
                content_type="application/json",
                headers={"Idempotency-Key": key},
            )
            results.append((response.status_code, response.json().get("id")))
        finally:
            connection.close()

    for n in range(rounds):
        key, results = f"key-{n}", []
        threads = [threading.Thread(target=post, args=(key, results)) for _ in range(per_round)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)

        assert sorted(status for status, _ in results) == [200] * (per_round - 1) + [201]
        assert len({article_id for _, article_id in results}) == 1
    assert Article.objects.count() == rounds
