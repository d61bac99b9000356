"""When to tell people: a death (once per death) and a stuck pipeline (once per window).

Both are claimed with a conditional UPDATE before anything is sent, so any number of
processes may check at once (two Beats, workers, the backup executor) and one sends.

A storm of deaths (a receiver down through an import of thousands: a delivery dies per
article) sends at most ALERTS_PER_WINDOW alerts of one kind in any ALERT_WINDOW, then one
alert that says how many are dead (`_deaths_folded`), and, once that window is over, one
that says how many more died in it (`storm_follow_ups`, from the catch-up): every death
is still stamped as alerted once, and listed on the dashboard and in the admin.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, models
from django.db.models import Q
from django.db.models.functions import Now

from publishing.alerts import Sent, send_alert
from publishing.models import Alarm, Article, WebhookDelivery
from publishing.selectors import stuck_articles, stuck_count
from work.lease import now_plus

logger = logging.getLogger(__name__)

STUCK = "stuck"
# At most this many alerts of one kind of death (an article's, a delivery's) in any
# ALERT_WINDOW seconds; the deaths past them are told of by one alert a window.
ALERTS_PER_WINDOW = 10
ALERT_WINDOW = 600.0
# A pass over unalerted deaths (the catch-up's, the backup executor's) sends no more of
# their alerts after one that no channel took (the mail server and the alert webhook
# down, or hung to their deadlines): the rest stay unstamped for a later pass, which
# would otherwise wait out every channel's deadline once per dead row (a review's
# finding). The pass's state, or None outside a pass (a death alerted as it happens).
_pass_failed: ContextVar[list[bool] | None] = ContextVar("death_alerts_pass", default=None)


@contextmanager
def death_alerts_pass() -> Iterator[None]:
    """Alerts of deaths sent in a loop: after one that no channel took, the loop's
    others return False at once and stay unstamped."""
    token = _pass_failed.set([False])
    try:
        yield
    finally:
        _pass_failed.reset(token)


def _channels_down() -> bool:
    failed = _pass_failed.get()
    return bool(failed and failed[0])


def _channels_failed() -> None:
    if (failed := _pass_failed.get()) is not None:
        failed[0] = True


def article_dead_alert(*, article_id: int) -> bool:
    """Alert that an article died, unless that death was alerted already (stamped). True
    when an alert went out: its own, or, in a storm, the one that counts them."""
    return _dead_alert(
        ARTICLES,
        article_id,
        ("title", "slug", "attempts", "last_error"),
        lambda row, key: send_alert(
            kind="article_dead",
            subject=f"article {article_id} is dead after {row['attempts']} attempt(s)",
            message=(
                f"Article {article_id} “{row['title']}” ({row['slug']}) was not published after "
                f"{row['attempts']} attempt(s).\n"
                f"Last error: {row['last_error']}\n"
                "Fix the cause, then requeue it in the admin (action “Requeue”) or edit it."
            ),
            data={"article_id": article_id, **row},
            key=key,
        ),
    )


def articles_dead_alerts(*, article_ids: list[int]) -> int:
    """The alerts of a publish group's deaths, as one pass (death_alerts_pass): a channel
    that is down or slow costs the group one wait, not one a death. How many went out."""
    with death_alerts_pass():
        return sum(article_dead_alert(article_id=article_id) for article_id in article_ids)


def delivery_dead_alert(*, delivery_id: int) -> bool:
    """Alert that a webhook delivery died, unless that death was alerted already. The
    article it announces is not affected (its page is live, or gone, as it was). True
    when an alert went out, as article_dead_alert."""
    return _dead_alert(
        DELIVERIES,
        delivery_id,
        ("article_id", "event", "key", "attempts", "last_error"),
        lambda row, key: send_alert(
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
            key=key,
        ),
    )


def _dead_alert(
    death: DeathKind, pk: int, fields: tuple[str, ...], alert: Callable[[dict, str], Sent]
) -> bool:
    """A death's alert: claimed by stamping it (one process sends it), then its own in a
    window slot, or, in a storm, folded into the count alert; `alert(row, key)` sends it
    with the row's `fields` under the death's Idempotency-Key."""
    if _channels_down():
        return False
    if not death.dead().filter(pk=pk, alerted_at__isnull=True).update(alerted_at=Now()):
        return False
    if not (slot := _alert_slot(death.kind)):
        return _deaths_folded(death, pk=pk)
    row = death.model._default_manager.values(*fields, "claims").get(pk=pk)
    key = death_key(death.kind, pk, row.pop("claims"))
    return _told(death, pk, slot, lambda: alert(row, key))


def death_key(kind: str, pk: int, claims: int) -> str:
    """The alert webhook's Idempotency-Key of one death: the same at each try of its
    alert, new for a later death of the row (after a requeue, its claims are more)."""
    return hashlib.sha256(f"{kind}:{pk}:{claims}".encode()).hexdigest()[:32]


def _told(death: DeathKind, pk: int, slot: str, send: Callable[[], Sent]) -> bool:
    """Send a death's alert (stamped, with its window's `slot`, or the storm alarm for a
    count alert): True when a channel took it. When none did in time (FAILED, or LATE:
    one still at it past its deadline, which may deliver it or may never), or a time
    limit (the try's, the task's) came during the send, its stamp and its slot go, so a
    later pass sends it (a review's finding: the stamp came first, and the death was
    never told), and the pass sends no more (a channel down or slow would cost it one
    wait a death). At least once, then: a late channel that did deliver gets it again,
    under the same Idempotency-Key on the alert webhook (reviews of the mends: taken
    for sent, a late send that then failed lost the death for good). A time limit is
    raised on."""
    try:
        sent = send()
    except BaseException:
        _unstamped(death, pk, slot=slot)
        raise
    if sent is Sent.TAKEN:
        return True
    _channels_failed()
    return _unstamped(death, pk, slot=slot)


def _unstamped(death: DeathKind, pk: int, *, slot: str) -> bool:
    """The death unstamped for a later pass, and the window's slot its alert took given
    back (the storm alarm, for a count alert). False: no alert went out."""
    logger.warning("%s %s: its alert was not sent; tried again later", death.kind, pk)
    death.dead().filter(pk=pk).update(alerted_at=None)
    Alarm.objects.filter(name=slot).update(raised_at=None, detail="")
    return False


def _alert_slot(kind: str) -> str:
    """May this death of `kind` have an alert of its own? Yes while fewer than
    ALERTS_PER_WINDOW were sent in the last ALERT_WINDOW: each takes one of as many
    slots (the Alarm rows `<kind>:<n>`), with alarm_raise's conditional UPDATE, so two
    processes never take one slot. In a storm, one read finds them all taken. The slot
    taken, or "" when none is free."""
    names = [f"{kind}:{n}" for n in range(ALERTS_PER_WINDOW)]
    taken = set(
        Alarm.objects.filter(name__in=names, raised_at__gt=now_plus(-ALERT_WINDOW)).values_list(
            "name", flat=True
        )
    )
    free = (name for name in names if name not in taken)
    return next((name for name in free if alarm_raise(name=name, every=ALERT_WINDOW)), "")


@dataclass(frozen=True)
class DeathKind:
    """A kind of death whose alerts a storm folds: its alerts' kind, what it counts, and
    its dead rows (stamped with `alerted_at` as they are alerted, or folded)."""

    kind: str
    what: str
    model: type[models.Model]

    def dead(self) -> models.QuerySet:
        return self.model.objects.filter(status="dead")  # type: ignore[attr-defined]


ARTICLES = DeathKind("article_dead", "articles", Article)
DELIVERIES = DeathKind("webhook_delivery_dead", "webhook deliveries", WebhookDelivery)
# The storm alarm's detail while the deaths folded in its window are still to be told.
FOLLOW_UP_OWED = "follow-up owed"


def _deaths_folded(death: DeathKind, *, pk: int) -> bool:
    """A death past its kind's alerts for the window: one alert a window says how many
    are dead now (kind `<kind>_many`), the first such death's to send; the others are
    told by its follow-up (`storm_follow_ups`). True when this one sent it; when no
    channel took it, the storm alarm is lowered and this death unstamped, so a later
    catch-up sends it again."""
    name = f"{death.kind}:many"
    if not alarm_raise(name=name, every=ALERT_WINDOW, detail=FOLLOW_UP_OWED):
        return False
    dead = death.dead().count()
    minutes = ALERT_WINDOW / 60
    return _told(
        death,
        pk,
        name,
        lambda: send_alert(
            kind=f"{death.kind}_many",
            subject=f"{dead} {death.what} are dead; more died than alerts are sent for",
            message=(
                f"More than {ALERTS_PER_WINDOW} {death.what} died within {minutes:.0f} minutes: "
                f"the ones past those get no alert of their own for {minutes:.0f} minutes; one "
                f"alert after them says how many more died. {dead} {death.what} are dead now; "
                "the publishing dashboard lists them. Fix the cause (often one: a receiver or "
                "a target that is down), then requeue them there or in the admin (action "
                "“Requeue”)."
            ),
            data={"dead": dead, "alerts_per_window": ALERTS_PER_WINDOW, "window_s": ALERT_WINDOW},
        ),
    )


def storm_follow_ups() -> int:
    """For each kind whose storm alert's window is over with its follow-up owed: one
    alert saying how many more died in that window (those stamped after it, folded) and
    how many are dead now; nothing if none did. Claimed by a conditional UPDATE, so one
    process sends it (the catch-up's). How many were sent."""
    sent = 0
    for death in (ARTICLES, DELIVERIES):
        name = f"{death.kind}:many"
        ended = now_plus(-ALERT_WINDOW)
        row = (
            Alarm.objects.filter(name=name, detail=FOLLOW_UP_OWED, raised_at__lte=ended)
            .values_list("raised_at", flat=True)
            .first()
        )
        if row is None or not Alarm.objects.filter(
            name=name, detail=FOLLOW_UP_OWED, raised_at=row
        ).update(detail=""):
            continue
        window = timedelta(seconds=ALERT_WINDOW)
        more = death.dead().filter(alerted_at__gt=row, alerted_at__lte=row + window).count()
        if not more:
            continue
        dead = death.dead().count()
        send_alert(
            kind=f"{death.kind}_many",
            subject=f"{more} more {death.what} died after the last alert; {dead} are dead",
            message=(
                f"In the {ALERT_WINDOW / 60:.0f} minutes after the alert that {death.what} "
                f"were dying faster than alerts are sent for, {more} more died. {dead} "
                f"{death.what} are dead now; the publishing dashboard lists them."
            ),
            data={"dead": dead, "more": more, "since": row.isoformat()},
        )
        sent += 1
    return sent


def alarm_raise(*, name: str, every: float, detail: str = "") -> bool:
    """True for the one caller that may raise `name` now: at most once per `every` s."""
    with contextlib.suppress(IntegrityError):  # created by a concurrent caller
        Alarm.objects.get_or_create(name=name)
    return bool(
        Alarm.objects.filter(name=name)
        .filter(Q(raised_at__isnull=True) | Q(raised_at__lte=now_plus(-every)))
        .update(raised_at=Now(), detail=detail)
    )


SITE_UNWRITABLE = "site_unwritable"


def site_unwritable_alert(*, error: str) -> bool:
    """No page could be written (SITE_ROOT read-only, not the workers', full): the
    articles' attempts are not counted, so none dies and the stuck alarm (work untouched)
    never comes; this says so, at most once per ALERT_WINDOW. True when it went out."""
    if not alarm_raise(name=SITE_UNWRITABLE, every=ALERT_WINDOW, detail=error[:500]):
        return False
    send_alert(
        kind=SITE_UNWRITABLE,
        subject="the site cannot be written: articles wait",
        message=(
            f"A page could not be written: {error}\n"
            "No article is given up on for it: they wait, pending, and are tried again. "
            "Fix SITE_ROOT (its permissions, free space, the mount); they go out by "
            "themselves once a page can be written."
        ),
        data={"error": error},
    )
    return True


def stuck_check() -> bool:
    """Raise the stuck alarm when due work has waited over PUBLISH_STUCK_AFTER seconds."""
    stuck_after = settings.PUBLISH_STUCK_AFTER
    stuck = stuck_articles(stuck_after=stuck_after, limit=1)
    if not stuck:
        return False
    oldest, waiting = stuck[0], stuck_count(stuck_after=stuck_after)
    detail = (
        f"{waiting} due article(s) untouched for over {stuck_after:.0f}s; the oldest is "
        f"{oldest['id']} “{oldest['title']}”, due since {oldest['publish_at']:%Y-%m-%d %H:%M:%S} "
        "UTC."
    )
    if not alarm_raise(name=STUCK, every=stuck_after, detail=detail):
        return False
    send_alert(
        kind="stuck",
        subject=f"publishing is stuck: {waiting} article(s) waiting",
        message=(
            f"{detail}\nIs a worker running, and can it reach the broker and the database? "
            "`python manage.py publishing_status` shows the pipeline; "
            "`python manage.py publish_pending` publishes without the broker."
        ),
        data={"waiting": waiting, "oldest_article_id": oldest["id"]},
    )
    return True
