"""Failing publishers, dead letters and the operator's requeue, with a real worker."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from publishing.models import Article, ArticleStatus, AttemptOutcome
from tests.support.chaos import journal_entries
from tests.support.waiting import wait_for, wait_status

pytestmark = pytest.mark.django_db(transaction=True)


def outcomes(article: Article) -> list[str]:
    return list(article.publish_attempts.order_by("number", "id").values_list("outcome", flat=True))


def test_transient_failures_are_retried_then_published(worker, make_article, chaos):
    chaos("flaky", fail="transient", until_attempt=3)
    article = make_article(slug="flaky")

    wait_status(article, ArticleStatus.PUBLISHED)

    assert outcomes(article) == [AttemptOutcome.RETRY, AttemptOutcome.RETRY, AttemptOutcome.OK]
    assert article.last_error == ""
    assert article.attempts == 3
    attempts = list(article.publish_attempts.order_by("number"))
    assert "chaos: transient failure" in attempts[0].error
    # Celery retried the task through the broker, each retry under a new task id (a
    # save's own id may be dropped by a group's discard: PublishTask.retry). Its own
    # message ran one of them: often the first, but a message of an earlier test still
    # on its way (a retry's countdown) may claim the row in its group first (seen once).
    assert article.message_id in {a.task_id for a in attempts}
    assert len({a.task_id for a in attempts}) == 3 and all(a.task_id for a in attempts)
    assert len(journal_entries("flaky")) == 1


def test_always_failing_article_is_dead_after_max_attempts_with_one_alert(
    worker, make_article, chaos
):
    chaos("hopeless", fail="transient")
    article = make_article(slug="hopeless", title="Hopeless")

    wait_status(article, ArticleStatus.DEAD)

    assert article.attempts == settings.PUBLISH_MAX_ATTEMPTS
    assert outcomes(article) == [AttemptOutcome.RETRY] * (settings.PUBLISH_MAX_ATTEMPTS - 1) + [
        AttemptOutcome.DEAD
    ]
    assert "chaos: transient failure of hopeless" in article.last_error
    assert article.lease_expires_at is None
    assert journal_entries("hopeless") == []
    mails = wait_for(lambda: alert_mails("Hopeless"), what="the dead-letter alert mail")
    assert len(mails) == 1


def alert_mails(title: str) -> list[str]:
    mail_dir = settings.EMAIL_FILE_PATH
    if not mail_dir.exists():
        return []
    texts = [p.read_text(errors="replace") for p in mail_dir.iterdir()]
    return [t for t in texts if title in t and "is dead" in t]


def test_permanent_error_is_dead_after_one_attempt(worker, make_article, chaos):
    chaos("refused", fail="permanent")
    article = make_article(slug="refused")

    wait_status(article, ArticleStatus.DEAD)

    assert article.attempts == 1
    assert outcomes(article) == [AttemptOutcome.DEAD]
    assert "PermanentPublishError" in article.last_error


def test_requeue_from_the_admin_publishes_a_dead_article(worker, make_article, chaos):
    chaos("revived", fail="permanent")
    article = make_article(slug="revived")
    wait_status(article, ArticleStatus.DEAD)
    chaos("revived")  # the target recovers
    admin = get_user_model().objects.create_superuser("op", "op@example.com", "pw-op-123456")
    client = Client()
    client.force_login(admin)

    response = client.post(
        "/admin/publishing/article/",
        {"action": "requeue", "_selected_action": [article.pk]},
        follow=True,
    )

    assert response.status_code == 200
    assert "1 dead article(s) requeued." in response.content.decode()
    wait_status(article, ArticleStatus.PUBLISHED)
    assert outcomes(article) == [AttemptOutcome.DEAD, AttemptOutcome.OK]
    assert (settings.SITE_ROOT / "revived" / "index.html").exists()


def test_requeue_of_many_from_the_admin_is_one_update_and_a_backlogs_messages(
    worker, make_article, chaos, monkeypatch
):
    """Past ONE_BY_ONE rows the action requeues with one UPDATE a chunk and lets the
    backlog's batches publish them: 10,000 dead rows took 83 s of one web request, an
    UPDATE and a message each (a review's finding)."""
    monkeypatch.setattr("publishing.services.operator.ONE_BY_ONE", 2)
    slugs = [f"many-dead-{n}" for n in range(5)]
    for slug in slugs:
        chaos(slug, fail="permanent")
    articles = [make_article(slug=slug) for slug in slugs]
    for article in articles:
        wait_status(article, ArticleStatus.DEAD)
    for slug in slugs:
        chaos(slug)  # the target recovers
    admin = get_user_model().objects.create_superuser("ops", "ops@example.com", "pw-op-123456")
    client = Client()
    client.force_login(admin)

    with CaptureQueriesContext(connection) as requeue:
        response = client.post(
            "/admin/publishing/article/",
            {"action": "requeue", "_selected_action": [a.pk for a in articles]},
            follow=True,
        )

    assert "5 dead article(s) requeued." in response.content.decode()
    updates = [q for q in requeue.captured_queries if q["sql"].startswith("UPDATE")]
    assert len([q for q in updates if '"publishing_article"' in q["sql"]]) == 1
    for article in articles:
        wait_status(article, ArticleStatus.PUBLISHED)
        assert outcomes(article) == [AttemptOutcome.DEAD, AttemptOutcome.OK]


def test_publish_now_from_the_admin_skips_the_schedule(worker, make_article):
    from datetime import timedelta

    from django.utils import timezone

    article = make_article(publish_at=timezone.now() + timedelta(days=3))
    admin = get_user_model().objects.create_superuser("op2", "op2@example.com", "pw-op-123456")
    client = Client()
    client.force_login(admin)
    assert Article.objects.get(pk=article.pk).status == ArticleStatus.PENDING

    client.post(
        "/admin/publishing/article/",
        {"action": "publish_now", "_selected_action": [article.pk]},
    )

    wait_status(article, ArticleStatus.PUBLISHED)
    assert article.publish_at <= timezone.now()


def test_publish_now_of_a_row_stored_before_a_newer_rule_says_why_it_was_not_sent(
    quiet_article,
):
    """Its date moves to now, a save, which validates: a title stored before titles
    had to show something is refused with the form's message, not a 500."""
    from datetime import timedelta

    from django.utils import timezone

    article = quiet_article("older-rule", publish_at=timezone.now() + timedelta(days=3))
    Article.objects.filter(pk=article.pk).update(title="\u200b\u200b")  # past validation
    admin = get_user_model().objects.create_superuser("op3", "op3@example.com", "pw-op-123456")
    client = Client()
    client.force_login(admin)

    response = client.post(
        "/admin/publishing/article/",
        {"action": "publish_now", "_selected_action": [article.pk]},
        follow=True,
    )

    assert response.status_code == 200
    said = [str(m) for m in response.context["messages"]]
    assert any(f"Article {article.pk} not sent: It shows nothing" in m for m in said), said
    assert Article.objects.get(pk=article.pk).publish_at > timezone.now()
