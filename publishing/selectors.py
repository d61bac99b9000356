"""Reads of the pending list. Times are the database's (`Now()`), so executors on hosts
with skewed clocks agree on what is due and whose lease has run out."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.db.models import Count, Min, Q, QuerySet
from django.db.models.functions import Now
from django.utils import timezone

from publishing.models import (
    Article,
    ArticleStatus,
    ArticleTag,
    DeliveryStatus,
    TagKind,
    WebhookDelivery,
    became_work,
)
from publishing.reader_fields import tag_key
from work import lease
from work.lease import now_plus


def due_q() -> Q:
    """Pending, its time has come, and not backing off after a failure."""
    return Q(status=ArticleStatus.PENDING, publish_at__lte=Now()) & lease.due()


def publish_work_due() -> bool:
    """Is any due row not published yet, claimed or not (a burst draining)? The
    refresher then puts its lowest-priority views off (publishing.services.refresh).
    One seek into the partial index of pending rows."""
    return Article.objects.filter(due_q()).exists()


def backlog_waiting(group: int) -> bool:
    """Are `group` or more due rows waiting for a claim (a backlog draining, whose full
    groups ask for the shared views at PUBLISH_REFRESH_BACKLOG_INTERVAL)? Reads the
    partial index of pending rows until `group` free ones are found (past the leased
    and backing-off ones, as `publish_work_due` and the claims do)."""
    return articles_claimable().order_by().values_list("id")[group - 1 : group].exists()


def articles_claimable() -> QuerySet[Article]:
    return Article.objects.filter(due_q() & lease.lease_free())


def article_ids_claimable(*, limit: int) -> list[int]:
    """Due pending rows with a free lease, oldest first (the backup executor's list)."""
    return list(
        articles_claimable().order_by("publish_at", "id").values_list("id", flat=True)[:limit]
    )


def articles_due_for_catch_up(*, stale_after: float, limit: int) -> list[int]:
    """Due, lease free, and nothing has touched or sent them for `stale_after` seconds:
    their message was lost, or never sent. Oldest first, at most `limit`."""
    cutoff = now_plus(-stale_after)
    return list(
        articles_claimable()
        .filter(updated_at__lte=cutoff, publish_at__lte=cutoff)
        .filter(Q(dispatched_at__isnull=True) | Q(dispatched_at__lte=cutoff))
        .order_by("publish_at", "id")
        .values_list("id", flat=True)[:limit]
    )


def articles_to_arm(
    *, horizon: float, stale_after: float, limit: int
) -> list[tuple[int, datetime]]:
    """Scheduled rows due within `horizon` seconds, not armed in the last
    `stale_after` seconds: (id, publish_at), soonest first."""
    cutoff = now_plus(-stale_after)
    return list(
        Article.objects.filter(
            status=ArticleStatus.PENDING, publish_at__gt=Now(), publish_at__lte=now_plus(horizon)
        )
        .filter(Q(dispatched_at__isnull=True) | Q(dispatched_at__lte=cutoff))
        .order_by("publish_at", "id")
        .values_list("id", "publish_at")[:limit]
    )


def dead_unalerted_ids(*, limit: int) -> list[int]:
    return list(
        Article.objects.filter(status=ArticleStatus.DEAD, alerted_at__isnull=True)
        .order_by("updated_at")
        .values_list("id", flat=True)[:limit]
    )


def _stuck(stuck_after: float) -> QuerySet[Article]:
    cutoff = now_plus(-stuck_after)
    return articles_claimable().filter(publish_at__lte=cutoff, updated_at__lte=cutoff)


def stuck_articles(*, stuck_after: float, limit: int = 100) -> list[Mapping[str, Any]]:
    """Due work that no executor has touched for `stuck_after` seconds, oldest first."""
    return list(
        _stuck(stuck_after)
        .order_by("publish_at", "id")
        .values("id", "title", "publish_at", "updated_at")[:limit]
    )


def stuck_count(*, stuck_after: float) -> int:
    """How many rows `stuck_articles` would list without its limit (the dashboard, the
    status and /metrics showed a flat 100 while 10,000 were stuck: a review's finding)."""
    return _stuck(stuck_after).count()


def article_counts() -> dict[str, int]:
    """Articles per status, from the counts the database keeps (ArticleCount, kept by
    triggers): a few rows, however many articles there are."""
    from django.db.models import Sum

    from publishing.models import ArticleCount

    counts = dict.fromkeys((status.value for status in ArticleStatus), 0)
    rows = ArticleCount.objects.values_list("status").annotate(total=Sum("n")).order_by()
    for status, total in rows.values_list("status", "total"):
        counts[status] = int(total or 0)
    return counts


def oldest_due_pending() -> dict | None:
    """The due pending row that has waited longest since it became work, and for how
    long by the database's clock. Not by `publish_at` alone: an old article edited or
    requeued, or imported, waited 400 days by it a second after its save (a review's
    finding). One statement: the first due row of `article_pending_became_idx`
    (docs/performance.md)."""
    oldest = (
        Article.objects.filter(due_q())
        .annotate(db_now=Now(), became=became_work())
        .order_by("became", "id")
        .values("id", "title", "publish_at", "attempts", "became", "db_now")
        .first()
    )
    if oldest is None:
        return None
    return {
        "id": oldest["id"],
        "title": oldest["title"],
        "publish_at": oldest["publish_at"],
        "attempts": oldest["attempts"],
        # The save's default pending_since is the web host's clock, maybe a little ahead.
        "waiting_seconds": max(0.0, (oldest["db_now"] - oldest["became"]).total_seconds()),
    }


def pipeline_status(*, dead_limit: int = 20) -> dict:
    """Counts and the oldest waiting work: /status.json, publishing_status, /metrics."""
    from django.conf import settings

    by_status = article_counts()
    scheduled = Article.objects.filter(status=ArticleStatus.PENDING, publish_at__gt=Now()).count()
    return {
        "counts": {
            "pending": by_status.get(ArticleStatus.PENDING, 0) - scheduled,
            "scheduled": scheduled,
            "published": by_status.get(ArticleStatus.PUBLISHED, 0),
            "dead": by_status.get(ArticleStatus.DEAD, 0),
        },
        "in_flight": Article.objects.filter(
            status=ArticleStatus.PENDING, lease_expires_at__gt=Now()
        ).count(),
        "oldest_due_pending": oldest_due_pending(),
        "stuck": stuck_count(stuck_after=settings.PUBLISH_STUCK_AFTER),
        "dead": list(
            Article.objects.filter(status=ArticleStatus.DEAD)
            .order_by("-updated_at")
            .values("id", "title", "slug", "attempts", "last_error", "updated_at")[:dead_limit]
        ),
    }


def broker_queue_lengths() -> dict[str, int | None]:
    """Messages waiting in each of the workers' queues, Redis or RabbitMQ ({name: None}
    for each when the broker cannot be reached within a second or so). The
    broker-specific part is publishing.broker_status."""
    from django.conf import settings

    from publishing.broker_status import queue_message_counts

    try:
        return dict(queue_message_counts(timeout=1))
    except Exception:  # down or silent: /healthz and the dashboard's health say so
        return dict.fromkeys(queue.name for queue in settings.CELERY_TASK_QUEUES)


def catch_up_last_run():
    """When the catch-up last ran (the database's record), or None if it never did."""
    from publishing.models import CatchUpRun

    return CatchUpRun.objects.filter(pk=1).values_list("ran_at", flat=True).first()


def tags_in_use(*, prefix: str = "", limit: int = 100) -> list[tuple[str, int]]:
    """The tags live articles carry (not bylines), with how many listed articles carry
    each, most used first: what the desk's tags field completes from, and GET /api/tags.
    `prefix`: only tags whose key starts with that one's (reader_fields.tag_key)."""
    rows = ArticleTag.objects.filter(tag__kind=TagKind.TAG).exclude(article__published_hash="")
    if prefix.strip():
        rows = rows.filter(tag__key__startswith=tag_key(prefix))
    counted = (
        rows.values("tag_id", "tag__name")
        .annotate(articles=Count("id"))
        .order_by("-articles", "tag__name")[:limit]
    )
    return [(row["tag__name"], row["articles"]) for row in counted]


def delivery_counts() -> dict[str, int]:
    """Pending and dead webhook deliveries (delivered ones are history, not counted)."""
    return {
        status: WebhookDelivery.objects.filter(status=status).count()
        for status in (DeliveryStatus.PENDING, DeliveryStatus.DEAD)
    }


def oldest_pending_delivery_seconds() -> float:
    """How long the oldest pending webhook delivery has waited since it was made (0 when
    none waits): a receiver that has not taken one for long (delivery_status_idx)."""
    oldest = (
        WebhookDelivery.objects.filter(status=DeliveryStatus.PENDING)
        .order_by()
        .aggregate(oldest=Min("created_at"))["oldest"]
    )
    return max(0.0, (timezone.now() - oldest).total_seconds()) if oldest else 0.0
