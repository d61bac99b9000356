"""What operators watch, with a real worker process on a queue of this module's own
(it logs JSON): /metrics counts that process's publishes (the scraping process never
ran one), its log lines name the article, the attempt and the task, and the request id
of the web request that saved the article follows the save into the worker."""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from publishing import rollup
from publishing.models import Article, ArticleStatus, MetricsBucket, WebhookDelivery
from tests.support import processes
from tests.support.own_worker import own_worker
from tests.support.waiting import wait_for

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.broker,  # a worker of the module's own takes its messages: runs again on RabbitMQ
]

TOKEN = "observability-scrape-token"


@pytest.fixture(scope="module")
def json_worker(django_db_setup, django_db_blocker):
    """A worker process logging JSON, alone on this module's queue."""
    with own_worker(
        "json-worker", suffix="obs", env={"LOG_FORMAT": "json"}, db_blocker=django_db_blocker
    ) as worker:
        yield worker


def wait_published(article_ids: list[int], timeout: float = 60.0) -> None:
    def done() -> bool:
        published = Article.objects.filter(pk__in=article_ids, status=ArticleStatus.PUBLISHED)
        return published.count() == len(article_ids)

    wait_for(done, timeout=timeout, what=f"articles {article_ids} to be published")


def scrape(client) -> dict:
    response = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200
    samples = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            samples[sample.name, tuple(sorted(sample.labels.items()))] = sample.value
    return samples


def json_lines(worker: processes.Proc) -> list[dict]:
    lines = []
    for line in worker.log.read_text(errors="replace").splitlines():
        if line.startswith("{"):
            lines.append(json.loads(line))
    return lines


def test_metrics__count_the_publishes_of_a_separate_worker_process(
    json_worker, client, settings, make_article
):
    settings.METRICS_TOKEN = TOKEN
    before = scrape(client)

    articles = [make_article(title=f"Counted {i}") for i in range(3)]
    wait_published([a.pk for a in articles])
    after = scrape(client)

    def delta(name: str, **labels) -> float:
        key = (name, tuple(sorted(labels.items())))
        return after.get(key, 0) - before.get(key, 0)

    assert delta("blogpublish_attempts_total", outcome="ok") == 3
    assert delta("blogpublish_publish_latency_seconds_count") == 3
    assert delta("blogpublish_publish_latency_seconds_bucket", le="+Inf") == 3
    assert delta("blogpublish_attempt_duration_seconds_count") == 3
    assert delta("blogpublish_publish_latency_seconds_sum") > 0
    assert delta("blogpublish_attempt_duration_seconds_sum") > 0
    assert ("blogpublish_articles", (("status", "published"),)) in after
    queue = settings.CELERY_TASK_DEFAULT_QUEUE
    assert after[("blogpublish_queue_messages", (("queue", queue),))] >= 0
    # The counts come from the database (the rollup), not from this process's memory.
    assert MetricsBucket.objects.filter(metric="attempts", label="ok").exists()


def test_metrics__a_failed_attempt_counts_as_retry_and_the_last_as_dead(
    json_worker, client, settings, make_article, chaos
):
    settings.METRICS_TOKEN = TOKEN
    before = scrape(client)
    chaos("always-fails", fail="transient")  # PUBLISH_MAX_ATTEMPTS=3 in tests

    article = make_article(slug="always-fails")
    wait_for(
        lambda: Article.objects.get(pk=article.pk).status == ArticleStatus.DEAD,
        timeout=60,
        what="the article to die",
    )
    after = scrape(client)

    def delta(outcome: str) -> float:
        key = ("blogpublish_attempts_total", (("outcome", outcome),))
        return after.get(key, 0) - before.get(key, 0)

    assert (delta("retry"), delta("dead"), delta("ok")) == (2, 1, 0)


def test_logs__the_json_lines_of_one_publish_carry_article_attempt_and_task(
    json_worker, make_article
):
    article = make_article(title="Logged")
    wait_published([article.pk])

    def lines_of_article() -> list[dict]:
        lines = [line for line in json_lines(json_worker) if line.get("article_id") == article.pk]
        return lines if any("published" in line.get("message", "") for line in lines) else []

    lines = wait_for(lines_of_article, timeout=20, what="the worker's log lines")
    published = [line for line in lines if re.search(r"published \(attempt", line["message"])]
    assert published, lines
    for line in published:
        assert line["attempt"] == 1
        assert re.fullmatch(r"[0-9a-f-]{36}", line["task_id"])
    task_ids = {line["task_id"] for line in lines}
    assert len(task_ids) == 1, lines


def test_logs__a_save_in_a_web_request_passes_its_request_id_to_the_worker(json_worker, client):
    client.force_login(User.objects.create_superuser("editor", password="x"))
    request_id = "req-0123456789abcdef"

    now = timezone.now()
    form = {
        "title": "Saved from the admin",
        "slug": "",
        "body": "Hello",
        "publish_at_0": f"{now:%Y-%m-%d}",
        "publish_at_1": f"{now:%H:%M:%S}",
        "publish_attempts-TOTAL_FORMS": "0",
        "publish_attempts-INITIAL_FORMS": "0",
    }

    response = client.post(
        "/admin/publishing/article/add/", form, headers={"X-Request-ID": request_id}
    )

    assert response.status_code == 302, response.content.decode()[-3000:]
    assert response["X-Request-ID"] == request_id
    article = Article.objects.get(title="Saved from the admin")
    wait_published([article.pk])

    def traced() -> list[dict]:
        return [
            line
            for line in json_lines(json_worker)
            if line.get("request_id") == request_id and line.get("article_id") == article.pk
        ]

    lines = wait_for(traced, timeout=20, what="worker lines with the request id")
    assert all(line["task_id"] for line in lines)


def test_rollup__compaction_keeps_every_count(transactional_db):
    from datetime import timedelta

    now = timezone.now()
    for minutes_ago in (5, 200, 3000):
        when = now - timedelta(minutes=minutes_ago)
        rollup.record(outcome="ok", duration=0.03, latency=1.5, now=when)
        rollup.record(outcome="retry", count=2, now=when)
    before = rollup.totals()

    folded = rollup.compact(now=now)

    after = rollup.totals()
    assert folded > 0
    assert after.attempts == before.attempts == {"ok": 3, "retry": 6, "dead": 0}
    assert after.latency.counts == before.latency.counts
    assert after.duration.total == pytest.approx(before.duration.total)
    assert set(MetricsBucket.objects.values_list("span", flat=True)) == {"m", "h", "t"}
    assert rollup.compact(now=now) == 0


def test_rollup__a_batch_of_publishes_is_counted_like_single_ones(transactional_db):
    """The batch path (services.publish, a backlog claimed in one statement) counts its
    publishes in the histograms and the counter too."""
    from publishing.services.publish import publish_group

    Article.objects.bulk_create(
        [
            Article(title=f"Batch {i}", slug=f"batch-{i}", body="x", content_hash="0" * 64)
            for i in range(4)
        ]
    )  # no signals: nothing is dispatched
    before = rollup.totals()

    report = publish_group(retry_in=lambda attempt: 0, limit=10)

    after = rollup.totals()
    assert report.claimed == 4
    assert after.attempts["ok"] - before.attempts["ok"] == 4
    assert after.latency.count - before.latency.count == 4
    assert after.duration.count - before.duration.count == 4
    assert Article.objects.filter(status=ArticleStatus.PUBLISHED).count() == 4


def test_metrics__the_webhooks_deliveries_waiting_and_dead(client, settings):
    """A receiver that is down showed on the dashboard and in alerts only (a review's
    finding): /metrics counts the deliveries waiting and given up on, and how long the
    oldest waiting one has (BlogpublishWebhookDeliveriesDead, deploy/prometheus)."""
    settings.METRICS_TOKEN = TOKEN
    made = [
        WebhookDelivery.objects.create(
            article_id=n, event="article.published", key=f"{n:064x}", body="{}", status=status
        )
        for n, status in enumerate(["pending", "pending", "dead", "dead", "dead", "delivered"])
    ]
    an_hour_ago = timezone.now() - timedelta(hours=1)
    WebhookDelivery.objects.filter(pk=made[0].pk).update(created_at=an_hour_ago)

    samples = scrape(client)

    counts = {
        state: samples["blogpublish_webhook_deliveries", (("status", state),)]
        for state in ("pending", "dead")
    }
    assert counts == {"pending": 2, "dead": 3}
    oldest = samples["blogpublish_webhook_oldest_pending_seconds", ()]
    assert 3600 <= oldest < 3600 + 300
