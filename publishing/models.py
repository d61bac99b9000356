"""The pending list and its audit trail.

An `Article` whose status is `pending` is work to do, and nothing else is: there is no
owner, no hand-over record. Moving work (claim, complete, fail, requeue) lives in
`publishing.services`; this module only keeps a row's own derived fields consistent
(the slug derived from the title, the content hash, "edited content is pending again").
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
import uuid
from datetime import UTC, datetime

from django.core.exceptions import ValidationError
from django.db import IntegrityError, models, transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.text import slugify
from django.utils.translation import gettext_lazy as _

from publishing.text_limits import validate_markdown_limits, validate_xml_chars
from publishing.validators import (
    BODY_MAX_BYTES,
    RESERVED_SLUGS,
    SLUG_MAX_BYTES,
    validate_body_size,
    validate_not_reserved,
    validate_single_line,
    validate_slug_bytes,
)

TITLE_MAX_LENGTH = 200


class ArticleStatus(models.TextChoices):
    # Work to do: never published, or published content that was edited since.
    PENDING = "pending", _("Pending")
    # Live on the blog with its current content.
    PUBLISHED = "published", _("Published")
    # Given up on after PUBLISH_MAX_ATTEMPTS failures or a permanent error; a person
    # requeues it (or edits it) once the cause is fixed.
    DEAD = "dead", _("Dead")


# What "pending again, with a fresh budget of attempts" writes: an edit of published or
# dead content, and the operator's requeue.
FRESH_PENDING = {
    "status": ArticleStatus.PENDING,
    "attempts": 0,
    "last_error": "",
    "next_attempt_at": None,
    "lease_expires_at": None,
    "alerted_at": None,
}


class AttemptOutcome(models.TextChoices):
    # The content of this attempt is live.
    OK = "ok", _("Published")
    # Failed, or overtaken by a newer attempt or an edit; the article is still pending.
    RETRY = "retry", _("Will retry")
    # Failed for the last time; the article is dead.
    DEAD = "dead", _("Dead")


def content_hash_of(*, title: str, slug: str, body: str, publish_at: datetime) -> str:
    """The identity of what readers see (the date is on the page and orders the index):
    equal hashes mean nothing to publish."""
    when = publish_at.astimezone(UTC).isoformat()
    payload = json.dumps([title, slug, body, when], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def normalize_body(value: str) -> str:
    """Browsers send a textarea's lines with CRLF; stored and hashed with LF, so saving an
    article unchanged from the admin publishes nothing."""
    return value.replace("\r\n", "\n").replace("\r", "\n")


def normalize_slug(value: str) -> str:
    return unicodedata.normalize("NFKC", value).strip().lower()


def slug_from_title(title: str) -> str:
    """A slug for the title: unicode letters kept (a Chinese title gives a Chinese slug),
    cut to what a file name can hold, never empty or reserved."""
    slug = slugify(title, allow_unicode=True)
    while len(slug.encode("utf-8")) > SLUG_MAX_BYTES:
        slug = slug[:-1]
    slug = slug.strip("-_") or "article"
    if slug in RESERVED_SLUGS:
        slug = f"{slug}-1"
    return slug


class Article(models.Model):
    title = models.CharField(
        max_length=TITLE_MAX_LENGTH, validators=[validate_single_line, validate_xml_chars]
    )
    slug = models.SlugField(
        max_length=200,
        unique=True,
        blank=True,
        allow_unicode=True,
        validators=[validate_slug_bytes, validate_not_reserved],
        help_text=_(
            "The page's address: letters (any script), digits, - and _. "
            "Left blank, it is made from the title."
        ),
    )
    body = models.TextField(
        validators=[validate_body_size, validate_xml_chars, validate_markdown_limits],
        help_text=_("Markdown, at most %(mb)s MiB.") % {"mb": BODY_MAX_BYTES // 2**20},
    )
    status = models.CharField(
        max_length=16, choices=ArticleStatus.choices, default=ArticleStatus.PENDING
    )
    publish_at = models.DateTimeField(
        default=timezone.now, help_text=_("Not published before this time.")
    )
    # Attempts of the current content: the budget, reset by a requeue or an edit.
    attempts = models.PositiveIntegerField(default=0)
    # Claims ever made, never reset: the value read after a claim is the fencing token, so
    # an attempt overtaken long ago cannot match a later one after a requeue.
    claims = models.PositiveBigIntegerField(default=0, editable=False)
    last_error = models.TextField(blank=True, default="")
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    # When the catch-up last sent or armed it: not sent again before PUBLISH_STALE_AFTER.
    dispatched_at = models.DateTimeField(null=True, blank=True, editable=False)
    # When its death was alerted: one alert per death, also if the worker died first.
    alerted_at = models.DateTimeField(null=True, blank=True, editable=False)
    # sha256 of title, slug and body as saved; published_hash is the content that is live.
    content_hash = models.CharField(max_length=64, editable=False)
    published_hash = models.CharField(max_length=64, blank=True, default="", editable=False)
    # The live version, as it was published: what the site lists and where its page is.
    # Edits change title/slug/body/publish_at at once; these only when the edit is live.
    published_slug = models.CharField(max_length=200, blank=True, default="", editable=False)
    published_title = models.CharField(max_length=200, blank=True, default="", editable=False)
    published_body = models.TextField(blank=True, default="", editable=False)
    published_publish_at = models.DateTimeField(null=True, blank=True, editable=False)
    # Stable identity for feed entries and webhook receivers; unchanged by edits.
    uid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    published_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-publish_at", "-id"]
        indexes = [
            # The catch-up and the backup executor look only at due pending rows; a
            # partial index keeps that cheap however many articles are published.
            models.Index(
                fields=["publish_at", "updated_at"],
                name="article_pending_due_idx",
                condition=Q(status="pending"),
            ),
            # Deaths not yet alerted: the catch-up looks for them at every run.
            models.Index(
                fields=["updated_at"],
                name="article_dead_unalerted_idx",
                condition=Q(status="dead", alerted_at__isnull=True),
            ),
            models.Index(
                fields=["-published_at"],
                name="article_published_idx",
                condition=Q(status="published"),
            ),
            # What the site lists: every article with a live version (published once and
            # not deleted, whatever its status now), newest first; the front page, the
            # feed and the archive positions read it (blogpublish.site.selectors).
            models.Index(
                fields=["published_publish_at", "id"],
                name="article_listed_idx",
                condition=~Q(published_hash=""),
            ),
        ]

    def __str__(self) -> str:
        return self.title

    # --- saving keeps the derived fields consistent ------------------------------------

    def save(self, *args, **kwargs) -> None:
        self._normalize()
        derived_slug = not self.slug
        if derived_slug:
            self.slug = self._unique_slug(slug_from_title(self.title))
        self.content_hash = self._content_hash()
        if self._state.adding:
            # Read by the post_save receiver, which runs inside super().save().
            self.wants_publish = self.status == ArticleStatus.PENDING
            self._save_new(derived_slug, *args, **kwargs)
            return
        self._save_edit()

    def get_absolute_url(self) -> str:
        return f"/{self.slug}/"

    @property
    def is_scheduled(self) -> bool:
        return self.status == ArticleStatus.PENDING and self.publish_at > timezone.now()

    # --- validation -----------------------------------------------------------------

    def _normalize(self) -> None:
        self.title = (self.title or "").strip()
        self.slug = normalize_slug(self.slug or "")
        self.body = normalize_body(self.body or "")
        if self.publish_at:  # whole seconds: what the admin's date and time fields keep
            self.publish_at = self.publish_at.replace(microsecond=0)

    def _content_hash(self) -> str:
        return content_hash_of(
            title=self.title, slug=self.slug, body=self.body, publish_at=self.publish_at
        )

    def clean_fields(self, exclude=None) -> None:
        self._normalize()
        super().clean_fields(exclude=exclude)

    def clean(self) -> None:
        if not self.slug and self.title:
            self.slug = self._unique_slug(slug_from_title(self.title))
        elif self.slug and self._slug_is_live_elsewhere(self.slug):
            raise ValidationError(
                {"slug": _("Another article's live page is at this address; choose another.")}
            )

    def _slug_is_live_elsewhere(self, slug: str) -> bool:
        """Until an article's edit is live, its old page still serves its last version:
        that address is not free yet, even though no row has it as `slug`."""
        return Article.objects.exclude(pk=self.pk).filter(published_slug=slug).exists()

    def _unique_slug(self, base: str) -> str:
        taken = Article.objects.exclude(pk=self.pk)
        slug, n = base, 1
        while taken.filter(Q(slug=slug) | Q(published_slug=slug)).exists():
            n += 1
            suffix = f"-{n}"
            stem = base
            while len((stem + suffix).encode("utf-8")) > SLUG_MAX_BYTES:
                stem = stem[:-1]
            slug = stem + suffix
        return slug

    def _save_new(self, derived_slug: bool, *args, **kwargs) -> None:
        if not derived_slug:
            super().save(*args, **kwargs)
            return
        # Two writers may derive the same slug at once; the unique index decides.
        for _try in range(5):
            try:
                with transaction.atomic():
                    super().save(*args, **kwargs)
                return
            except IntegrityError:
                if not Article.objects.filter(slug=self.slug).exclude(pk=self.pk).exists():
                    raise
                self.slug = self._unique_slug(f"{self.slug}-{uuid.uuid4().hex[:4]}")
                self.content_hash = self._content_hash()
        raise ValidationError({"slug": _("Could not find a free slug; please choose one.")})

    def _save_edit(self) -> None:
        """Save what a writer edits; never the pipeline's fields.

        A form holds a copy of the row from when it was opened; writing that copy's
        status, attempts or lease would undo a worker's claim or outcome. So only the
        content is written, and the state follows from it by conditional UPDATEs.
        """
        rows = Article.objects.filter(pk=self.pk)
        with transaction.atomic():
            before = rows.select_for_update().values_list("content_hash", flat=True).get()
            # Decided before super().save(), whose post_save receiver reads it.
            self.wants_publish = changed = before != self.content_hash
            super().save(
                update_fields=["title", "slug", "body", "publish_at", "content_hash", "updated_at"]
            )
            if changed:
                # New content is new work, with a fresh budget of attempts, to try now
                # rather than after the last failure's backoff. An attempt in flight keeps
                # its lease: its content no longer matches, so it cannot complete, and the
                # new content goes as soon as it lets go.
                rows.filter(status__in=[ArticleStatus.PUBLISHED, ArticleStatus.DEAD]).update(
                    **FRESH_PENDING
                )
                rows.filter(status=ArticleStatus.PENDING).update(
                    **{k: v for k, v in FRESH_PENDING.items() if k != "lease_expires_at"}
                )
            self.refresh_from_db(
                fields=["status", "attempts", "last_error", "next_attempt_at", "lease_expires_at"]
            )


class PublishAttempt(models.Model):
    """One claimed attempt: the audit trail that says why an article is not live."""

    article = models.ForeignKey(Article, on_delete=models.CASCADE, related_name="publish_attempts")
    number = models.PositiveIntegerField()
    content_hash = models.CharField(max_length=64)
    started_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Empty while the attempt runs (or if its worker died before it could say).
    outcome = models.CharField(
        max_length=16, choices=AttemptOutcome.choices, blank=True, default=""
    )
    error = models.TextField(blank=True, default="")
    worker = models.CharField(max_length=255, blank=True, default="")
    task_id = models.CharField(max_length=255, blank=True, default="")
    duration = models.DurationField(null=True, blank=True)

    class Meta:
        ordering = ["-started_at", "-id"]
        indexes = [models.Index(fields=["article", "number"], name="attempt_article_idx")]

    def __str__(self) -> str:
        return f"{self.article_id} #{self.number} {self.outcome or 'running'}"


class Alarm(models.Model):
    """When an alarm last went off, so that it goes off at most once per window,
    whichever process (worker, beat, backup executor) checks, and however many."""

    name = models.CharField(max_length=64, unique=True)
    raised_at = models.DateTimeField(null=True, blank=True)
    detail = models.TextField(blank=True, default="")

    def __str__(self) -> str:
        return f"{self.name} (last raised {self.raised_at or 'never'})"


class Refresher(models.Model):
    """The coalescing refresher of the shared views (one row): at most one pass at a
    time on any host, and requests made during a pass fold into one more
    (publishing.services.refresh)."""

    # An outcome or a delete committed since the last pass began.
    wanted = models.BooleanField(default=False)
    # The running pass's lease, like an article's: a refresher that dies lets go by itself.
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    # Passes ever begun: the running pass's fencing token, and a count tests can read.
    passes = models.PositiveBigIntegerField(default=0)
    last_pass_at = models.DateTimeField(null=True, blank=True)
    # A deferred pass is on its way (a message with this ETA was sent).
    deferred_until = models.DateTimeField(null=True, blank=True)
    # When the catch-up last ran the full check (reconcile) rather than a refresh.
    reconciled_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"refresher: {self.passes} pass(es), last {self.last_pass_at or 'never'}"
