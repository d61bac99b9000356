"""Watching the pipeline over HTTP: /healthz, /status.json, /metrics.

Nothing here changes state; people and monitors watching speed nothing up and nothing
depends on them.
"""

from __future__ import annotations

import contextlib
import functools
import hmac
import logging
from collections.abc import Callable, Iterator

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection, transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_safe
from kombu import Connection
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
)
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from publishing import rollup
from publishing.dispatch import send_options
from publishing.selectors import (
    broker_queue_lengths,
    catch_up_last_run,
    delivery_counts,
    oldest_pending_delivery_seconds,
    pipeline_status,
)
from work.metrics import add_job_gauges

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


logger = logging.getLogger(__name__)

View = Callable[..., HttpResponse]


# How long one statement of a watcher's read (/metrics, /status.json, the dashboard) may
# wait on PostgreSQL, a lock held on a counted table included, before the view answers
# 503: without it each scrape waited as long as the lock (a migration, a long
# transaction), and the scrapes Prometheus gave up on after 10 s kept every web thread
# until /healthz itself got no answer (a review's finding).
READ_TIMEOUT_MS = 5000


def without_database(answer: Callable[[str], HttpResponse]) -> Callable[[View], View]:
    """A view that reads the database answers `answer(why)`, a 503, when it cannot (down,
    unreachable, or a statement past READ_TIMEOUT_MS on PostgreSQL): a monitor reads
    "unavailable", not an HTML 500 or no answer (a review's finding)."""

    def decorate(view: View) -> View:
        @functools.wraps(view)
        def answered(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            try:
                with _statements_bounded():
                    return view(request, *args, **kwargs)
            # Not reachable, or gone: not a query's own error (a ProgrammingError is a
            # bug, or a deploy without migrate: a 500 with its traceback).
            except (OperationalError, InterfaceError) as exc:
                logger.warning("%s: the database failed: %s", request.path, exc)
                return answer(f"the database is unavailable: {type(exc).__name__}")

        return answered

    return decorate


@contextlib.contextmanager
def _statements_bounded() -> Iterator[None]:
    """On PostgreSQL, a transaction whose statements each stop at READ_TIMEOUT_MS
    (`SET LOCAL`: the connection's own setting is back after it); elsewhere nothing
    (SQLite's readers wait on no lock)."""
    if connection.vendor != "postgresql":
        yield
        return
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT set_config('statement_timeout', %s, true)", [str(READ_TIMEOUT_MS)]
            )
        yield


def broker_state() -> str:
    try:
        # The sends' short timeouts, Redis' or RabbitMQ's (publishing.dispatch).
        with Connection(
            settings.CELERY_BROKER_URL, connect_timeout=1, transport_options=send_options()
        ) as conn:
            conn.ensure_connection(max_retries=0, timeout=2)
    except Exception as exc:
        return f"unreachable: {type(exc).__name__}"
    return "ok"


@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    """200 while this process can serve and reach the database. A broker outage is
    reported but does not fail it: saves still work, the catch-up publishes later."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as exc:
        return JsonResponse({"database": f"unreachable: {type(exc).__name__}"}, status=503)
    return JsonResponse({"database": "ok", "broker": broker_state()})


@require_safe
@without_database(lambda why: JsonResponse({"error": why}, status=503))
def status_json(request: HttpRequest) -> HttpResponse:
    """Counts, the oldest waiting article and the dead ones with their titles and errors:
    for a logged-in user who may see articles (publishing.view_article), as the admin
    would show them. METRICS_TOKEN is a scrape token for /metrics, not a key to this."""
    if not request.user.is_authenticated:
        return JsonResponse({"error": "log in (at /admin/) to see the pipeline"}, status=401)
    if not request.user.has_perm("publishing.view_article"):
        return JsonResponse({"error": "the permission to view articles is required"}, status=403)
    return JsonResponse(pipeline_status(), json_dumps_params={"ensure_ascii": False})


def _metrics_allowed(view: View) -> View:
    """With METRICS_TOKEN set, for its bearer; without one, from this host only (a
    scraper behind a proxy must use the token), or anyone in DEBUG. Checked before the
    database is touched: a caller refused learns nothing of it (a review's finding)."""

    @functools.wraps(view)
    def allowed(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if settings.METRICS_TOKEN:
            if not _metrics_token_ok(request):
                return HttpResponse("Authorization: Bearer <METRICS_TOKEN> required\n", status=401)
        elif not (settings.DEBUG or _from_this_host(request)):
            return HttpResponse(
                "without METRICS_TOKEN, /metrics answers only on this host\n", status=403
            )
        return view(request, *args, **kwargs)

    return allowed


@require_safe
@_metrics_allowed
@without_database(lambda why: HttpResponse(f"{why}\n", status=503, content_type="text/plain"))
def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus text: counts only, for whom `_metrics_allowed` lets through."""
    registry = CollectorRegistry()
    registry.register(PipelineCollector())
    add_job_gauges(registry)
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)


class PipelineCollector:
    """The pipeline's figures, read from the database (and the queue lengths from the
    broker) at each scrape: the same on every host, whoever did the work. The counters
    and histograms come from the metrics rollup (publishing.rollup), a few thousand rows
    however many attempts there were."""

    def collect(self):
        status = pipeline_status(dead_limit=0)
        articles = GaugeMetricFamily("blogpublish_articles", "Articles by state", labels=["status"])
        for state, count in status["counts"].items():
            articles.add_metric([state], count)
        yield articles
        yield GaugeMetricFamily(
            "blogpublish_in_flight", "Articles whose attempt holds a lease", status["in_flight"]
        )
        yield GaugeMetricFamily(
            "blogpublish_stuck_articles",
            "Due articles untouched for PUBLISH_STUCK_AFTER",
            status["stuck"],
        )
        oldest = status["oldest_due_pending"]
        yield GaugeMetricFamily(
            "blogpublish_oldest_due_pending_seconds",
            "Wait of the oldest due pending article",
            oldest["waiting_seconds"] if oldest else 0,
        )
        totals = rollup.totals()
        attempts = CounterMetricFamily(
            "blogpublish_attempts",
            "Finished publish attempts by outcome (every host's)",
            labels=["outcome"],
        )
        for outcome in rollup.OUTCOMES:
            attempts.add_metric([outcome], totals.attempts.get(outcome, 0))
        yield attempts
        for name, histogram, doc in (
            (
                "blogpublish_publish_latency_seconds",
                totals.latency,
                "From the save (or requeue) of an article's content, or its publish_at "
                "when later, until that content was published",
            ),
            (
                "blogpublish_attempt_duration_seconds",
                totals.duration,
                "Duration of finished publish attempts, every outcome",
            ),
        ):
            family = HistogramMetricFamily(name, doc)
            family.add_metric([], histogram.cumulative(), histogram.total)
            yield family
        queues = GaugeMetricFamily(
            "blogpublish_queue_messages",
            "Messages waiting in the broker's queue (absent: the broker did not say)",
            labels=["queue"],
        )
        for queue, length in broker_queue_lengths().items():
            if length is not None:
                queues.add_metric([queue], length)
        yield queues
        deliveries = GaugeMetricFamily(
            "blogpublish_webhook_deliveries",
            "Webhook deliveries waiting (pending) or given up on (dead); delivered ones are "
            "not counted",
            labels=["status"],
        )
        for state, count in delivery_counts().items():
            deliveries.add_metric([state], count)
        yield deliveries
        yield GaugeMetricFamily(
            "blogpublish_webhook_oldest_pending_seconds",
            "Wait of the oldest pending webhook delivery since it was made",
            oldest_pending_delivery_seconds(),
        )
        ran_at = catch_up_last_run()
        if ran_at is not None:
            yield GaugeMetricFamily(
                "blogpublish_catch_up_last_run_timestamp_seconds",
                "When the catch-up (Celery Beat's safety net) last finished a run",
                ran_at.timestamp(),
            )
