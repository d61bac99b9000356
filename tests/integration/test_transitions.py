"""The state transitions in-process, against the real database, where a worker could not
make the interleaving happen on cue: overtaken attempts, requeues, killed workers."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.test import Client
from django.utils import timezone

from publishing import rollup
from publishing.exceptions import TransientPublishError
from publishing.models import (
    Article,
    ArticleStatus,
    AttemptOutcome,
    DeliveryStatus,
    PublishAttempt,
    WebhookDelivery,
    key_of,
)
from publishing.services import (
    article_claim,
    article_complete,
    article_fail,
    article_publish,
    article_requeue,
    delivery_requeue,
    story_publish,
    story_save,
    story_withdraw,
)
from publishing.services.deliveries import _failed, delivery_claim
from publishing.services.publish import release
from tests.support.desk import article_form
from tests.support.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def edits_stay_here(monkeypatch):
    """An edit's save sends no message: on PostgreSQL the session's worker took the
    edited row the moment the test let it go (attempt 1, leased) before the test read
    it (CI, 2026-12-03)."""
    monkeypatch.setattr("publishing.signals.dispatch_when_due", lambda **kwargs: False)


def lapse_lease(article: Article) -> None:
    past = timezone.now() - timedelta(seconds=1)
    Article.objects.filter(pk=article.pk).update(lease_expires_at=past)


def test_attempt_overtaken_before_a_requeue_cannot_touch_a_later_attempt(
    quiet_article, monkeypatch
):
    # The requeue's message stays here: the session's worker would otherwise race this
    # test for the claim below, and win whenever this process pauses for a few ms.
    monkeypatch.setattr("publishing.services.operator.dispatch_many", lambda *a, **k: [])
    article = quiet_article("overtaken")
    old = article_claim(article_id=article.pk)  # attempt 1, then its worker stalls
    lapse_lease(article)
    for _ in range(settings.PUBLISH_MAX_ATTEMPTS - 1):  # others take over, fail for good
        claim = article_claim(article_id=article.pk)
        article_fail(claim=claim, error="boom", permanent=False)
    assert Article.objects.get(pk=article.pk).status == ArticleStatus.DEAD
    article_requeue(article_id=article.pk)
    new = article_claim(article_id=article.pk)  # attempt 1 again, same content
    assert (new.attempt, new.content_hash) == (old.attempt, old.content_hash)

    stale = article_fail(claim=old, error="late failure", permanent=False)

    row = Article.objects.get(pk=article.pk)
    assert stale.reason == "overtaken"
    assert row.lease_expires_at is not None  # the new attempt still holds its lease
    assert article_claim(article_id=article.pk) is None
    assert article_complete(claim=new).outcome == "published"


@pytest.mark.parametrize("permanent", [False, True], ids=["failed", "failed for good"])
def test_an_attempt_from_before_the_death_cannot_undo_the_requeue(
    quiet_article, monkeypatch, permanent
):
    """Its worker paused past its lease, the row died of attempts that never finished,
    the operator requeued it, and then the paused attempt reported its failure: with the
    token as it was, the row went dead again ("dead after 0 attempts", a second alert)
    before anything tried the requeued row (a review's finding)."""
    monkeypatch.setattr("publishing.services.operator.dispatch_many", lambda *a, **k: [])
    article = quiet_article("paused-past-its-death")
    for _ in range(settings.PUBLISH_MAX_ATTEMPTS - 1):
        article_fail(claim=article_claim(article_id=article.pk), error="boom", permanent=False)
        Article.objects.filter(pk=article.pk).update(next_attempt_at=None)
    paused = article_claim(article_id=article.pk)  # the last attempt; its worker pauses
    lapse_lease(article)
    assert article_claim(article_id=article.pk) is None  # the budget spent: dead
    assert Article.objects.get(pk=article.pk).status == ArticleStatus.DEAD
    assert article_requeue(article_id=article.pk)

    late = article_fail(claim=paused, error="late failure", permanent=permanent)

    row = Article.objects.get(pk=article.pk)
    assert late.reason == "overtaken"
    assert (row.status, row.attempts, row.last_error) == (ArticleStatus.PENDING, 0, "")
    assert article_complete(claim=article_claim(article_id=article.pk)).outcome == "published"


def test_a_try_from_before_the_death_cannot_undo_a_deliverys_requeue(monkeypatch):
    """The same for a webhook delivery: its last try paused past its lease, the delivery
    died of it, the operator requeued it, and the paused try then reported a 503."""
    monkeypatch.setattr("publishing.services.deliveries.deliveries_dispatch", lambda *a, **k: [])
    delivery = WebhookDelivery.objects.create(
        article_id=1,
        event="article.published",
        key="paused-try",
        body="{}",
        attempts=settings.PUBLISH_WEBHOOK_MAX_ATTEMPTS - 1,
    )
    paused = delivery_claim(delivery_id=delivery.pk)  # the last try; its worker pauses
    token, attempt = paused.claims, paused.attempts
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1)
    )
    assert delivery_claim(delivery_id=delivery.pk) is None  # its tries spent: dead
    assert delivery_requeue(delivery_id=delivery.pk)

    _failed(paused, token=token, attempt=attempt, exc=TransientPublishError("late 503"))

    row = WebhookDelivery.objects.get(pk=delivery.pk)
    assert (row.status, row.attempts, row.last_error) == (DeliveryStatus.PENDING, 0, "")


def test_an_attempt_from_before_a_withdraw_cannot_touch_the_story_published_again(monkeypatch):
    """A withdraw deletes the Article and a publish of its story inserts it again under
    the same id: its token started at 0 again, and an attempt of the former row, its
    worker paused past the withdraw, held the new row's first token (a review's
    finding: its late failure put the new row dead)."""
    monkeypatch.setattr("publishing.dispatch.send_batch", lambda *a, **k: 0)  # no worker
    story = story_save(title="Again", body="Same text.", slug="published-again")
    paused = article_claim(article_id=story_publish(story_id=story.pk).pk)
    story_withdraw(article_id=story.pk)
    again = article_claim(article_id=story_publish(story_id=story.pk).pk)
    assert paused.content_hash == again.content_hash and paused.token < again.token

    late = article_fail(claim=paused, error="late failure", permanent=True)

    assert late.reason == "overtaken"
    assert Article.objects.get(pk=story.pk).status == ArticleStatus.PENDING
    assert article_complete(claim=again).outcome == "published"


def test_budget_spent_by_attempts_that_never_finished_makes_it_dead_once(quiet_article):
    article = quiet_article("kills-workers")
    for _ in range(settings.PUBLISH_MAX_ATTEMPTS):
        assert article_claim(article_id=article.pk) is not None  # ... and its worker dies
        lapse_lease(article)

    assert article_claim(article_id=article.pk) is None

    row = Article.objects.get(pk=article.pk)
    assert row.status == ArticleStatus.DEAD
    assert "never finished" in row.last_error
    outcomes = list(row.publish_attempts.order_by("number").values_list("outcome", flat=True))
    assert outcomes == [AttemptOutcome.RETRY] * (settings.PUBLISH_MAX_ATTEMPTS - 1) + [
        AttemptOutcome.DEAD
    ]
    wait_for(lambda: Article.objects.get(pk=article.pk).alerted_at, what="the alert")
    assert article_claim(article_id=article.pk) is None  # and no second death, no alert


def test_a_live_articles_old_address_is_not_free_for_another(quiet_article):
    article = quiet_article("old-address")
    Article.objects.filter(pk=article.pk).update(
        status=ArticleStatus.PUBLISHED, published_hash="x", published_slug="old-address"
    )
    Article.objects.filter(pk=article.pk).update(slug="new-address")  # edit not live yet

    other = Article(title="Other", slug="old-address", body="Other body.")
    with pytest.raises(ValidationError) as caught:
        other.full_clean()
    assert "live page" in " ".join(caught.value.message_dict["slug"])

    derived = Article(title="Old address", slug="", body="Derived.")
    derived.full_clean()
    assert derived.slug == "old-address-2"


def test_saving_unchanged_from_the_admin_publishes_nothing(quiet_article, sent_tasks):
    article = quiet_article("admin-unchanged", body="Line one.\n\nLine two.")
    claim = article_claim(article_id=article.pk)
    assert article_complete(claim=claim).outcome == "published"
    admin = get_user_model().objects.create_superuser("ed", "ed@example.com", "pw-ed-123456")
    client = Client()
    client.force_login(admin)
    local = timezone.localtime(claim.article.publish_at)
    sent_tasks.clear()

    response = client.post(
        f"/admin/publishing/article/{article.pk}/change/",
        {
            "title": "admin-unchanged",
            "slug": "admin-unchanged",
            "base_hash": Article.objects.get(pk=article.pk).content_hash,
            "body": "Line one.\r\n\r\nLine two.\r\n",  # what a browser sends
            "publish_at_0": local.strftime("%Y-%m-%d"),
            "publish_at_1": local.strftime("%H:%M:%S"),
            "publish_attempts-TOTAL_FORMS": "1",
            "publish_attempts-INITIAL_FORMS": "1",
            "publish_attempts-MIN_NUM_FORMS": "0",
            "publish_attempts-MAX_NUM_FORMS": "0",
            "publish_attempts-0-id": str(claim.record.pk),
            "publish_attempts-0-article": str(article.pk),
        },
    )

    assert response.status_code == 302, response.content.decode()[:2000]
    row = Article.objects.get(pk=article.pk)
    assert row.status == ArticleStatus.PUBLISHED
    assert row.content_hash == row.published_hash
    assert sent_tasks == []


def test_a_row_whose_key_was_kept_from_before_keys_publishes_at_its_slugs_key(quiet_article):
    """A slug key kept from before keys (`<key>#<id>`, migration 0007) is not its live
    page's key: the completion records the slug's own key as the live one."""
    article = quiet_article("Kept-Key")
    Article.objects.filter(pk=article.pk).update(slug_key=f"kept-key#{article.pk}")

    claim = article_claim(article_id=article.pk)
    assert article_complete(claim=claim).outcome == "published"

    row = Article.objects.get(pk=article.pk)
    assert row.slug_key == f"kept-key#{article.pk}"
    assert row.published_slug_key == key_of("Kept-Key") == "kept-key"


def test_a_row_edited_after_its_claim_is_let_go_without_a_negative_budget(
    quiet_article, edits_stay_here
):
    """An edit resets the attempt budget (to 0) while the claim keeps its lease; a
    group that then lets the row go untried refunds its attempt: 0, not -1 (the
    column's CHECK would refuse it, and the rest of the group would stay leased)."""
    article = quiet_article("edited-then-let-go")
    claim = article_claim(article_id=article.pk)
    row = Article.objects.get(pk=article.pk)
    row.body = "Edited while claimed."
    row.save()
    assert Article.objects.get(pk=article.pk).attempts == 0

    [result] = release(claims=[claim])

    assert result.outcome == "released"
    row = Article.objects.get(pk=article.pk)
    assert (row.attempts, row.lease_expires_at) == (0, None)


def test_a_failure_of_content_edited_meanwhile_leaves_the_new_content_due_now(
    quiet_article, edits_stay_here
):
    """The old content's failure is not the new content's: no backoff, the fresh budget
    the edit gave it kept, and the attempt says what happened (issue 17)."""
    article = quiet_article("edited-then-failed")
    claim = article_claim(article_id=article.pk)
    row = Article.objects.get(pk=article.pk)
    row.body = "Edited while its old content was failing."
    row.save()

    result = article_fail(claim=claim, error="target down", permanent=False, retry_in=60)

    assert result.outcome == "changed"
    row = Article.objects.get(pk=article.pk)
    assert (row.status, row.attempts, row.next_attempt_at, row.lease_expires_at) == (
        ArticleStatus.PENDING,
        0,
        None,
        None,
    )
    record = row.publish_attempts.get(number=claim.attempt, content_hash=claim.content_hash)
    assert record.outcome == AttemptOutcome.RETRY
    assert "target down" in record.error and "content changed" in record.error


def test_an_overtaken_attempt_that_ends_late_is_counted_once(quiet_article):
    """The claim that takes a stalled attempt's row over records it as never finished
    and counts it; the stalled one, failing later, does not count it again."""
    article = quiet_article("stalled-then-failed")
    before = rollup.totals().attempts["retry"]
    old = article_claim(article_id=article.pk)
    lapse_lease(article)
    new = article_claim(article_id=article.pk)
    assert rollup.totals().attempts["retry"] == before + 1

    stale = article_fail(claim=old, error="late failure", permanent=False)

    assert stale.reason == "overtaken"
    assert rollup.totals().attempts["retry"] == before + 1
    record = PublishAttempt.objects.get(pk=old.record.pk)
    assert record.outcome == AttemptOutcome.RETRY and "late failure" in record.error
    assert article_complete(claim=new).outcome == "published"


def test_the_article_form_warns_when_a_live_articles_slug_moves(quiet_article, sent_tasks):
    """The article form, as the desk's Publish does: a live article saved under another
    slug is told where its old address sends readers; saved under its own, nothing."""
    article = quiet_article("form-moving", body="Text.")
    claim = article_claim(article_id=article.pk)
    assert article_complete(claim=claim).outcome == "published"
    admin = get_user_model().objects.create_superuser("ed", "ed@example.com", "pw-ed-123456")
    client = Client()
    client.force_login(admin)
    when = claim.article.publish_at

    def save(slug: str, body: str) -> list[str]:
        response = client.post(
            f"/admin/publishing/article/{article.pk}/change/",
            article_form(title="form-moving", body=body, slug=slug, when=when)
            | {"base_hash": Article.objects.get(pk=article.pk).content_hash},
            follow=True,
        )
        assert response.status_code == 200, response.content.decode()[:2000]
        return [str(m) for m in response.context["messages"]]

    kept = save("form-moving", "Edited.")
    moved = save("form-moved", "Edited again.")

    assert Article.objects.get(pk=article.pk).slug == "form-moved"
    assert not any("are sent on to the new one" in m for m in kept), kept
    assert any(
        "The address “form-moving” becomes “form-moved”" in m and "are sent on to the new one" in m
        for m in moved
    ), moved

    def moved_live() -> bool:  # here, or by the session's worker, whichever claims it
        article_publish(article_id=article.pk, retry_in=lambda n: 0)
        return Article.objects.filter(pk=article.pk, published_slug="form-moved").exists()

    wait_for(moved_live, what="the move published")
    page = client.get(f"/admin/publishing/article/{article.pk}/change/").content.decode()
    assert "Old addresses sending readers here: <code>form-moving</code>" in page
