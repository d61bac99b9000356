"""Reads of the pending list. Times are the database's (`Now()`), so executors on hosts
with skewed clocks agree on what is due and whose lease has run out."""

from __future__ import annotations

from datetime import timedelta

from django.db.models import DateTimeField, ExpressionWrapper, Q, QuerySet, Value
from django.db.models.functions import Now

from publishing.models import Article, ArticleStatus


def db_now_plus(seconds: float) -> ExpressionWrapper:
    """The database clock plus `seconds`, as an expression for UPDATE and WHERE."""
    return ExpressionWrapper(
        Now() + Value(timedelta(seconds=seconds)), output_field=DateTimeField()
    )


def due_q() -> Q:
    """Pending, its time has come, and not backing off after a failure."""
    return Q(status=ArticleStatus.PENDING, publish_at__lte=Now()) & (
        Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=Now())
    )


def lease_free_q() -> Q:
    return Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lte=Now())


def articles_claimable() -> QuerySet[Article]:
    return Article.objects.filter(due_q() & lease_free_q())


def article_ids_claimable(*, limit: int) -> list[int]:
    """Due pending rows with a free lease, oldest first (the backup executor's list)."""
    return list(
        articles_claimable().order_by("publish_at", "id").values_list("id", flat=True)[:limit]
    )


def article_claim_state(*, article_id: int) -> dict | None:
    """The fields that explain why a claim failed, with the database's clock."""
    return (
        Article.objects.filter(pk=article_id)
        .annotate(db_now=Now())
        .values("status", "publish_at", "next_attempt_at", "lease_expires_at", "db_now")
        .first()
    )
