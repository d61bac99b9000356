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

from clock.metrics import add_job_gauges
from publishing.broker_status import queue_message_counts
from publishing.dispatch import send_options
from publishing.models import PublishAttempt
from publishing.selectors import pipeline_status

# A proxy in front adds one of these: a request that carries one did not come from a
# scraper on this host, although REMOTE_ADDR (the proxy's) is loopback.
FORWARDED_HEADERS = ("Forwarded", "X-Forwarded-For", "X-Real-IP")
LOOPBACK = frozenset({"127.0.0.1", "::1"})


def _metrics_token_ok(request: HttpRequest) -> bool:
    """`Authorization: Bearer <METRICS_TOKEN>`; a bare token, or another scheme, is not."""
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    token = settings.METRICS_TOKEN
    return (
        bool(token)
        and scheme.lower() == "bearer"
        and hmac.compare_digest(given.strip().encode(), token.encode())
    )


def _from_this_host(request: HttpRequest) -> bool:
    if request.META.get("REMOTE_ADDR") not in LOOPBACK:
        return False
    return not any(request.headers.get(name) for name in FORWARDED_HEADERS)


def _broker_state() -> str:
    try:
        # The sends' short timeouts, Redis' or RabbitMQ's (publishing.dispatch).
        with Connection(
            settings.CELERY_BROKER_URL, connect_timeout=1, transport_options=send_options()
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
    """Counts, the oldest waiting article and the dead ones with their titles and errors:
    for a logged-in user who may see articles (publishing.view_article), as the admin
    would show them. METRICS_TOKEN is a scrape token for /metrics, not a key to this."""
    if not request.user.is_authenticated:
        return JsonResponse({"error": "log in (at /admin/) to see the pipeline"}, status=401)
    if not request.user.has_perm("publishing.view_article"):
        return JsonResponse({"error": "the permission to view articles is required"}, status=403)
    return JsonResponse(pipeline_status(), json_dumps_params={"ensure_ascii": False})


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus text: counts only. With METRICS_TOKEN set, for its bearer; without
    one, from this host only (a scraper behind a proxy must use the token), or anyone
    in DEBUG."""
    if settings.METRICS_TOKEN:
        if not _metrics_token_ok(request):
            return HttpResponse("Authorization: Bearer <METRICS_TOKEN> required\n", status=401)
    elif not (settings.DEBUG or _from_this_host(request)):
        return HttpResponse(
            "without METRICS_TOKEN, /metrics answers only on this host\n", status=403
        )
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
    queued = Gauge(
        "blogpublish_queue_messages",
        "Messages waiting in the broker's task queues (not yet taken by a worker)",
        ["queue"],
        registry=registry,
    )
    try:
        counts = queue_message_counts(timeout=1)
    except Exception:  # the broker is down: /healthz says so; the DB gauges still count
        counts = {}
    for queue, count in counts.items():
        queued.labels(queue).set(count)
    add_job_gauges(registry)
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)


def _attempt_counts() -> dict[str, int]:
    from django.db.models import Count

    return dict(
        PublishAttempt.objects.values_list("outcome")
        .annotate(n=Count("id"))
        .values_list("outcome", "n")
    )
