"""The article's life in one sentence, for the change form and the list.

A pure function of the row and the clock (tests/unit/test_desk_life.py holds every
state to its words): "live since …", "scheduled for … (in 2 h)", "publishing: attempt
2 of 5, next try in 14 s", "dead: <error>".
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.utils import dateformat

from publishing.dates import localtime_or_utc
from publishing.models import Article, ArticleStatus


@dataclass(frozen=True)
class Life:
    # live, scheduled, publishing, dead: what the sentence says, for its colour.
    kind: str
    text: str


def span(seconds: float) -> str:
    """A duration as a person reads it: 14 s, 5 min, 2 h, 3 d."""
    whole = max(0, int(seconds))
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min"
    if whole < 48 * 3600:
        return f"{round(whole / 3600)} h"
    return f"{round(whole / 86400)} d"


def when(moment: datetime) -> str:
    """1 Dec 2026 08:01 UTC (in the site's TIME_ZONE; in UTC when the zone cannot show
    it: a date stored past validation at the calendar's edge, publishing/dates.py)."""
    return dateformat.format(localtime_or_utc(moment)[0], "j M Y H:i T")


def relative(moment: datetime, now: datetime) -> str:
    seconds = (moment - now).total_seconds()
    return f"in {span(seconds)}" if seconds > 0 else f"{span(-seconds)} ago"


def life_of(article: Article, *, now: datetime, max_attempts: int) -> Life:
    """What is happening to `article` at `now`, in words."""
    live_since = article.published_at if article.published_hash else None
    live = live_since is not None
    live_note = f"; the version live since {when(live_since)} stays online" if live_since else ""
    if article.status == ArticleStatus.PUBLISHED:
        since = article.published_at or article.updated_at or now
        return Life("live", f"live since {when(since)} ({relative(since, now)})")
    if article.status == ArticleStatus.DEAD:
        error = article.last_error.strip() or "no error was recorded"
        return Life("dead", f"dead: {error}{live_note}")
    if article.publish_at > now:
        text = f"scheduled for {when(article.publish_at)} ({relative(article.publish_at, now)})"
        return Life("scheduled", text + (live_note + " until then" if live else ""))
    return Life(
        "publishing", publishing_text(article, now=now, max_attempts=max_attempts) + live_note
    )


def publishing_text(article: Article, *, now: datetime, max_attempts: int) -> str:
    """Pending and due: running, backing off after a failure, or waiting for a worker."""
    if article.lease_expires_at is not None and article.lease_expires_at > now:
        return f"publishing: attempt {article.attempts} of {max_attempts}, running now"
    attempt = f"publishing: attempt {article.attempts + 1} of {max_attempts}"
    error = f" (last error: {article.last_error.strip()})" if article.last_error.strip() else ""
    if article.next_attempt_at is not None and article.next_attempt_at > now:
        return f"{attempt}, next try {relative(article.next_attempt_at, now)}{error}"
    return f"{attempt}, waiting for a worker{error}"
