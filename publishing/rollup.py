"""The metrics rollup: what /metrics and the dashboard's charts read.

Every finished attempt adds to a few `MetricsBucket` rows of its hour (its outcome, its
duration's histogram bucket and, when it published, its save-to-published latency's)
and to its minute's outcome row, with one UPSERT in the transaction that records the
outcome: the figures are the database's, the same whichever host scrapes, and exactly
as committed. The catch-up (`compact`) deletes minutes older than `MINUTES_KEPT` (their
hours hold them too) and folds hours older than `HOURS_KEPT` into one running total, so
a scrape sums a few hundred rows however many millions of attempts there were, and the
hourly charts read one row per hour and label.
"""

from __future__ import annotations

import math
import os
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from django.db import connection, transaction
from django.db.models import Sum
from django.utils import timezone

from publishing.models import MetricsBucket

# Upper bounds (seconds) of the histogram buckets; +Inf is implied.
LATENCY_BUCKETS = (0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 900, 3600)
DURATION_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
BUCKETS = {"latency": LATENCY_BUCKETS, "duration": DURATION_BUCKETS}
INF = "+Inf"
OUTCOMES = ("ok", "retry", "dead")

MINUTE, HOUR, TOTAL = "m", "h", "t"
MINUTES_KEPT = timedelta(minutes=70)  # the per-minute chart shows the last hour
HOURS_KEPT = timedelta(hours=26)  # the hourly charts show the last 24
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# PostgreSQL: concurrent workers' increments of one minute spread over this many rows
# (a row's lock is held until its transaction commits). SQLite has one writer at a
# time anyway: one row.
SHARDS = 8


def bucket_label(seconds: float, bounds: Iterable[float]) -> str:
    """The label of the bucket `seconds` falls in (its upper bound, as Prometheus writes
    `le`)."""
    for bound in bounds:
        if seconds <= bound:
            return format_bound(bound)
    return INF


def format_bound(bound: float) -> str:
    return repr(float(bound))


def bound_of(label: str) -> float:
    return math.inf if label == INF else float(label)


# --- writes --------------------------------------------------------------------------


def record(
    *,
    outcome: str,
    count: int = 1,
    duration: float | None = None,
    latency: float | None = None,
    now: datetime | None = None,
) -> None:
    """Add `count` finished attempts with this outcome (and one duration and latency
    when given) to this minute's rows. Call it inside the transaction that records the
    outcome: the counts then commit, or roll back, with it."""
    if count <= 0:
        return
    minute = (now or timezone.now()).replace(second=0, microsecond=0)
    hour = minute.replace(minute=0)
    rows = [
        (MINUTE, minute, "attempts", outcome, count, 0.0),
        (HOUR, hour, "attempts", outcome, count, 0.0),
    ]
    if duration is not None:
        rows.append((HOUR, hour, "duration", bucket_label(duration, DURATION_BUCKETS), 1, duration))
    if latency is not None:
        rows.append((HOUR, hour, "latency", bucket_label(latency, LATENCY_BUCKETS), 1, latency))
    shards = 1 if connection.vendor == "sqlite" else SHARDS
    _upsert(rows, shard=os.getpid() % shards)


def record_published(*, observations: list[tuple[float, float]], now: datetime | None = None):
    """`record` for many published attempts at once (a batch's completion): each
    (duration, latency) counted, in one UPSERT."""
    if not observations:
        return
    minute = (now or timezone.now()).replace(second=0, microsecond=0)
    hour = minute.replace(minute=0)
    sums: dict[tuple, list] = defaultdict(lambda: [0, 0.0])
    for duration, latency in observations:
        for metric, bounds, value in (
            ("duration", DURATION_BUCKETS, duration),
            ("latency", LATENCY_BUCKETS, latency),
        ):
            key = (HOUR, hour, metric, bucket_label(value, bounds))
            sums[key][0] += 1
            sums[key][1] += value
    count = len(observations)
    rows = [
        (MINUTE, minute, "attempts", "ok", count, 0.0),
        (HOUR, hour, "attempts", "ok", count, 0.0),
        *(
            (span, start, metric, label, n, total)
            for (span, start, metric, label), (n, total) in sums.items()
        ),
    ]
    shards = 1 if connection.vendor == "sqlite" else SHARDS
    _upsert(rows, shard=os.getpid() % shards)


def latency_of(*, pending_since, created_at, publish_at, published_at: datetime) -> float:
    """Seconds from when the content became work (its save or requeue, or its publish_at
    when later) until it was published."""
    became_work = max(pending_since or created_at, publish_at)
    return max(0.0, (published_at - became_work).total_seconds())


Row = tuple[str, datetime, str, str, int, float]  # span, start, metric, label, n, total


def _upsert(rows: list[Row], *, shard: int) -> None:
    """INSERT … ON CONFLICT DO UPDATE SET n = n + excluded.n: the same SQL on
    PostgreSQL and SQLite (≥ 3.24), atomic under concurrent writers."""
    table = connection.ops.quote_name(MetricsBucket._meta.db_table)
    values = ", ".join(["(%s, %s, %s, %s, %s, %s, %s)"] * len(rows))
    params: list = []
    for span, start, metric, label, n, total in rows:
        when = connection.ops.adapt_datetimefield_value(start)
        params += [span, when, metric, label, shard, n, total]
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (span, start, metric, label, shard, n, total) VALUES {values} "
            "ON CONFLICT (span, start, metric, label, shard) DO UPDATE SET "
            f"n = {table}.n + excluded.n, total = {table}.total + excluded.total",
            params,
        )


def compact(*, now: datetime | None = None) -> int:
    """Delete minutes older than MINUTES_KEPT (their hours count them too) and fold hours
    older than HOURS_KEPT into the running total. The totals are unchanged; returns the
    rows removed. Safe anywhere, at any time, twice at once: the hours are locked,
    summed and deleted in one transaction."""
    now = now or timezone.now()
    deleted, _ = MetricsBucket.objects.filter(span=MINUTE, start__lt=now - MINUTES_KEPT).delete()
    return deleted + _fold_hours(before=now - HOURS_KEPT)


def _fold_hours(*, before: datetime) -> int:
    """Add the hours before `before` to the running total and delete them."""
    with transaction.atomic():
        rows = list(
            MetricsBucket.objects.select_for_update()
            .filter(span=HOUR, start__lt=before)
            .values_list("id", "start", "metric", "label", "n", "total")
        )
        if not rows:
            return 0
        sums: dict[tuple, list] = defaultdict(lambda: [0, 0.0])
        for _id, _start, metric, label, n, total in rows:
            sums[metric, label][0] += n
            sums[metric, label][1] += total
        _upsert(
            [
                (TOTAL, EPOCH, metric, label, n, total)
                for (metric, label), (n, total) in sums.items()
            ],
            shard=0,
        )
        ids = [row[0] for row in rows]
        for i in range(0, len(ids), 500):
            MetricsBucket.objects.filter(id__in=ids[i : i + 500]).delete()
    return len(rows)


# --- reads ---------------------------------------------------------------------------


@dataclass
class Histogram:
    bounds: tuple[float, ...]
    counts: dict[str, int] = field(default_factory=dict)  # per bucket, not cumulative
    total: float = 0.0

    @property
    def count(self) -> int:
        return sum(self.counts.values())

    def cumulative(self) -> list[tuple[str, int]]:
        """[(le, observations ≤ le)], +Inf last, as Prometheus exposes them."""
        running, out = 0, []
        for label in [*map(format_bound, self.bounds), INF]:
            running += self.counts.get(label, 0)
            out.append((label, running))
        return out

    def quantile(self, q: float) -> float | None:
        """Estimated as Prometheus' histogram_quantile does: linear within the bucket;
        the highest finite bound when it falls in +Inf. None without observations."""
        total = self.count
        if not total:
            return None
        rank, lower = q * total, 0.0
        for label, running in self.cumulative():
            upper = bound_of(label)
            before = running - self.counts.get(label, 0)
            if running >= rank and self.counts.get(label, 0):
                if math.isinf(upper):
                    return lower
                return lower + (upper - lower) * (rank - before) / self.counts[label]
            if not math.isinf(upper):
                lower = upper
        return lower


@dataclass
class Totals:
    attempts: dict[str, int]
    latency: Histogram
    duration: Histogram


def totals() -> Totals:
    """Everything ever recorded (the counters and histograms of /metrics)."""
    return _totals(_sums(MetricsBucket.objects.filter(span__in=[HOUR, TOTAL])))


def _sums(queryset) -> list[tuple[str, str, int, float]]:
    return list(
        queryset.order_by()
        .values_list("metric", "label")
        .annotate(n=Sum("n"), total=Sum("total"))
        .values_list("metric", "label", "n", "total")
    )


def _totals(rows: Iterable[tuple[str, str, int, float]]) -> Totals:
    result = Totals(
        attempts=dict.fromkeys(OUTCOMES, 0),
        latency=Histogram(LATENCY_BUCKETS),
        duration=Histogram(DURATION_BUCKETS),
    )
    for metric, label, n, total in rows:
        if metric == "attempts":
            result.attempts[label] = result.attempts.get(label, 0) + int(n or 0)
        elif metric in BUCKETS:
            histogram = getattr(result, metric)
            histogram.counts[label] = histogram.counts.get(label, 0) + int(n or 0)
            histogram.total += float(total or 0.0)
    return result


def hourly(*, now: datetime | None = None, hours: int = 24) -> list[tuple[datetime, Totals]]:
    """The last `hours` hours, oldest first (the current one included): attempts by
    outcome and both histograms of each hour."""
    now = now or timezone.now()
    this_hour = now.replace(minute=0, second=0, microsecond=0)
    first = this_hour - timedelta(hours=hours - 1)
    per_hour: dict[datetime, list] = defaultdict(list)
    # One row per hour and label (the shards summed by the database).
    rows = (
        MetricsBucket.objects.filter(span=HOUR, start__gte=first)
        .order_by()
        .values_list("start", "metric", "label")
        .annotate(n=Sum("n"), total=Sum("total"))
        .values_list("start", "metric", "label", "n", "total")
    )
    for start, metric, label, n, total in rows:
        per_hour[start].append((metric, label, n, total))
    return [
        (first + timedelta(hours=i), _totals(per_hour.get(first + timedelta(hours=i), ())))
        for i in range(hours)
    ]


def publishes_per_minute(*, now: datetime | None = None, minutes: int = 60) -> list:
    """[(minute, attempts that published)] for the last `minutes` minutes, oldest first."""
    now = now or timezone.now()
    this_minute = now.replace(second=0, microsecond=0)
    first = this_minute - timedelta(minutes=minutes - 1)
    counts = dict(
        MetricsBucket.objects.filter(span=MINUTE, start__gte=first, metric="attempts", label="ok")
        .order_by()
        .values_list("start")
        .annotate(n=Sum("n"))
        .values_list("start", "n")
    )
    return [
        (first + timedelta(minutes=i), int(counts.get(first + timedelta(minutes=i), 0)))
        for i in range(minutes)
    ]
