"""Watching the pipeline over HTTP: /healthz, /status.json, /metrics.

Nothing here changes state; people and monitors watching speed nothing up and nothing
depends on them.
"""

from __future__ import annotations

import hmac

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_GET
from kombu import Connection
from prometheus_client import CollectorRegistry, Gauge, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from publishing.models import PublishAttempt
from publishing.selectors import pipeline_status


def _bearer_ok(request: HttpRequest) -> bool:
    token = settings.METRICS_TOKEN
    given = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
    return bool(token) and hmac.compare_digest(given.encode(), token.encode())


def _broker_state() -> str:
    try:
        with Connection(
            settings.CELERY_BROKER_URL, connect_timeout=1, transport_options={"socket_timeout": 1}
        ) as conn:
            conn.ensure_connection(max_retries=0, timeout=2)
    except Exception as exc:
        return f"unreachable: {type(exc).__name__}"
    return "ok"


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """200 while this process can serve and reach the database. A broker outage is
    reported but does not fail it: saves still work, the catch-up publishes later."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as exc:
        return JsonResponse({"database": f"unreachable: {type(exc).__name__}"}, status=503)
    return JsonResponse({"database": "ok", "broker": _broker_state()})


@require_GET
def status_json(request: HttpRequest) -> HttpResponse:
    """Counts, the oldest waiting article and the dead ones (titles and errors: staff,
    the METRICS_TOKEN bearer, or anyone in DEBUG)."""
    user = getattr(request, "user", None)
    if not (settings.DEBUG or _bearer_ok(request) or (user and user.is_staff)):
        return JsonResponse({"error": "staff login or METRICS_TOKEN bearer required"}, status=401)
    return JsonResponse(pipeline_status(), json_dumps_params={"ensure_ascii": False})


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus text; a bearer token is required when METRICS_TOKEN is set."""
    if settings.METRICS_TOKEN and not _bearer_ok(request):
        return HttpResponse("METRICS_TOKEN bearer required\n", status=401)
    status = pipeline_status(dead_limit=0)
    registry = CollectorRegistry()
    articles = Gauge("blogpublish_articles", "Articles by state", ["status"], registry=registry)
    for state, count in status["counts"].items():
        articles.labels(state).set(count)
    Gauge("blogpublish_in_flight", "Articles whose attempt holds a lease", registry=registry).set(
        status["in_flight"]
    )
    Gauge(
        "blogpublish_stuck_articles",
        "Due articles untouched for PUBLISH_STUCK_AFTER",
        registry=registry,
    ).set(status["stuck"])
    oldest = status["oldest_due_pending"]
    Gauge(
        "blogpublish_oldest_due_pending_seconds",
        "Wait of the oldest due pending article",
        registry=registry,
    ).set(oldest["waiting_seconds"] if oldest else 0)
    attempts = Gauge(
        "blogpublish_publish_attempts",
        "Recorded attempts by outcome",
        ["outcome"],
        registry=registry,
    )
    for outcome, count in _attempt_counts().items():
        attempts.labels(outcome or "running").set(count)
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)


def _attempt_counts() -> dict[str, int]:
    from django.db.models import Count

    return dict(
        PublishAttempt.objects.values_list("outcome")
        .annotate(n=Count("id"))
        .values_list("outcome", "n")
    )
