"""Telling people about an entry a shared document could not show as stored.

The refresher's passes call `report` for each such entry (documents.EntryProblem): a
log line every pass, and an alert (publishing.alerts: log, the admins' mail,
ALERT_WEBHOOK_URL) at most once per ALERT_EVERY per article, whichever host runs the
pass. The alert goes after the pass commits, like every alert: a pass that fails and
is run again alerts once, and nothing is sent from inside the pass's snapshot.
"""

from __future__ import annotations

import contextlib
import logging

from django.db import IntegrityError
from django.db.models import Q
from django.db.models.functions import Now

from blogpublish.site.documents import EntryProblem, log_problem
from publishing.alerts import send_alert
from publishing.models import Alarm
from work.db import after_commit
from work.lease import now_plus

logger = logging.getLogger(__name__)

# A bad entry is in every pass's front page and feed while it is among the newest: one
# alert a day for it, not one per pass.
ALERT_EVERY = 24 * 3600.0
ALERT_KIND = "site_entry"


def alarm_name(article_id: int) -> str:
    return f"site-entry-{article_id}"


def report(problem: EntryProblem) -> None:
    log_problem(problem)
    after_commit(alert_once, problem)


def alert_once(problem: EntryProblem) -> bool:
    """Alert about the entry unless it was alerted within ALERT_EVERY; True if sent."""
    entry, name = problem.entry, alarm_name(problem.entry.id)
    what = "left out of" if problem.left_out else "shown repaired in"
    detail = f"{what} {problem.document}: {problem.reason}"
    with contextlib.suppress(IntegrityError):  # made by a concurrent pass
        Alarm.objects.get_or_create(name=name)
    if not (
        Alarm.objects.filter(name=name)
        .filter(Q(raised_at__isnull=True) | Q(raised_at__lte=now_plus(-ALERT_EVERY)))
        .update(raised_at=Now(), detail=detail[:2000])
    ):
        return False
    send_alert(
        kind=ALERT_KIND,
        subject=f"article {entry.id} is {what} {problem.document}",
        message=(
            f"Article {entry.id} “{entry.title}” ({entry.slug}) is {detail}\n"
            "The other articles are listed as usual. Edit the article to fix it; this "
            "alert comes at most once a day while the problem lasts."
        ),
        data={"article_id": entry.id, "document": problem.document, "left_out": problem.left_out},
    )
    return True
