"""Reading and writing the site's bookkeeping (blogpublish.models).

Attempts add notes (`note_write`, under the page guard); deletes add notes too
(`note_delete`, inside the delete's transaction); the refresher loads the state and
the notes in its snapshot, settles them, and saves the state and consumes the notes it
settled in the same transaction (`SiteState.save_pass`). Losing every row loses
nothing: the next refresh rebuilds, and the full check removes what no article needs.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from blogpublish.models import SITE_STATE_ID, PageNote
from blogpublish.models import SiteState as SiteStateRow
from work.checkpoints import checkpoint_read, checkpoint_save
from work.db import row_values_in
from work.models import Checkpoint


@dataclass
class Written:
    slugs: list[str]
    was_listed: bool
    listed_at: str = ""
    version: int = 0


@dataclass
class SiteState:
    count: int = 0
    rebuild: bool = True
    # The shared views' look, and when the process that built them in it began
    # (build.adopt_look).
    look: str = ""
    look_born: float = 0.0
    written: dict[int, Written] = field(default_factory=dict)
    # Notes settled by this pass: consumed when the pass saves, if unchanged meanwhile.
    settled: dict[int, int] = field(default_factory=dict)
    # Notes of pending articles that this pass counted as listed (build.settle).
    counted: dict[int, Written] = field(default_factory=dict)
    # Page directories settled notes no longer need, with the article that wrote them:
    # removed after the pass commits, each under its page guard (build.settle_page_dirs).
    removals: list[tuple[list[str], int]] = field(default_factory=list)
    # Settled by this pass: a listed article left or moved, so positions shifted and a
    # rebuild in progress starts over (build.rebuild's checkpoint no longer holds).
    shifted: bool = False

    @classmethod
    def load(cls) -> SiteState:
        row = SiteStateRow.objects.filter(pk=SITE_STATE_ID).first()
        notes = PageNote.objects.values_list(
            "article_id", "slugs", "was_listed", "listed_at", "version"
        )
        return cls(
            count=row.count if row else 0,
            rebuild=row.rebuild if row else True,
            look=row.look if row else "",
            look_born=row.look_born if row else 0.0,
            written={
                article_id: Written(list(slugs), was_listed, listed_at, version)
                for article_id, slugs, was_listed, listed_at, version in notes
            },
        )

    def settle(self, article_id: int) -> Written:
        written = self.written.pop(article_id)
        self.settled[article_id] = written.version
        return written

    def count_listed(self, article_id: int, listed_at: str) -> None:
        """A pending article's note whose article is listed now: counted by this pass,
        so the note says it was listed (and when) from now on."""
        written = self.written[article_id]
        written.was_listed, written.listed_at = True, listed_at
        self.counted[article_id] = written

    def save_pass(self) -> None:
        """Inside the pass's snapshot transaction: a note rewritten since it was read
        fails the pass on PostgreSQL (a serialization error), and the next one settles it."""
        SiteStateRow.objects.update_or_create(
            pk=SITE_STATE_ID,
            defaults={
                "count": self.count,
                "rebuild": self.rebuild,
                "look": self.look,
                "look_born": self.look_born,
            },
        )
        settled = list(self.settled.items())
        for start in range(0, len(settled), SETTLE_CHUNK):
            _notes_as_read(settled[start : start + SETTLE_CHUNK]).delete()
        for article_id, written in self.counted.items():
            PageNote.objects.filter(article_id=article_id, version=written.version).update(
                was_listed=True, listed_at=written.listed_at
            )
        self.settled, self.counted = {}, {}


# Notes consumed per DELETE: two parameters each, well under SQLite's limit on them.
SETTLE_CHUNK = 1000


def _notes_as_read(notes: list[tuple[int, int]]):
    """The notes (article id, version) still at the version the pass read: one row
    value `IN (VALUES …)` (work.db.row_values_in), which Django does not compile per
    note as it does an OR of one Q each (a pass after a large batch settles thousands;
    docs/performance.md)."""
    rows = PageNote.objects.filter(article_id__in=[article_id for article_id, _ in notes])
    return row_values_in(rows, ("article_id", "version"), notes)


def add_note(*, article_id: int, slugs: list[str], listed: bool, listed_at: str = "") -> None:
    """Under the article's page guard: an attempt is writing its page, or it is being
    deleted. `listed` and `listed_at` are read from the database now and count only for
    the first unsettled note: what the site showed of it when it last settled."""
    new = {slug for slug in slugs if slug}
    note = PageNote.objects.select_for_update().filter(article_id=article_id).first()
    if note is None:
        PageNote.objects.create(
            article_id=article_id, slugs=sorted(new), was_listed=listed, listed_at=listed_at
        )
        return
    note.slugs = sorted(set(note.slugs) | new)
    note.version += 1
    note.save(update_fields=["slugs", "version"])


@dataclass
class Note:
    article_id: int
    slugs: list[str]
    listed: bool
    listed_at: str = ""


def add_notes(notes: list[Note]) -> None:
    """`add_note` for many articles, under the page guard of them all: the notes there
    are read (locked) in one query, updated in one statement, the new ones created in
    one more."""
    if not notes:
        return
    existing = {
        note.article_id: note
        for note in PageNote.objects.select_for_update().filter(
            article_id__in=[n.article_id for n in notes]
        )
    }
    changed, new = [], []
    for n in notes:
        slugs = {slug for slug in n.slugs if slug}
        note = existing.get(n.article_id)
        if note is None:
            new.append(
                PageNote(
                    article_id=n.article_id,
                    slugs=sorted(slugs),
                    was_listed=n.listed,
                    listed_at=n.listed_at,
                )
            )
        else:
            note.slugs = sorted(set(note.slugs) | slugs)
            note.version += 1
            changed.append(note)
    if changed:
        PageNote.objects.bulk_update(changed, ["slugs", "version"])
    if new:
        PageNote.objects.bulk_create(new)


# --- the pages a pass checks after it commits -----------------------------------------

# The articles settled and not yet checked (the checkpoint's position, JSON: a token,
# their ids, where each was listed before it settled, and the page folders they no
# longer need), saved in the pass's transaction and cleared once checked and removed: a
# worker killed between the two, or a removal the storage refused, leaves them to the
# next pass, not to the next full check (a withdrawn page stayed served for up to an
# hour after one failed removal: a review's finding).
CHECKS_CHECKPOINT = "site-checks-due"


@dataclass(frozen=True)
class ChecksDue:
    token: str
    ids: list[int]
    # (article id, the listed date it had before it settled): its old neighbours'
    # links may name it.
    were_at: list[tuple[int, str]]
    # The page folders to remove (build.settle_page_dirs, which leaves one needed again).
    removals: list[str] = field(default_factory=list)
    # Folders removed, each with when (the database's clock, a timestamp) a pass removes
    # it again: a bucket's PUT in flight when its attempt gave up may land after the
    # removal (botocore retries it; SITE_STORAGE_LATE_WRITE_SECONDS), and put back the
    # page of an article deleted or withdrawn (a review's finding).
    again: dict[str, float] = field(default_factory=dict)


def checks_due_add(
    ids: list[int], were_at: list[tuple[int, str]], removals: Sequence[str] = ()
) -> ChecksDue | None:
    """Inside the pass's transaction: the articles it settled, and the folders they no
    longer need, added to those a pass before it settled and did not get to check or
    remove. None when there are none."""
    before = checkpoint_read(CHECKS_CHECKPOINT) or {}
    due = ChecksDue(
        token=before.get("token", ""),
        ids=list(before.get("ids", [])),
        were_at=[(i, at) for i, at in before.get("were_at", [])],
        removals=list(before.get("removals", [])),
        again=dict(before.get("again", {})),
    )
    if not ids and not removals:
        return due if due.ids or due.removals or due.again else None
    due = ChecksDue(
        token=uuid.uuid4().hex,
        ids=sorted({*due.ids, *ids}),
        were_at=sorted({*due.were_at, *were_at}),
        removals=sorted({*due.removals, *(slug for slug in removals if slug)}),
        again=due.again,
    )
    checkpoint_save(
        CHECKS_CHECKPOINT,
        {
            "token": due.token,
            "ids": due.ids,
            "were_at": [list(w) for w in due.were_at],
            "removals": due.removals,
            "again": due.again,
        },
    )
    return due


def checks_done(
    due: ChecksDue, *, removals_left: Sequence[str] = (), again: dict[str, float] | None = None
) -> None:
    """After the check: cleared, unless a later pass added to them meanwhile (its
    token, then: it checks them all). `removals_left`: the folders the storage refused
    to remove, and `again`: those to remove again once no late write can land, kept
    alone for the passes after it."""
    left = sorted(set(removals_left))
    again = again or {}
    position = (
        {"token": uuid.uuid4().hex, "ids": [], "were_at": [], "removals": left, "again": again}
        if left or again
        else None
    )
    Checkpoint.objects.filter(name=CHECKS_CHECKPOINT, position__token=due.token).update(
        position=position
    )
