"""The site's bookkeeping, in the database so that every host sees it (DESIGN.md,
"Publishing targets"). The files under SITE_ROOT are only the output.

- `SiteState` (one row): how many articles the archive was last built for, whether
  the next refresh must rebuild it whole, and the look the shared views are in. Written
  only by the refresher, under the refresher's lease (publishing.services.refresh).
- `PageNote`: a page written by an attempt, or an article deleted, that the refresher
  has not settled yet. A refresh reads the notes to know which archive entries changed
  and which page directories may have to go; its cost follows the notes, not the site.
- `Image`: an image uploaded from the article form, stored under SITE_ROOT/media/, with
  its smaller copies beside it.
- `PreviewBudget`, `PreviewSlot`: the preview's rate limit per writer and its cap on
  renders at once, shared by every web process (blogpublish.desk.limits).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

SITE_STATE_ID = 1


class SiteState(models.Model):
    # Listed articles the archive was built for: a refresh adds the newly listed ones
    # instead of counting the table.
    count = models.PositiveBigIntegerField(default=0)
    # A listed article left (a delete) or moved (a new date): every position above it
    # shifted, so the next refresh rebuilds the archive. True until the first build.
    rebuild = models.BooleanField(default=True)
    # The look the shared views were last built in (blogpublish.site.look.shared_look),
    # and when the process that built them was started (unix seconds): a pass of another
    # look rebuilds them all, unless it is an older process's (a rolling deploy).
    look = models.CharField(max_length=64, blank=True, default="", db_default="")
    look_born = models.FloatField(default=0.0, db_default=0.0)

    def __str__(self) -> str:
        return f"site of {self.count} article(s){' (rebuild due)' if self.rebuild else ''}"


class PageNote(models.Model):
    """Not settled yet: a page written by an attempt (whatever became of the attempt),
    or an article deleted. One per article; a later write adds to it."""

    # No foreign key: the note of a deleted article outlives its row.
    article_id = models.BigIntegerField(primary_key=True)
    # Every page directory written for it since it last settled, and the live one it
    # replaces: those the article does not need once settled are removed.
    slugs = models.JSONField(default=list)
    # Listed before the first unsettled write: settling it then does not add to the count.
    was_listed = models.BooleanField(default=False)
    # Its listed date then (ISO): a new date moves it, and settling it rebuilds.
    listed_at = models.CharField(max_length=40, blank=True, default="")
    # Bumped by every write: the refresher consumes a note only as it read it.
    version = models.PositiveIntegerField(default=1)

    def __str__(self) -> str:
        return f"article {self.article_id}: {', '.join(self.slugs)}"


class Image(models.Model):
    """An image a writer uploaded from the article form (blogpublish.desk.images),
    stored under SITE_ROOT at `path` (`media/<sha256 of the bytes>.<ext>`).

    The full check (reconcile) removes it once no article uses it, neither its text nor
    its live version, for IMAGE_GRACE_SECONDS since it was uploaded or last seen in use.
    """

    path = models.CharField(max_length=120, unique=True)
    # The name it had on the writer's machine (the alt text's default).
    original_name = models.CharField(max_length=255, blank=True, default="")
    size = models.PositiveIntegerField()
    width = models.PositiveIntegerField()
    height = models.PositiveIntegerField()
    # Uploading the same bytes again sets it anew: a fresh grace period.
    uploaded_at = models.DateTimeField()
    # When the full check last found an article using it.
    last_used_at = models.DateTimeField(null=True, blank=True)
    # Its smaller copies (blogpublish.desk.renditions.Renditions.as_json): the size it
    # shows at, and each copy's path, width, height and type. None: not made yet (an
    # image uploaded before copies were made; the full check makes them).
    renditions = models.JSONField(null=True, blank=True, default=None)

    def __str__(self) -> str:
        return self.path


class PreviewBudget(models.Model):
    """A writer's preview budget (blogpublish.desk.limits): a token bucket kept as one
    time, GCRA's "theoretical arrival time". A preview is allowed while `due_at` is at
    most PREVIEW_BURST - 1 intervals ahead of now, and moves it one interval on."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, primary_key=True, on_delete=models.CASCADE, related_name="+"
    )
    due_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"preview budget of user {self.user_id}: due {self.due_at}"


class PreviewSlot(models.Model):
    """One of PREVIEW_MAX_CONCURRENT renders that may run at once across every web
    process: taken with one conditional UPDATE, held until `held_until` at most (a web
    process that dies mid-render frees it then), released by its `holder`."""

    number = models.PositiveSmallIntegerField(primary_key=True)
    holder = models.CharField(max_length=32, blank=True, default="")
    held_until = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"preview slot {self.number}: held until {self.held_until}"
