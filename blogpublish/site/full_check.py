"""Which pages the full check reads (issue 17): its cost follows what changed.

The full check lists every page (a folder's entries, a bucket's keys) and finds every
missing one from that listing alone. Reading a page's first bytes to compare its
content mark costs a ranged GET in a bucket, so it reads only the pages that may have
gone wrong since the last full check began:

- a page put in place since then (its file's ctime, which the rename sets and no
  writer can; its object's LastModified): a write that landed late, an overtaken
  writer's, a restored copy;
- a page whose article or one of its neighbours was published since then (the row's
  `published_at`): the page had to change, and a write that was lost (a rename a
  power loss undid, a PUT that failed after its completion) left it as it was;
- and a rotating slice of the rest, `FULL_CHECK_SLICES` of them: the pages whose
  article id is the check's number modulo that, so every page is read at least once
  in that many full checks (a day, at the default hourly check), whatever happened
  to it (a neighbour deleted while its pass failed, a page changed behind the site's
  back with its time set back).

The first check, and any after the checkpoint is lost, reads every page. Times from
the two clocks (the database's for the check's start and `published_at`, the
storage's for the pages) are compared with `CLOCK_MARGIN` to spare.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from blogpublish.site.selectors import ListedPage
from work.checkpoints import checkpoint_read, checkpoint_save
from work.lease import db_now

logger = logging.getLogger(__name__)

# The full check's checkpoint (work.checkpoints): when the last completed check began
# (the database's clock) and which slice the next one reads.
FULL_CHECK_CHECKPOINT = "site-full-check"
# Every page is read at least once in this many full checks.
FULL_CHECK_SLICES = 24
# Seconds the storage's clock may be behind the database's, and more.
CLOCK_MARGIN = 300.0


@dataclass(frozen=True)
class Scope:
    """One full check's choice of pages to read."""

    began: datetime
    # Pages put in place or published after this (seconds since the epoch) are read;
    # None: every page.
    since: float | None
    slice: int

    def due(self, page: ListedPage, put_at: float) -> bool:
        """Read this page, put in place at `put_at` (the storage's listing)?"""
        if self.since is None or page.id % FULL_CHECK_SLICES == self.slice:
            return True
        if put_at >= self.since:
            return True
        return page.changed_at is not None and page.changed_at.timestamp() >= self.since


def scope_begin() -> Scope:
    """The scope of a full check starting now."""
    began = db_now()
    mark = checkpoint_read(FULL_CHECK_CHECKPOINT)
    if not mark:
        return Scope(began=began, since=None, slice=0)
    since = datetime.fromisoformat(mark["began"]).timestamp() - CLOCK_MARGIN
    return Scope(began=began, since=since, slice=mark["slice"] % FULL_CHECK_SLICES)


def scope_done(scope: Scope, *, read: int, listed: int) -> None:
    """The pages were compared (and the wrong ones written again): the next check
    reads what changes after this one began, and the next slice."""
    checkpoint_save(
        FULL_CHECK_CHECKPOINT,
        {"began": scope.began.isoformat(), "slice": (scope.slice + 1) % FULL_CHECK_SLICES},
    )
    logger.info(
        "full check: read %d of %d listed pages (%s, slice %d of %d)",
        read,
        listed,
        "every page" if scope.since is None else "changed since the last check",
        scope.slice,
        FULL_CHECK_SLICES,
    )
