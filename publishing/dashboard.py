"""The operator's dashboard in the admin (`/admin/publishing/dashboard/`).

Everything it shows is read here, each with an index or the metrics rollup behind it, so
that a render stays cheap with a million articles and millions of attempt rows:
/status.json's figures, the last catch-up run, broker and database health, the
re-render of the site in a new look (progress and rate), the dead articles with their
last error (Requeue each, or all), the most-retried pending ones,
and charts of the last 24 hours from `publishing.rollup`. The page refreshes its live
part by fetching `?fragment=1` every few seconds (static/publishing/dashboard.js).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db import connection
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import escape
from django.views.decorators.http import require_GET, require_POST

from publishing import charts, rollup
from publishing.models import (
    Alarm,
    Article,
    ArticleStatus,
    CatchUpRun,
    DeliveryStatus,
    WebhookDelivery,
)
from publishing.selectors import broker_queue_lengths, delivery_counts, pipeline_status
from publishing.services import (
    article_requeue,
    articles_requeue,
    delivery_not_requeued_why,
    delivery_requeue,
)
from publishing.services.alarms import STUCK
from publishing.services.rerender import rerender_status

DEAD_SHOWN = 50
RETRIED_SHOWN = 10
REFRESH_SECONDS = 5


def dead_articles(*, limit: int = DEAD_SHOWN) -> list[Mapping[str, Any]]:
    """The newest deaths first (article_dead_idx)."""
    return list(
        Article.objects.filter(status=ArticleStatus.DEAD)
        .order_by("-updated_at")
        .values("id", "title", "attempts", "last_error", "updated_at")[:limit]
    )


def most_retried_pending(*, limit: int = RETRIED_SHOWN) -> list[Mapping[str, Any]]:
    """Pending articles that failed at least once, most attempts first
    (article_pending_attempts_idx)."""
    return list(
        Article.objects.filter(status=ArticleStatus.PENDING, attempts__gt=0)
        .order_by("-attempts", "id")
        .values("id", "title", "attempts", "last_error", "next_attempt_at")[:limit]
    )


def dead_deliveries(*, limit: int = DEAD_SHOWN) -> list[Mapping[str, Any]]:
    """The newest dead webhook deliveries first (delivery_status_idx)."""
    return list(
        WebhookDelivery.objects.filter(status=DeliveryStatus.DEAD)
        .order_by("-updated_at")
        .values("id", "event", "article_id", "attempts", "last_error", "updated_at")[:limit]
    )


def database_state() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as exc:
        return f"unreachable: {type(exc).__name__}"
    return "ok"


def chart_svgs() -> dict:
    hours = rollup.hourly(hours=24)
    hour_labels = [f"{start:%H}:00" for start, _ in hours]
    minutes = rollup.publishes_per_minute(minutes=60)
    return {
        "latency": charts.line_chart(
            title="Save → published latency per hour (UTC; p50, p95), last 24 h",
            labels=hour_labels,
            series=[
                charts.Series(
                    "p50", [t.latency.quantile(0.5) for _, t in hours], charts.COLOURS["p50"]
                ),
                charts.Series(
                    "p95", [t.latency.quantile(0.95) for _, t in hours], charts.COLOURS["p95"]
                ),
            ],
            unit="s",
        ),
        "attempts": charts.bar_chart(
            title="Attempts by outcome per hour (UTC), last 24 h",
            labels=hour_labels,
            series=[
                charts.Series(
                    outcome, [t.attempts.get(outcome, 0) for _, t in hours], charts.COLOURS[outcome]
                )
                for outcome in rollup.OUTCOMES
            ],
        ),
        "publishes": charts.bar_chart(
            title="Publishes per minute, last hour",
            labels=[f"{start:%H:%M}" for start, _ in minutes],
            series=[charts.Series("published", [n for _, n in minutes], "#2e7d32")],
        ),
    }


def dashboard_context() -> dict:
    status = pipeline_status(dead_limit=0)
    queues = broker_queue_lengths()
    broker = "ok" if any(n is not None for n in queues.values()) else _broker_state()
    stuck_alarm = Alarm.objects.filter(name=STUCK).values("raised_at", "detail").first()
    return {
        "status": status,
        "due_backlog": status["counts"]["pending"],
        "catch_up": CatchUpRun.objects.filter(pk=1).values("ran_at", "host", "report").first(),
        "catch_up_interval": settings.PUBLISH_CATCHUP_INTERVAL,
        "stuck_after": settings.PUBLISH_STUCK_AFTER,
        "stuck_alarm": stuck_alarm,
        "broker": broker,
        "database": database_state(),
        "queues": queues,
        "dead": dead_articles(),
        "retried": most_retried_pending(),
        "deliveries": delivery_counts(),
        "dead_deliveries": dead_deliveries(),
        "charts": chart_svgs(),
        "refresh_seconds": REFRESH_SECONDS,
        "rerender": rerender_rows(),
    }


def rerender_rows() -> list[dict]:
    """The re-render of each target with a look (issue 20): its run's progress, rate
    and what is left, and whether the site is in this installation's look."""
    rows = []
    for target, state in rerender_status().items():
        run = state.get("run") or {}
        rate, left, total = run.get("rate") or 0, run.get("left") or 0, run.get("total") or 0
        done = run.get("done") or 0
        rows.append(
            {
                "target": target,
                "look": state["look"][:12],
                "run_look": (run.get("look") or "")[:12],
                "current": state.get("current", False),
                "running": bool(run) and not run.get("finished_at"),
                "done": done,
                "written": run.get("written") or 0,
                "failed": run.get("failed") or 0,
                "total": total,
                "left": left,
                "percent": min(100, round(100 * done / total)) if total else 100,
                "rate": rate,
                "eta_seconds": round(left / rate) if rate and left else None,
                "started_at": run.get("started_at") or "",
                "finished_at": run.get("finished_at") or "",
            }
        )
    return rows


def _broker_state() -> str:
    from publishing.views import broker_state

    return broker_state()


def unavailable(why: str) -> HttpResponse:
    """The dashboard without its database: a 503 that says so (its script keeps polling),
    not Django's bare 500 page (a review's finding)."""
    return HttpResponse(
        f"<p>The publishing dashboard cannot be shown: {escape(why)}.</p>",
        status=503,
        content_type="text/html; charset=utf-8",
    )


@require_GET
def dashboard(request: HttpRequest) -> HttpResponse:
    """The whole page, or with `?fragment=1` only its live part (what the script
    fetches every few seconds)."""
    if not request.user.has_perm("publishing.view_article"):
        return HttpResponse("The permission to view articles is required.", status=403)
    context = {
        **admin.site.each_context(request),
        **dashboard_context(),
        "title": "Publishing dashboard",
        "can_requeue": request.user.has_perm("publishing.change_article"),
        # A delivery's last error names its receiver: the deliveries' own permissions.
        "can_see_deliveries": request.user.has_perm("publishing.view_webhookdelivery"),
        "can_requeue_deliveries": request.user.has_perm("publishing.change_webhookdelivery"),
    }
    if request.GET.get("fragment"):
        return TemplateResponse(request, "admin/publishing/dashboard_live.html", context)
    return TemplateResponse(request, "admin/publishing/dashboard.html", context)


@require_POST
def dashboard_requeue(request: HttpRequest) -> HttpResponse:
    """Requeue one dead article (`article_id`) or every dead one (`all`), or one dead
    webhook delivery (`delivery_id`), through the same services as the admin actions,
    under the same permissions (change on the article, or on the delivery); back to
    the dashboard with what was done."""
    one_delivery = "delivery_id" in request.POST and not request.POST.get("all")
    model = "webhookdelivery" if one_delivery else "article"
    if not request.user.has_perm(f"publishing.change_{model}"):
        raise PermissionDenied
    if request.POST.get("all"):
        done = requeue_all_dead()
        messages.success(request, f"{done} dead article(s) requeued.")
    elif "delivery_id" in request.POST:
        _requeue_one(
            request,
            "delivery_id",
            lambda pk: delivery_requeue(delivery_id=pk),
            why_not=lambda pk: delivery_not_requeued_why(delivery_id=pk),
        )
    else:
        _requeue_one(request, "article_id", lambda pk: article_requeue(article_id=pk))
    return HttpResponseRedirect(reverse("publishing-dashboard"))


WHAT = {"article_id": "article", "delivery_id": "webhook delivery"}


def _requeue_one(
    request: HttpRequest,
    name: str,
    requeue: Callable[[int], bool],
    *,
    why_not: Callable[[int], str] | None = None,
) -> None:
    """Requeue the row whose id the form posted as `name`, and say what was done (or,
    given `why_not`, why it was not)."""
    what = WHAT[name]
    try:
        pk = int(request.POST.get(name, ""))
    except ValueError:
        pk = 0
    if not 0 < pk < 2**63:  # what a bigint key can be
        messages.error(request, f"No {what} to requeue was given.")
    elif requeue(pk):
        messages.success(request, f"{what.capitalize()} {pk} requeued.")
    elif why_not is not None:
        messages.warning(request, why_not(pk))
    else:
        messages.warning(request, f"{what.capitalize()} {pk} is not dead (any more).")


def requeue_all_dead() -> int:
    """Every dead article, requeued as the admin's action requeues a selection."""
    ids = list(Article.objects.filter(status=ArticleStatus.DEAD).values_list("pk", flat=True))
    return articles_requeue(ids)
