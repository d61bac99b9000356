"""The operator's dashboard in the admin (`/admin/publishing/dashboard/`).

Everything it shows is read here, each with an index or the metrics rollup behind it, so
that a render stays cheap with a million articles and millions of attempt rows:
/status.json's figures, the last catch-up run, broker and database health, the dead
articles with their last error (Requeue each, or all), the most-retried pending ones,
and charts of the last 24 hours from `publishing.rollup`. The page refreshes its live
part by fetching `?fragment=1` every few seconds (static/publishing/dashboard.js).
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import admin, messages
from django.contrib.auth.decorators import permission_required
from django.db import connection, transaction
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from publishing import charts, rollup
from publishing.models import Alarm, Article, ArticleStatus, CatchUpRun
from publishing.selectors import broker_queue_lengths, pipeline_status
from publishing.services import article_requeue
from publishing.services.alarms import STUCK

DEAD_SHOWN = 50
RETRIED_SHOWN = 10
REFRESH_SECONDS = 5


def dead_articles(*, limit: int = DEAD_SHOWN) -> list[dict]:
    """The newest deaths first (article_dead_idx)."""
    return list(
        Article.objects.filter(status=ArticleStatus.DEAD)
        .order_by("-updated_at")
        .values("id", "title", "attempts", "last_error", "updated_at")[:limit]
    )


def most_retried_pending(*, limit: int = RETRIED_SHOWN) -> list[dict]:
    """Pending articles that failed at least once, most attempts first
    (article_pending_attempts_idx)."""
    return list(
        Article.objects.filter(status=ArticleStatus.PENDING, attempts__gt=0)
        .order_by("-attempts", "id")
        .values("id", "title", "attempts", "last_error", "next_attempt_at")[:limit]
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
            title="Save → published latency per hour (p50, p95), last 24 h",
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
            title="Attempts by outcome per hour, last 24 h",
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
        "charts": chart_svgs(),
        "refresh_seconds": REFRESH_SECONDS,
    }


def _broker_state() -> str:
    from publishing.views import broker_state

    return broker_state()


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
    }
    if request.GET.get("fragment"):
        return TemplateResponse(request, "admin/publishing/dashboard_live.html", context)
    return TemplateResponse(request, "admin/publishing/dashboard.html", context)


@require_POST
@permission_required("publishing.change_article", raise_exception=True)
def dashboard_requeue(request: HttpRequest) -> HttpResponse:
    """Requeue one dead article (`article_id`) or every dead one (`all`), through the
    same service as the admin action; back to the dashboard with what was done."""
    if request.POST.get("all"):
        done = requeue_all_dead()
        messages.success(request, f"{done} dead article(s) requeued.")
    else:
        try:
            article_id = int(request.POST.get("article_id", ""))
        except ValueError:
            article_id = 0
        if not 0 < article_id < 2**63:  # what a bigint key can be
            messages.error(request, "No article to requeue was given.")
        else:
            if article_requeue(article_id=article_id):
                messages.success(request, f"Article {article_id} requeued.")
            else:
                messages.warning(request, f"Article {article_id} is not dead (any more).")
    return HttpResponseRedirect(reverse("publishing-dashboard"))


def requeue_all_dead(*, batch: int = 500) -> int:
    """Every dead article, a batch per transaction (each dispatched after its commit)."""
    done, after = 0, 0
    while True:
        ids = list(
            Article.objects.filter(status=ArticleStatus.DEAD, pk__gt=after)
            .order_by("pk")
            .values_list("pk", flat=True)[:batch]
        )
        if not ids:
            return done
        with transaction.atomic():
            done += sum(article_requeue(article_id=pk) for pk in ids)
        after = ids[-1]
