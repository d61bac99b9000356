"""When to tell people: a death (once per death) and a stuck pipeline (once per window).

Both are claimed with a conditional UPDATE before anything is sent, so any number of
processes may check at once (two Beats, workers, the backup executor) and one sends.
"""

from __future__ import annotations

import contextlib
import logging

from django.conf import settings
from django.db import IntegrityError
from django.db.models import Q
from django.db.models.functions import Now

from publishing.alerts import send_alert
from publishing.models import Alarm, Article, ArticleStatus, DeliveryStatus, WebhookDelivery
from publishing.selectors import stuck_articles
from work.lease import now_plus

logger = logging.getLogger(__name__)

STUCK = "stuck"


def article_dead_alert(*, article_id: int) -> bool:
    """Alert that an article died, unless that death was alerted already."""
    claimed = Article.objects.filter(
        pk=article_id, status=ArticleStatus.DEAD, alerted_at__isnull=True
    ).update(alerted_at=Now())
    if not claimed:
        return False
    row = Article.objects.values("title", "slug", "attempts", "last_error").get(pk=article_id)
    send_alert(
        kind="article_dead",
        subject=f"article {article_id} is dead after {row['attempts']} attempt(s)",
        message=(
            f"Article {article_id} “{row['title']}” ({row['slug']}) was not published after "
            f"{row['attempts']} attempt(s).\n"
            f"Last error: {row['last_error']}\n"
            "Fix the cause, then requeue it in the admin (action “Requeue”) or edit it."
        ),
        data={"article_id": article_id, **row},
    )
    return True


def delivery_dead_alert(*, delivery_id: int) -> bool:
    """Alert that a webhook delivery died, unless that death was alerted already. The
    article it announces is not affected (its page is live, or gone, as it was)."""
    claimed = WebhookDelivery.objects.filter(
        pk=delivery_id, status=DeliveryStatus.DEAD, alerted_at__isnull=True
    ).update(alerted_at=Now())
    if not claimed:
        return False
    row = WebhookDelivery.objects.values(
        "article_id", "event", "key", "attempts", "last_error"
    ).get(pk=delivery_id)
    send_alert(
        kind="webhook_delivery_dead",
        subject=(
            f"webhook delivery {delivery_id} ({row['event']} of article {row['article_id']}) "
            f"is dead after {row['attempts']} try(s)"
        ),
        message=(
            f"The webhook {row['event']} of article {row['article_id']} was not delivered to "
            f"PUBLISH_WEBHOOK_URL after {row['attempts']} try(s); the article itself is not "
            f"affected.\nLast error: {row['last_error']}\n"
            "Fix the receiver, then requeue the delivery in the admin (Webhook deliveries, "
            "action “Requeue”) or on the publishing dashboard."
        ),
        data={"delivery_id": delivery_id, **row},
    )
    return True


def alarm_raise(*, name: str, every: float, detail: str = "") -> bool:
    """True for the one caller that may raise `name` now: at most once per `every` s."""
    with contextlib.suppress(IntegrityError):  # created by a concurrent caller
        Alarm.objects.get_or_create(name=name)
    return bool(
        Alarm.objects.filter(name=name)
        .filter(Q(raised_at__isnull=True) | Q(raised_at__lte=now_plus(-every)))
        .update(raised_at=Now(), detail=detail)
    )


def stuck_check() -> bool:
    """Raise the stuck alarm when due work has waited over PUBLISH_STUCK_AFTER seconds."""
    stuck_after = settings.PUBLISH_STUCK_AFTER
    stuck = stuck_articles(stuck_after=stuck_after)
    if not stuck:
        return False
    oldest = stuck[0]
    detail = (
        f"{len(stuck)} due article(s) untouched for over {stuck_after:.0f}s; the oldest is "
        f"{oldest['id']} “{oldest['title']}”, due since {oldest['publish_at']:%Y-%m-%d %H:%M:%S} "
        "UTC."
    )
    if not alarm_raise(name=STUCK, every=stuck_after, detail=detail):
        return False
    send_alert(
        kind="stuck",
        subject=f"publishing is stuck: {len(stuck)} article(s) waiting",
        message=(
            f"{detail}\nIs a worker running, and can it reach the broker and the database? "
            "`python manage.py publishing_status` shows the pipeline; "
            "`python manage.py publish_pending` publishes without the broker."
        ),
        data={"waiting": len(stuck), "oldest_article_id": oldest["id"]},
    )
    return True
