"""Which looks still run: who may take the site over during and after a rolling deploy
(docs/site.md, "A rolling deploy").

A re-render run (blogpublish.site.rerender) and the shared views (build.adopt_look)
each belong to one look and record when the process that took them began (`born`).
While two looks run side by side, the newer-born process keeps them: the old
processes of a rolling deploy do not flip the whole site back and forth. But start
time alone cannot say which release is meant to stay: an old release's process
restarted (a supervisor, an OOM kill) is newer than the new release's, and so is a
rollback. What can is which looks still run. So each process says its looks (the
pages' and the shared views') are alive, by the database's clock, wherever it decides
whether to take the site (`heartbeat`: the re-render's due check, which every catch-up
runs, its passes, and every pass of the shared views); and a run or shared views whose
look has not been seen for `seen_within()` seconds may be taken by a process of another
look, whenever it began: the site goes to the looks that still run.

A takeover ranks as of its own time (`rank_over`), not its process's start: an idle
process of the look taken over, seen again later, is older than that, and does not
take the site back while the new look runs (no flip-flop); a process started after
it (a rollback by restart) is newer, and does.

Each look seen is one checkpoint row (work.checkpoints, `look-seen:<fingerprint>`,
position `{"at": <database clock, ISO>}`): its own row, so it never races a job's
progress; one small row per look ever deployed.
"""

from __future__ import annotations

import math
import time
from datetime import datetime

from django.conf import settings
from django.db.models.functions import Now

from blogpublish.site import look
from work.checkpoints import checkpoint_save
from work.lease import db_now
from work.models import Checkpoint

# The checkpoints' name prefix (a fingerprint's first 32 hex digits follow).
SEEN_PREFIX = "look-seen:"

# When this process last wrote each of its rows (its monotonic clock).
_written: dict[str, float] = {}


def seen_within() -> float:
    """Seconds a look stays alive after it was last seen: three catch-up intervals. Every
    catch-up (one a PUBLISH_CATCHUP_INTERVAL, run by one worker or another) and every
    pass of the shared views says its process's looks, so a look still running is seen
    several times a window; three, not one, so that a catch-up late or taken by the
    other release's workers a time or two does not hand the site over. A look stopped
    is given up three intervals after a process of it was last seen."""
    return 3 * float(settings.PUBLISH_CATCHUP_INTERVAL)


def heartbeat() -> None:
    """This process's looks seen now, by the database's clock: one small UPDATE each, at
    most once per half catch-up interval per look. Outside any snapshot transaction (a
    row two passes update would fail one of them on PostgreSQL)."""
    now = time.monotonic()
    gap = float(settings.PUBLISH_CATCHUP_INTERVAL) / 2
    for fingerprint in (look.look(), look.shared_look()):
        name = seen_checkpoint(fingerprint)
        if now - _written.get(name, -math.inf) < gap:
            continue
        checkpoint_save(name, {"at": db_now().isoformat()})
        _written[name] = now


def forget() -> None:
    """The next `heartbeat` writes (a test's database emptied under a running process)."""
    _written.clear()


def seen_lately(fingerprint: str) -> bool:
    """Was a process of this look seen within `seen_within()` seconds (database clock)?"""
    row = (
        Checkpoint.objects.filter(name=seen_checkpoint(fingerprint))
        .annotate(db_now=Now())
        .values_list("position", "db_now")
        .first()
    )
    if row is None or not isinstance(row[0], dict):
        return False
    try:
        at = datetime.fromisoformat(row[0]["at"])
    except (KeyError, TypeError, ValueError):
        return False
    return (row[1] - at).total_seconds() <= seen_within()


def may_take_over(fingerprint: str, born: float) -> bool:
    """May this process take over what a process of another look, ranked `born`, took:
    that process is no newer than this one, or its look no longer runs?"""
    return born <= look.born() or not seen_lately(fingerprint)


def rank_over(born: float) -> float:
    """The rank of what this process takes over one ranked `born`: when this process
    began, or now (the database's clock) when it takes over a newer one's (see the
    module)."""
    mine = look.born()
    return mine if born <= mine else db_now().timestamp()


def seen_checkpoint(fingerprint: str) -> str:
    """The name of the checkpoint row that says when `fingerprint` was last seen."""
    return SEEN_PREFIX + fingerprint[:32]
