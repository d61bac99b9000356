"""What the digest of a day says: built once from the database, kept on its row, and
sent as it is (mail in HTML and plain text, and the webhook's JSON)."""

from __future__ import annotations

from datetime import date, datetime, time, timedelta

from django.conf import settings
from django.db.models import Count
from django.template.loader import render_to_string
from django.utils import timezone

from blogpublish.site.paths import article_url
from publishing.models import Article, ArticleStatus, AttemptOutcome, PublishAttempt

LISTED_AT_MOST = 200  # articles per list; the totals count them all
SLOWEST = 5
ERROR_CHARS = 500


def day_bounds(day: date) -> tuple[datetime, datetime]:
    """The day from midnight to midnight in TIME_ZONE (23 or 25 hours on DST days)."""
    tz = timezone.get_default_timezone()
    start = datetime.combine(day, time.min, tzinfo=tz)
    end = datetime.combine(day + timedelta(days=1), time.min, tzinfo=tz)
    return start, end


def _iso(value: datetime | None) -> str | None:
    return timezone.localtime(value).isoformat(timespec="seconds") if value else None


# An article's live version, as the site lists it (DESIGN.md, "Fencing"): an edit not
# yet live (a rename, a new address) shows nowhere, so the digest names and links what
# readers find. Before any publish recorded it (blank), the article's own.
LIVE_TITLE = ("article__published_title", "article__title")
LIVE_SLUG = ("article__published_slug", "article__slug")


def _live(row: dict, fields: tuple[str, str]) -> str:
    live, own = fields
    return row[live] or row[own]


def _published(start: datetime, end: datetime) -> tuple[list[dict], int]:
    attempts = (
        PublishAttempt.objects.filter(
            outcome=AttemptOutcome.OK, finished_at__gte=start, finished_at__lt=end
        )
        .order_by("finished_at", "id")
        .values("article_id", *LIVE_TITLE, *LIVE_SLUG, "finished_at")
    )
    seen: dict[int, dict] = {}
    for row in attempts.iterator():
        seen[row["article_id"]] = {  # an article published twice that day: its last time
            "id": row["article_id"],
            "title": _live(row, LIVE_TITLE),
            "url": article_url(_live(row, LIVE_SLUG)),
            "published_at": _iso(row["finished_at"]),
        }
    items = sorted(seen.values(), key=lambda item: item["published_at"])
    return items[:LISTED_AT_MOST], len(items)


def _scheduled(now: datetime) -> tuple[list[dict], int]:
    rows = Article.objects.filter(
        status=ArticleStatus.PENDING, publish_at__gt=now, publish_at__lte=now + timedelta(days=1)
    ).order_by("publish_at", "id")
    items = [
        {"id": a["id"], "title": a["title"], "publish_at": _iso(a["publish_at"])}
        for a in rows.values("id", "title", "publish_at")[:LISTED_AT_MOST]
    ]
    return items, rows.count()


def _dead(start: datetime, end: datetime) -> tuple[list[dict], int]:
    rows = PublishAttempt.objects.filter(
        outcome=AttemptOutcome.DEAD, finished_at__gte=start, finished_at__lt=end
    ).order_by("finished_at", "id")
    items = [
        {
            "id": a["article_id"],
            "title": a["article__title"],
            "error": a["error"][:ERROR_CHARS],
            "died_at": _iso(a["finished_at"]),
            "still_dead": a["article__status"] == ArticleStatus.DEAD,
        }
        for a in rows.values(
            "article_id", "article__title", "article__status", "error", "finished_at"
        )[:LISTED_AT_MOST]
    ]
    return items, rows.count()


def _slowest(start: datetime, end: datetime) -> list[dict]:
    rows = (
        PublishAttempt.objects.filter(
            outcome=AttemptOutcome.OK,
            finished_at__gte=start,
            finished_at__lt=end,
            duration__isnull=False,
        )
        .order_by("-duration", "id")
        .values("article_id", *LIVE_TITLE, "duration", "finished_at")[:SLOWEST]
    )
    return [
        {
            "id": a["article_id"],
            "title": _live(a, LIVE_TITLE),
            # Not None: the query keeps the attempts with a duration (duration__isnull=False).
            "duration_s": round(a["duration"].total_seconds(), 3),
            "published_at": _iso(a["finished_at"]),
        }
        for a in rows
    ]


def _attempt_counts(start: datetime, end: datetime) -> dict[str, int]:
    counts = {outcome.value: 0 for outcome in AttemptOutcome}
    counts["running"] = 0
    rows = (
        PublishAttempt.objects.filter(started_at__gte=start, started_at__lt=end)
        .values_list("outcome")
        .annotate(n=Count("id"))
        .values_list("outcome", "n")
    )
    for outcome, n in rows:
        counts[outcome or "running"] += n
    return counts


def digest_build(*, day: date) -> dict:
    """The digest of `day`, as JSON-ready data (the webhook's body as it is)."""
    start, end = day_bounds(day)
    now = timezone.now()
    published, published_total = _published(start, end)
    scheduled, scheduled_total = _scheduled(now)
    dead, dead_total = _dead(start, end)
    return {
        "event": "digest.daily",
        "day": day.isoformat(),
        "time_zone": settings.TIME_ZONE,
        "site": settings.SITE_URL,
        "built_at": _iso(now),
        "published": published,
        "published_total": published_total,
        "scheduled_next_24h": scheduled,
        "scheduled_total": scheduled_total,
        "dead": dead,
        "dead_total": dead_total,
        "slowest": _slowest(start, end),
        "attempts": _attempt_counts(start, end),
    }


def digest_subject(content: dict) -> str:
    return (
        f"[{settings.SITE_TITLE}] Digest of {content['day']}: "
        f"{content['published_total']} published, {content['dead_total']} dead"
    )


def digest_render(content: dict) -> tuple[str, str]:
    """(plain text, HTML) of the mail."""
    context = {"d": content, "site_title": settings.SITE_TITLE}
    return (
        render_to_string("digest/digest.txt", context),
        render_to_string("digest/digest.html", context),
    )
