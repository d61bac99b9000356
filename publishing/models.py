"""The pending list and its audit trail.

An `Article` whose status is `pending` is work to do, and nothing else is: there is no
owner, no hand-over record. Moving work (claim, complete, fail, requeue) lives in
`publishing.services`; this module only keeps a row's own derived fields consistent
(the slug derived from the title, the slug keys, the content hash, "edited content is
pending again") and refuses content that fails validation, however it is saved.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import unicodedata
import uuid
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, models, transaction
from django.db.models import F, Func, JSONField, Q, Value
from django.db.models.functions import Coalesce, Greatest, Length, Now, Replace, Substr
from django.db.models.lookups import Exact, GreaterThan, LessThanOrEqual
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from publishing.db import OctetLength
from publishing.fields import SlugField
from publishing.reader_fields import (
    BYLINE_MAX_LENGTH,
    DESCRIPTION_MAX_LENGTH,
    LANGUAGE_MAX_LENGTH,
    TAG_KEY_MAX_LENGTH,
    TAG_MAX_LENGTH,
    normalize_language,
    normalize_tags,
    validate_byline,
    validate_description,
    validate_language,
    validate_tags,
)
from publishing.text_limits import (
    amplification_problem,
    one_line,
    validate_display_chars,
    validate_html_chars,
    validate_visible,
    validate_xml_chars,
)
from publishing.validators import (
    BODY_MAX_BYTES,
    RESERVED_SLUGS,
    SITEMAP_CHUNK_PREFIX,
    SLUG_MAX_BYTES,
    is_reserved_slug,
    normalize_body,
    slug_key,
    slugify_keeping_marks,
    validate_body_size,
    validate_not_reserved,
    validate_publish_at,
    validate_single_line,
    validate_slug_bytes,
)
from work.db import address_lock, advisory_key, advisory_locks, insert_rows

TITLE_MAX_LENGTH = 200
# The content's validators, shared by the article and its story's draft.
TITLE_VALIDATORS = [
    validate_single_line,
    validate_xml_chars,
    validate_display_chars,
    validate_html_chars,
    validate_visible,
]
SLUG_VALIDATORS = [
    validate_slug_bytes,
    validate_not_reserved,
    validate_xml_chars,  # a lone surrogate (a 500 from the database, before)
    validate_display_chars,
]
BODY_VALIDATORS = [validate_body_size, validate_xml_chars, validate_html_chars]
BODY_HELP = _("Markdown, at most %(mb)s MiB.") % {"mb": BODY_MAX_BYTES // 2**20}
DESCRIPTION_VALIDATORS = [
    validate_description,
    validate_xml_chars,
    validate_display_chars,
    validate_html_chars,
    validate_visible,
]
BYLINE_VALIDATORS = [
    validate_byline,
    validate_xml_chars,
    validate_display_chars,
    validate_html_chars,
    validate_visible,
]
# What readers see beside the text (issue 21); content too (reader_fields).
READER_FIELDS = ("description", "language", "byline", "tags")
# What a writer edits; save() validates these, whichever way the row is saved.
CONTENT_FIELDS = ("title", "slug", "body", "publish_at", *READER_FIELDS)
# What a story's draft and its revisions carry: the same.
DRAFT_FIELDS = CONTENT_FIELDS


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
    # Latency (blogpublish_publish_latency_seconds) is counted from here.
    "pending_since": Now(),
    # The fencing token moves on: an attempt claimed before the row died or went live
    # (its worker paused past its lease) holds a token no longer current, and its late
    # outcome cannot count against the fresh budget. With the token left as it was, a
    # late failure found the row pending with its own token and its attempt number
    # last, and put the requeued row back to dead (a review's finding).
    "claims": F("claims") + 1,
}
# The same for new content while the row is pending: an attempt in flight keeps its
# lease and its token, so that it lets go (its content no longer matches, it cannot
# complete) and the new content goes as soon as it does.
EDITED_WHILE_PENDING = {
    name: value
    for name, value in FRESH_PENDING.items()
    if name not in ("lease_expires_at", "claims")
}


class AttemptOutcome(models.TextChoices):
    # The content of this attempt is live.
    OK = "ok", _("Published")
    # Failed, or overtaken by a newer attempt or an edit; the article is still pending.
    RETRY = "retry", _("Will retry")
    # Failed for the last time; the article is dead.
    DEAD = "dead", _("Dead")


def content_hash_of(
    *,
    title: str,
    slug: str,
    body: str,
    publish_at: datetime,
    description: str = "",
    language: str = "",
    byline: str = "",
    tags: Iterable[str] = (),
) -> str:
    """The identity of what readers see (the date is on the page and orders the index;
    the reader fields are on the page and in the feeds): equal hashes mean nothing to
    publish. The reader fields join the hashed list only when one is set, so an article
    saved before they existed keeps its hash (nothing republished by the upgrade)."""
    when = publish_at.astimezone(UTC).isoformat()
    content: list[object] = [title, slug, body, when]
    reader: list[object] = [description, language, byline, list(tags)]
    if any(reader):
        content += reader
    payload = json.dumps(content, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def new_message_id() -> str:
    """A publish message's task id, as Celery makes them (a UUID's text)."""
    return str(uuid.uuid4())


def normalize_one_line(value: str) -> str:
    """A description or a byline as stored: one line, single spaces (text_limits.one_line:
    a no-break space kept)."""
    return one_line(value or "")


# The reader fields of an article and of its story's draft, made alike. Each with a
# database default too: the previous release's code, which knows no such column, still
# inserts rows during a rolling deploy (docs/operations.md, "Upgrades").
EMPTY_LIST = Value([], JSONField())


def description_field() -> models.CharField:
    return models.CharField(
        max_length=DESCRIPTION_MAX_LENGTH,
        blank=True,
        default="",
        db_default="",
        validators=DESCRIPTION_VALIDATORS,
        help_text=_("What search results and link cards show. Empty: the first lines."),
    )


def language_field() -> models.CharField:
    return models.CharField(
        max_length=LANGUAGE_MAX_LENGTH,
        blank=True,
        default="",
        db_default="",
        validators=[validate_language],
        help_text=_("The language tag (en, fr, zh-Hans). Empty: the site's language."),
    )


def byline_field() -> models.CharField:
    return models.CharField(
        max_length=BYLINE_MAX_LENGTH,
        blank=True,
        default="",
        db_default="",
        validators=BYLINE_VALIDATORS,
        help_text=_("The author's name as readers see it."),
    )


# Any surrogate in a str is a lone one (json.loads joins a pair into one character).
LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class TagsJSONField(models.JSONField):
    """A list of tags. Read back, a lone surrogate is U+FFFD, as the rendering makes
    invalid UTF-8: SQLite keeps the JSON escape `\\ud800` of a row written past
    validation (PostgreSQL's jsonb refuses it), and such text fails wherever it is
    encoded (the content hash, a query's parameter), so one row failed every group it
    was claimed in (a review's finding). The same field to migrations: no schema
    change, no migration."""

    def from_db_value(self, value, expression, connection):
        value = super().from_db_value(value, expression, connection)
        if isinstance(value, list):
            return [LONE_SURROGATE.sub("\ufffd", v) if isinstance(v, str) else v for v in value]
        return value

    def deconstruct(self):
        name, _path, args, kwargs = super().deconstruct()
        return name, "django.db.models.JSONField", args, kwargs


def tags_field() -> models.JSONField:
    return TagsJSONField(
        default=list, db_default=EMPTY_LIST, blank=True, validators=[validate_tags]
    )


def normalize_reader_fields(obj: Article | Story) -> None:
    obj.description = normalize_one_line(obj.description)
    obj.byline = normalize_one_line(obj.byline)
    obj.language = normalize_language(obj.language)
    obj.tags = normalize_tags(obj.tags)


def normalize_slug(value: str) -> str:
    return unicodedata.normalize("NFKC", value).strip().lower()


def cut_to_bytes(value: str, limit: int) -> str:
    """The longest prefix of `value` whose UTF-8 fits in `limit` bytes, in linear time
    (encode once, cut, drop a character split by the cut)."""
    return value.encode("utf-8")[:limit].decode("utf-8", errors="ignore")


def slug_from_title(title: str) -> str:
    """A slug for the title: unicode letters kept (a Chinese title gives a Chinese slug),
    cut to what a file name can hold, never empty or reserved."""
    slug = cut_to_bytes(slugify_keeping_marks(title), SLUG_MAX_BYTES)
    slug = slug.strip("-_") or "article"
    if is_reserved_slug(slug):
        # "admin-1"; but "sitemap-1" is reserved too (a sitemap chunk's name).
        slug = f"{slug}-1" if not is_reserved_slug(f"{slug}-1") else f"article-{slug}"
    return slug


def with_suffix(base: str, n: int) -> str:
    """`base-n`, the base cut so that the whole still fits a file name."""
    suffix = f"-{n}"
    return cut_to_bytes(base, SLUG_MAX_BYTES - len(suffix)) + suffix


def key_of(slug: str, current_key: str = "") -> str:
    """The key save() stores for `slug`. A row that shared its key with an older one
    before keys existed keeps the key the migration gave it (`<key>#<id>`, see
    migrations/0007) while its slug stays the same."""
    key = slug_key(slug) if slug else ""
    if current_key.partition("#")[0] == key:
        return current_key
    return key


class ArticleQuerySet(models.QuerySet["Article"]):
    """Writes that bypass save() keep the slug keys consistent; the database's check
    constraints (Article.Meta) still refuse what they can express."""

    # The `type: ignore`s below: django-stubs' plugin makes a QuerySet["Article"] subclass
    # generic in a type variable bounded by Article (its reparametrize_any_queryset_hook),
    # which this class cannot name, so Django's own methods here take and return that
    # variable, not Article.

    def delete(self):
        """Take the articles' page guards, lock their stories, then the articles, each in
        key order, then delete them with what cascades (their attempts): the order the
        page guards take their locks, the order the story services take a
        story and its article in (the delete's signal moves the story to the trash), and
        a group's completion its article rows (in key order, then their attempts), so a
        bulk delete racing a publish, a withdraw or a trash never deadlocks with it."""
        with transaction.atomic(using=self.db):
            # First, the page guards of them all (every target's `forget` takes its
            # article's, row by row as Django deletes them), in the one order every
            # guard takes its locks: one at a time in the rows' order, they deadlocked
            # with a group's guard that held one and waited for another (a rehearsal
            # of 2026-12-05, PostgreSQL).
            advisory_locks(
                (advisory_key("article", pk) for pk in self.values_list("pk", flat=True)),
                using=self.db,
            )
            lock_stories(self.values("pk"), using=self.db)
            ids = list(self.order_by("pk").select_for_update().values_list("pk", flat=True))
            refresh_tags_of(ids)
            return super().delete()

    def bulk_create(  # type: ignore[override]
        self, objs: Iterable[Article], *args: Any, **kwargs: Any
    ) -> list[Article]:
        """bulk_create never calls save(), so it does not validate: a bad row fails only
        at the database's constraints (IntegrityError). To validate every row, use
        `publishing.services.articles_create_many`."""
        objs = list(objs)
        for obj in objs:
            obj.fill_slug_keys()
        return super().bulk_create(objs, *args, **kwargs)  # type: ignore[arg-type,return-value]

    def bulk_update(
        self, objs: Iterable[Article], fields: Iterable[str], *args: Any, **kwargs: Any
    ) -> int:
        objs, fields = list(objs), list(fields)
        for obj in objs:
            obj.fill_slug_keys()
        for name, key in (("slug", "slug_key"), ("published_slug", "published_slug_key")):
            if name in fields and key not in fields:
                fields.append(key)
        return super().bulk_update(objs, fields, *args, **kwargs)  # type: ignore[arg-type]

    def update(self, **kwargs) -> int:
        for name, key in (("slug", "slug_key"), ("published_slug", "published_slug_key")):
            if isinstance(kwargs.get(name), str) and key not in kwargs:
                kwargs[key] = key_of(kwargs[name])
        return super().update(**kwargs)


def refresh_tags_of(article_ids: list[int]) -> None:
    """The tags of articles about to be deleted: their pages are written again without
    them by the refresher's next pass (TagRefresh), in the delete's transaction, from
    where each was in the tag's listing (its live date)."""
    rows = ArticleTag.objects.filter(article_id__in=article_ids).values_list("tag_id", "publish_at")
    since: dict[int, datetime] = {}
    for tag_id, publish_at in rows:
        since[tag_id] = min(publish_at, since.get(tag_id, publish_at))
    tags_refresh(since, since=since)


def tags_refresh(tag_ids: Iterable[int], *, since: Mapping[int, datetime] | None = None) -> None:
    """Ask the refresher's next pass to write these tags' pages again (TagRefresh).
    `since`: by tag, the oldest live date the change touched (its pages from the one
    holding it are written); a tag without one has every page written (the full check)."""
    since = since or {}
    rows = [(tag_id, since.get(tag_id)) for tag_id in sorted(set(tag_ids))]
    insert_rows(TagRefresh, ("tag_id", "since"), rows)


def lock_stories(ids: Iterable[int] | models.QuerySet, *, using: str | None = None) -> None:
    """Lock the stories of these article ids (those that have one), in key order: a
    delete takes them before the articles, as the story services do (docs/design.md,
    "Drafts")."""
    stories = Story.objects.using(using).filter(pk__in=ids).order_by("pk").select_for_update()
    list(stories.values_list("pk", flat=True))


# For the check constraint: sorted, so the migration is the same on every run.
RESERVED_SLUG_LIST = sorted(RESERVED_SLUGS | {"sitemap"})


def became_work() -> Greatest:
    """When a row's current content became work: its save or requeue (`pending_since`;
    `created_at` on rows older than the field), or its `publish_at` when later. The
    start of its wait (publishing.selectors.oldest_due_pending), as
    publishing.rollup.latency_of starts its latency."""
    return Greatest(Coalesce("pending_since", "created_at"), "publish_at")


def sitemap_chunk_name(field: str) -> Q:
    """`field` is `sitemap-<digits>` (any case): the prefix, something after it, and
    nothing left of that once the ten digits are removed. Plain SQL (LIKE, SUBSTR,
    REPLACE) rather than a regular expression: SQLite's REGEXP is a function Django
    defines per connection, which `manage.py dbshell` would not have, and every
    write to the table would fail there."""
    rest: Func = Substr(field, len(SITEMAP_CHUNK_PREFIX) + 1)
    for digit in "0123456789":
        rest = Replace(rest, Value(digit), Value(""))
    return (
        Q(**{f"{field}__istartswith": SITEMAP_CHUNK_PREFIX})
        & GreaterThan(Length(field), len(SITEMAP_CHUNK_PREFIX))
        & Exact(rest, Value(""))
    )


class Article(models.Model):
    title = models.CharField(
        max_length=TITLE_MAX_LENGTH,
        validators=TITLE_VALIDATORS,
    )
    slug = SlugField(
        max_length=200,
        unique=True,
        blank=True,
        allow_unicode=True,
        validators=SLUG_VALIDATORS,
        help_text=_(
            "The page's address: letters (any script), digits, - and _. "
            "Left blank, it is made from the title."
        ),
    )
    # slug_key(slug): what slugs are compared by (ß = ss, ς = σ), so two articles never
    # share a folder on a case-insensitive file system; set by save() (and bulk_create).
    slug_key = models.CharField(max_length=800, unique=True, editable=False)
    body = models.TextField(
        validators=BODY_VALIDATORS,
        help_text=BODY_HELP,
    )
    status = models.CharField(
        max_length=16, choices=ArticleStatus.choices, default=ArticleStatus.PENDING
    )
    publish_at = models.DateTimeField(
        default=timezone.now,
        validators=[validate_publish_at],
        help_text=_("Not published before this time."),
    )
    # Empty: the excerpt. Language empty: SITE_LANGUAGE (a BCP 47 tag: the page's lang,
    # the feeds'). The byline is the name readers see (the page, the feeds, JSON-LD):
    # words on the page, not a claim on the work; the pipeline keeps no owner
    # (docs/design.md). Tags in the writer's order, each spelling as typed.
    description = description_field()
    language = language_field()
    byline = byline_field()
    tags = tags_field()
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
    # The Celery task id of the publish message the last save that made work sent
    # (written by that save, before the message goes): a group that has published this
    # row besides its own tells the workers to drop that message unrun (publishing.tasks,
    # `publish_discard`). A hint, not a state: a message that is not dropped ends after
    # one claim, and one sent by anything else than a save is never named here.
    message_id = models.CharField(
        max_length=64, blank=True, default="", db_default="", editable=False
    )
    # When its death was alerted: one alert per death, also if the worker died first.
    alerted_at = models.DateTimeField(null=True, blank=True, editable=False)
    # sha256 of title, slug and body as saved; published_hash is the content that is live.
    content_hash = models.CharField(max_length=64, editable=False)
    published_hash = models.CharField(max_length=64, blank=True, default="", editable=False)
    # The live version, as it was published: what the site lists and where its page is.
    # Edits change title/slug/body/publish_at at once; these only when the edit is live.
    published_slug = models.CharField(max_length=200, blank=True, default="", editable=False)
    published_slug_key = models.CharField(
        max_length=800, blank=True, default="", db_index=True, editable=False
    )
    published_title = models.CharField(max_length=200, blank=True, default="", editable=False)
    published_body = models.TextField(blank=True, default="", editable=False)
    published_publish_at = models.DateTimeField(null=True, blank=True, editable=False)
    published_description = models.CharField(
        max_length=DESCRIPTION_MAX_LENGTH, blank=True, default="", db_default="", editable=False
    )
    published_language = models.CharField(
        max_length=LANGUAGE_MAX_LENGTH, blank=True, default="", db_default="", editable=False
    )
    published_byline = models.CharField(
        max_length=BYLINE_MAX_LENGTH, blank=True, default="", db_default="", editable=False
    )
    published_tags = TagsJSONField(default=list, db_default=EMPTY_LIST, blank=True, editable=False)
    # Stable identity for feed entries and webhook receivers; unchanged by edits.
    uid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    published_at = models.DateTimeField(null=True, blank=True)
    # When the current content became work (saved new, edited, requeued): the start of
    # its save-to-published latency. Empty on rows older than the field (created_at then).
    pending_since = models.DateTimeField(
        null=True, blank=True, default=timezone.now, editable=False
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = ArticleQuerySet.as_manager()

    # Not a column: what this save decided, for the post_save receiver that sends the
    # publish after the commit (publishing.signals). save() sets it before writing: a
    # new pending row, or an edit that changed the content, is work; anything else not.
    wants_publish: bool = False
    # The slug was made from the title by clean() (full_clean, the forms, the API): the
    # save then moves it on to a free one, as it does a slug it derives itself.
    _slug_derived: bool = False

    # What deleting this row means to the targets (publishing.signals): "deleted", or
    # "withdrawn" when the writer takes it back to draft (publishing.services.stories).
    deleted_as: str = "deleted"

    class Meta:
        ordering = ["-publish_at", "-id"]
        # The validators' rules that SQL can say, for writes that bypass save()
        # (bulk_create, update(), raw SQL). The validators say more (slug characters,
        # sitemap-<n>) and say it better, so full_clean() skips these (get_constraints).
        constraints = [
            models.CheckConstraint(condition=~Q(title=""), name="article_title_not_blank"),
            # SQLite does not enforce varchar(200).
            models.CheckConstraint(
                condition=LessThanOrEqual(Length("title"), TITLE_MAX_LENGTH),
                name="article_title_max_length",
            ),
            models.CheckConstraint(
                condition=LessThanOrEqual(OctetLength("body"), BODY_MAX_BYTES),
                name="article_body_max_bytes",
            ),
            models.CheckConstraint(
                condition=~Q(slug="") & ~Q(slug_key=""), name="article_slug_not_blank"
            ),
            # One directory name: no "/", no "\\", and no "." at all (so no "..", no
            # dot-file, no index.html or sitemap-9.xml); the validators allow none either.
            models.CheckConstraint(
                condition=~Q(slug__contains="/") & ~Q(slug__contains="\\") & ~Q(slug__contains="."),
                name="article_slug_one_plain_name",
            ),
            models.CheckConstraint(
                condition=~Q(slug__in=RESERVED_SLUG_LIST) & ~Q(slug_key__in=RESERVED_SLUG_LIST),
                name="article_slug_not_reserved",
            ),
            # sitemap-<n>: the sitemap's chunks (issue 19).
            models.CheckConstraint(
                condition=~sitemap_chunk_name("slug") & ~sitemap_chunk_name("slug_key"),
                name="article_slug_not_sitemap_chunk",
            ),
        ]
        indexes = [
            # The catch-up and the backup executor look only at due pending rows; a
            # partial index keeps that cheap however many articles are published.
            models.Index(
                fields=["publish_at", "updated_at"],
                name="article_pending_due_idx",
                condition=Q(status="pending"),
            ),
            # The due row that has waited longest (publishing.selectors.oldest_due_pending,
            # on the dashboard's refresh and each scrape): the first due one in this
            # order, whatever the backlog. Rows still scheduled sort after every due
            # one (their wait starts at publish_at, still ahead).
            models.Index(
                became_work(),
                "id",
                name="article_pending_became_idx",
                condition=Q(status="pending"),
            ),
            # Deaths not yet alerted: the catch-up looks for them at every run.
            models.Index(
                fields=["updated_at"],
                name="article_dead_unalerted_idx",
                condition=Q(status="dead", alerted_at__isnull=True),
            ),
            # The dashboard's dead list (newest first) and its most-retried pending.
            models.Index(
                fields=["-updated_at"],
                name="article_dead_idx",
                condition=Q(status="dead"),
            ),
            models.Index(
                fields=["-attempts", "id"],
                name="article_pending_attempts_idx",
                condition=Q(status="pending"),
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
        """Normalise, refuse invalid content (ValidationError, nothing stored), derive.

        Validation is here, not only in full_clean(), so that every way in holds it:
        the admin, the services, the shell, `objects.create()`. The slug is checked as
        normalised (NFKC), so `ＡＤＭＩＮ` is the reserved `admin`."""
        self._normalize()
        self._validate_content()
        derived_slug, self._slug_derived = not self.slug or self._slug_derived, False
        if not self.slug:
            self.slug = self._unique_slug(slug_from_title(self.title))
        self.fill_slug_keys()
        with transaction.atomic():
            # An edit locks its row first, then the address: the one order every writer
            # of an article takes them in (a story's publish, "Publish now" and the API's
            # PATCH lock the row before they save; in the other order each deadlocked
            # with an Article form's save of the same article: docs/design.md).
            before = "" if self._state.adding else self._lock_row()
            # A draft saved at this address meanwhile is checked in another table: the
            # address's lock makes the two saves take turns (work.db).
            address_lock(self.slug_key)
            if derived_slug:
                self._free_derived_slug()
            else:
                self._check_slug_free()
            self.content_hash = self._content_hash()
            # The id of the message this save sends if it makes work, stored with the
            # content it is for (message_id above); a new one for every save.
            self.message_id = new_message_id()
            if self._state.adding:
                # Read by the post_save receiver, which runs inside super().save().
                self.wants_publish = self.status == ArticleStatus.PENDING
                self._save_new(derived_slug, *args, **kwargs)
                return
            self._save_edit(before)

    def get_absolute_url(self) -> str:
        return f"/{self.slug}/"

    def delete(self, *args, **kwargs):
        """The article's story's row, then its own, locked before its attempts go (the
        cascade), as a bulk delete does it (ArticleQuerySet.delete): a publish, withdraw
        or trash racing it never deadlocks."""
        with transaction.atomic():
            lock_stories([self.pk])
            # The row as it is now, locked: the delete's signal tells the site where
            # the article is live and listed from this copy, and a copy read before its
            # publish completed (the API's, a form's) would say "nowhere", leaving its
            # neighbours' links and the archive to the full check (a review's finding).
            try:
                self.refresh_from_db(from_queryset=Article.objects.select_for_update())
            except Article.DoesNotExist:  # deleted meanwhile: nothing left to delete
                return 0, {}
            refresh_tags_of([self.pk])
            return super().delete(*args, **kwargs)

    @property
    def is_scheduled(self) -> bool:
        return self.status == ArticleStatus.PENDING and self.publish_at > timezone.now()

    # --- validation -----------------------------------------------------------------

    def _normalize(self) -> None:
        self.title = (self.title or "").strip()
        self.slug = normalize_slug(self.slug or "")
        self.body = normalize_body(self.body or "")
        normalize_reader_fields(self)
        if self.publish_at:  # whole seconds: what the admin's date and time fields keep
            self.publish_at = self.publish_at.replace(microsecond=0)
            if timezone.is_aware(self.publish_at):
                # UTC, as stored: PostgreSQL refuses offsets past ±15:59 (+23:00 is valid
                # ISO 8601), and every way in (admin, API, import) then agrees. A time
                # with no UTC equivalent (year 10000 there) is left for the validator.
                with contextlib.suppress(OverflowError):
                    self.publish_at = self.publish_at.astimezone(UTC)

    def _content_hash(self) -> str:
        return content_hash_of(**{name: getattr(self, name) for name in CONTENT_FIELDS})

    def clean_fields(self, exclude=None) -> None:
        written = bool(self.body)
        self._normalize()
        errors: dict = {}
        try:
            super().clean_fields(exclude=exclude)
        except ValidationError as exc:
            errors = exc.error_dict
        if written and not self.body and "body" not in (exclude or ()):
            # Not Django's "cannot be blank", which would puzzle whoever sent some.
            errors["body"] = [
                ValidationError(
                    _("The body has only blank lines and spaces: write some text."),
                    code="blank_text",
                )
            ]
        if errors:
            raise ValidationError(errors)

    def clean(self) -> None:
        if not self.slug:
            # An over-long title has its own error; no slug is made of 200,000 characters.
            if self.title and len(self.title) <= TITLE_MAX_LENGTH:
                self.slug = self._unique_slug(slug_from_title(self.title))
                self._slug_derived = True
        else:
            self._check_slug_free()
        if self.body and (problem := amplification_problem(self.body)):
            raise ValidationError({"body": f"The Markdown is too large to render: {problem}."})

    def validate_unique(self, exclude=None) -> None:
        # save() sets slug_key; clean() has compared it already, with a clearer message.
        super().validate_unique(exclude={*(exclude or ()), "slug_key"})

    def get_constraints(self):
        # Meta.constraints restate the field validators for writes that bypass them;
        # full_clean() has run the validators, so checking these would only cost a
        # query each (Django runs one per check constraint).
        return [
            (model, [c for c in constraints if not isinstance(c, models.CheckConstraint)])
            for model, constraints in super().get_constraints()
        ]

    def _validate_content(self) -> None:
        """full_clean() of the content, without the queries: the field validators (and
        the title's length, before a slug is made of it)."""
        exclude = [f.name for f in self._meta.fields if f.name not in CONTENT_FIELDS]
        self.clean_fields(exclude=exclude)

    def fill_slug_keys(self) -> None:
        self.slug_key = key_of(self.slug, self.slug_key or "")
        self.published_slug_key = key_of(self.published_slug or "")

    def _check_slug_free(self) -> None:
        """No other article or story has this slug up to case (its key), or has its live
        page there: until an article's edit is live, its old page still serves its last
        version, so that address is not free yet either. A story of another id keeps
        its slug while it is a draft, withdrawn or in the trash. Two queries."""
        key = key_of(self.slug, self.slug_key or "")
        if "#" in key:  # kept from before keys: see key_of()
            return
        if "\x00" in key or any("\ud800" <= ch <= "\udfff" for ch in key):
            return  # the slug's validators name it; PostgreSQL takes neither in a query
        others = Article.objects.exclude(pk=self.pk).filter(
            Q(slug_key=key) | Q(published_slug_key=key)
        )
        keys = set(others.values_list("slug_key", flat=True)[:2])
        if key in keys or Story.objects.exclude(pk=self.pk).filter(slug_key=key).exists():
            raise ValidationError(
                {
                    "slug": _(
                        "An article with this slug already exists (slugs are compared "
                        "ignoring case and width: ß = ss, ς = σ); choose another."
                    )
                },
                code="unique",
            )
        if keys:
            raise ValidationError(
                {"slug": _("Another article's live page is at this address; choose another.")}
            )

    def _free_derived_slug(self) -> None:
        """Under the address's lock: a derived slug that a draft (or an article) took
        since it was derived moves on to the next free one, under that one's lock (a
        review's finding: a writer who gave no slug was refused over the one made)."""
        for _try in range(5):
            try:
                self._check_slug_free()
                return
            except ValidationError:
                self.slug = self._unique_slug(slug_from_title(self.title))
                self.fill_slug_keys()
                address_lock(self.slug_key)
        raise ValidationError({"slug": _("Could not find a free slug; please choose one.")})

    def _unique_slug(self, base: str, *, also_taken: Iterable[str] = ()) -> str:
        """`base`, or `base-2`, `base-3`, …: the first whose key no other article has as
        its slug or live page, nor any story of another id (nor is in `also_taken`). Two
        queries, whatever the count."""
        base = cut_to_bytes(base, SLUG_MAX_BYTES)
        # Every candidate's key starts with this: the base's, or when the base is cut to
        # make room for a suffix (of up to 11 bytes), the cut one's, a few characters
        # shorter since NFKC may join characters across the cut.
        stem = cut_to_bytes(base, SLUG_MAX_BYTES - 12)
        prefix = slug_key(base) if stem == base else slug_key(stem)[:-2]
        rows = (
            Article.objects.exclude(pk=self.pk)
            .filter(Q(slug_key__startswith=prefix) | Q(published_slug_key__startswith=prefix))
            .values_list("slug_key", "published_slug_key")
        )
        # A draft's, a withdrawn story's or a trashed story's slug is reserved too.
        stories = Story.objects.exclude(pk=self.pk).filter(slug_key__startswith=prefix)
        taken = {key for row in rows for key in row} | set(also_taken)
        taken |= set(stories.values_list("slug_key", flat=True))
        slug, n = base, 1
        while slug_key(slug) in taken or is_reserved_slug(slug):  # ≤ len(taken) + 2 rounds
            n += 1
            slug = with_suffix(base, n)
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
                others = Article.objects.exclude(pk=self.pk)
                if not others.filter(slug_key=self.slug_key).exists():
                    raise
                self.slug = self._unique_slug(f"{self.slug}-{uuid.uuid4().hex[:4]}")
                self.fill_slug_keys()
                self.content_hash = self._content_hash()
        raise ValidationError({"slug": _("Could not find a free slug; please choose one.")})

    def _lock_row(self) -> str:
        """Lock this article's row for the save's transaction: its stored content hash."""
        rows = Article.objects.filter(pk=self.pk).select_for_update()
        return rows.values_list("content_hash", flat=True).get()

    @classmethod
    def hash_as_saved_now(cls, values: dict) -> str:
        """The content hash of a row's content fields (`values`) normalised as a save
        would store them now: a row stored before a newer rule hashes as its content
        saved today."""
        as_saved = cls(**{name: values[name] for name in CONTENT_FIELDS})
        as_saved._normalize()
        return as_saved._content_hash()

    def _save_edit(self, before: str) -> None:
        """Save what a writer edits; never the pipeline's fields. `before`: the content
        hash stored, read under the row's lock (`_lock_row`).

        A form holds a copy of the row from when it was opened; writing that copy's
        status, attempts or lease would undo a worker's claim or outcome. So only the
        content is written, and the state follows from it by conditional UPDATEs.
        """
        rows = Article.objects.filter(pk=self.pk)
        with transaction.atomic():
            # Decided before super().save(), whose post_save receiver reads it.
            self.wants_publish = changed = before != self.content_hash
            fields = [*CONTENT_FIELDS, "slug_key", "content_hash", "updated_at"]
            super().save(update_fields=[*fields, "message_id"] if changed else fields)
            if changed:
                # New content is new work, with a fresh budget of attempts, to try now
                # rather than after the last failure's backoff. An attempt in flight keeps
                # its lease: its content no longer matches, so it cannot complete, and the
                # new content goes as soon as it lets go.
                rows.filter(status__in=[ArticleStatus.PUBLISHED, ArticleStatus.DEAD]).update(
                    **FRESH_PENDING
                )
                rows.filter(status=ArticleStatus.PENDING).update(**EDITED_WHILE_PENDING)
            self.refresh_from_db(
                fields=["status", "attempts", "last_error", "next_attempt_at", "lease_expires_at"]
            )


class TagKind(models.TextChoices):
    # One of an article's tags: its page is tag/<slug>/.
    TAG = "tag", _("Tag")
    # An article's byline: its page is author/<slug>/.
    AUTHOR = "author", _("Author")


class Tag(models.Model):
    """A tag, or a byline, some live article carries: one row per tag (per byline),
    whatever its spelling ("Python" and "python" are one tag: `key`,
    reader_fields.tag_key). `name` is the spelling of its newest live article, as its
    pages show it (blogpublish.site.build.shown_name; set by the pass that writes them),
    the first spelling that went live until then."""

    kind = models.CharField(max_length=8, choices=TagKind.choices, default=TagKind.TAG)
    name = models.CharField(max_length=max(TAG_MAX_LENGTH, BYLINE_MAX_LENGTH))
    key = models.CharField(max_length=TAG_KEY_MAX_LENGTH)
    # Its page's folder, tag/<slug>/ or author/<slug>/ (reader_fields.tag_slug).
    slug = models.CharField(max_length=TAG_KEY_MAX_LENGTH + 9)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["kind", "key"], name="tag_kind_key")]

    def __str__(self) -> str:
        return self.name


class ArticleTag(models.Model):
    """A live article's tag: the index a tag's page reads (the articles of a tag, newest
    first, by `tag_listed_idx`, as the front page reads `article_listed_idx`). Written
    with the live version, in the completion's transaction (services.publish), from
    `published_tags`, so a row is that of a listed article: a delete (and a withdraw,
    which deletes the article's row: services.stories) takes them with it, and the
    related articles read the index alone (docs/site.md, "Related articles"). A tag
    page still lists only articles listed (published_hash set).
    Why a table and not the JSON list alone: docs/site.md, "Tags"."""

    # No index of their own (db_index=False): `articletag_once` begins with the article
    # and `tag_listed_idx` with the tag, so each serves the lookups (and the cascades)
    # by one; two more indexes were two more entries for every row a completion writes.
    # The tag has no constraint in the database (db_constraint=False; the cascade is
    # Django's): its check locked each tag's row (FOR KEY SHARE) at every completion's
    # commit, so two completions sharing popular tags shared those locks (multixacts).
    # Tags are never deleted but through the ORM, and the readers join the tag
    # (docs/performance.md, "Tags in use").
    article = models.ForeignKey(
        Article, on_delete=models.CASCADE, related_name="live_tags", db_index=False
    )
    tag = models.ForeignKey(
        Tag, on_delete=models.CASCADE, related_name="articles", db_index=False, db_constraint=False
    )
    # The article's live date, copied so the tag's page is one index range.
    publish_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["article", "tag"], name="articletag_once"),
        ]
        indexes = [
            models.Index(fields=["tag", "publish_at", "article"], name="tag_listed_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.article_id} #{self.tag_id}"


class FormerAddress(models.Model):
    """A slug a live article was published under before its current one: its folder
    holds a page that sends readers on to the article's live page, as WordPress sends
    an old slug on (docs/site.md, "Former addresses"). Recorded by the completion that
    moved the article (services.publish), in its transaction. Not a claim on the slug:
    an article that takes it has its page there, and the page that sends readers on
    comes back when that article leaves it. A slug that several articles left has a row
    for each: it sends readers to the listed one that left it last (`left_at`).

    A delete (and a withdraw) leaves the rows to the refresh pass that settles it: the
    delete's note names their folders (the site's `forget` runs after the row is gone,
    in post_delete), and the pass removes the folders and the rows (build.settle); the
    full check removes any row whose article is gone. Hence no constraint and no
    cascade in the database or in Django."""

    slug = models.CharField(max_length=200, db_index=True)
    article = models.ForeignKey(
        Article,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        db_index=False,  # formeraddress_once begins with it
        related_name="former_addresses",
    )
    left_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["article", "slug"], name="formeraddress_once"),
        ]

    def __str__(self) -> str:
        return f"{self.slug} → {self.article_id}"


class TagRefresh(models.Model):
    """A tag whose page and feed are to be written again: inserted (never updated, so a
    popular tag is no lock two completions wait on) with the live tags' change that
    makes it (a completion, a delete), taken by the refresher's next pass, which
    deletes the rows it read (blogpublish.site.build.write_tag_pages)."""

    # No constraint in the database, as ArticleTag.tag (a request for a tag gone is
    # dropped by the pass that reads it: selectors.tag_refresh_requests).
    tag = models.ForeignKey(Tag, on_delete=models.CASCADE, related_name="+", db_constraint=False)
    # The oldest live date the change touched in the tag's listing (an article's old or
    # new date): the tag's archive pages from the one holding it are written again.
    # Null: every page (the full check's requests, and those of a release before it).
    since = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"refresh tag {self.tag_id}"


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
    # A request made since the last pass began wants the next within the ordinary
    # interval (an outcome, a delete), not only a backlog's (refresh._next_interval).
    wanted_soon = models.BooleanField(default=False, db_default=False)
    # When the catch-up last ran the full check (reconcile) rather than a refresh.
    reconciled_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"refresher: {self.passes} pass(es), last {self.last_pass_at or 'never'}"


class MetricsBucket(models.Model):
    """The metrics rollup (publishing.rollup): counts and sums of finished attempts per
    minute, kept in the database so that /metrics counts every host's work and the
    dashboard's charts read a few thousand rows, not millions of attempts. Rows are
    incremented by an UPSERT in the transaction that records the attempt's outcome;
    the catch-up folds old minutes into hours and old hours into the running total."""

    # "m" a minute, "h" an hour, "t" everything before (start is then the epoch).
    span = models.CharField(max_length=1)
    start = models.DateTimeField()
    # "attempts" (label: the outcome), "duration" or "latency" (label: the histogram
    # bucket's upper bound the observations fell in, not cumulative).
    metric = models.CharField(max_length=16)
    label = models.CharField(max_length=16)
    # Spreads concurrent increments of one minute over a few rows (less lock waiting).
    shard = models.PositiveSmallIntegerField(default=0)
    n = models.PositiveBigIntegerField(default=0)
    total = models.FloatField(default=0.0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["span", "start", "metric", "label", "shard"], name="metricsbucket_key"
            )
        ]

    def __str__(self) -> str:
        return f"{self.span} {self.start:%Y-%m-%d %H:%M} {self.metric} {self.label}: {self.n}"


class CatchUpRun(models.Model):
    """The last run of the catch-up (one row): when, where, and what it did."""

    ran_at = models.DateTimeField()
    host = models.CharField(max_length=255, blank=True, default="")
    report = models.JSONField(default=dict)

    def __str__(self) -> str:
        return f"catch-up at {self.ran_at:%Y-%m-%d %H:%M:%S} on {self.host}"


class ArticleCount(models.Model):
    """How many articles are in each status, kept by triggers in the database (migration
    0010_metrics_rollup) on every insert, delete and change of status, whichever way the
    row is written (save, update(), bulk_create, raw SQL): /metrics, /status.json and the
    dashboard read a few rows here instead of counting a million articles. On PostgreSQL
    concurrent writers spread over shards (one per backend pid modulo 8, so a shard may
    go negative); the count of a status is the sum over its shards."""

    status = models.CharField(max_length=16)
    shard = models.SmallIntegerField(default=0)
    n = models.BigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["status", "shard"], name="articlecount_key")]

    def __str__(self) -> str:
        return f"{self.status}[{self.shard}]: {self.n}"


class DeliveryStatus(models.TextChoices):
    # To be delivered (or being delivered, while its lease holds), or backing off.
    PENDING = "pending", _("Pending")
    # The receiver answered 2xx.
    DELIVERED = "delivered", _("Delivered")
    # Given up on after PUBLISH_WEBHOOK_MAX_ATTEMPTS tries or a refusal (a 4xx); an
    # operator requeues it once the receiver is fixed. The article is not affected.
    DEAD = "dead", _("Dead")


class WebhookDelivery(models.Model):
    """One webhook event of one article, to be POSTed to PUBLISH_WEBHOOK_URL: the outbox
    (docs/design.md, "Webhook deliveries"). The publish attempt only inserts it; a
    delivery task claims it on the one fenced lease (work.lease), POSTs the body kept
    here, and marks it delivered, or backs off, or dead. Its outcome never changes the
    article's status.

    `article_id` is a plain number, not a foreign key: the delete event outlives its
    article. `key` (the Idempotency-Key) is unique, so the same publish and
    event never makes two rows, however often an attempt is retried. Deliveries of one
    article go in id order: one waits while an earlier one of the same article is
    pending (`services.deliveries`)."""

    article_id = models.BigIntegerField()
    event = models.CharField(max_length=32)
    key = models.CharField(max_length=64, unique=True)
    # The JSON body exactly as it is POSTed at every try (text, not JSON: PostgreSQL's
    # jsonb would reorder its keys).
    body = models.TextField()
    status = models.CharField(
        max_length=16, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING
    )
    # Tries of the current round, the budget (reset by a requeue).
    attempts = models.PositiveIntegerField(default=0)
    # Claims ever made: the value read after a claim is the fencing token.
    claims = models.PositiveBigIntegerField(default=0, editable=False)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")
    # When a message for it was last sent (the catch-up re-sends stale ones).
    dispatched_at = models.DateTimeField(null=True, blank=True, editable=False)
    # Set when its death was alerted: one alert per death.
    alerted_at = models.DateTimeField(null=True, blank=True, editable=False)
    delivered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "webhook delivery"
        verbose_name_plural = "webhook deliveries"
        ordering = ["-id"]
        indexes = [
            # The order per article, and "is an earlier one pending?".
            models.Index(fields=["article_id", "status", "id"], name="delivery_article_idx"),
            # The catch-up's stale pending ones, the dashboard's dead ones.
            models.Index(fields=["status", "updated_at"], name="delivery_status_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.event} of article {self.article_id} ({self.status})"


# --- the writer's workspace: stories, their revisions, the trash (issue 22) ------------


class StoryState(models.TextChoices):
    # The writer's work, on no page: never published, or withdrawn.
    DRAFT = "draft", _("Draft")
    # Published: its Article (the same id) is what the pipeline publishes.
    PUBLISHED = "published", _("Published")


class Story(models.Model):
    """The writer's copy of an article: the draft text, which no reader sees until
    "Publish" copies it to the `Article` of the same id (made then, or updated). The
    id comes from the Article table's own sequence (publishing.services.stories), so a
    story and its Article share one id and an article written in the Article form never
    takes a draft's. The slug stays reserved for the story while it is a draft,
    withdrawn or in the trash: no other article or story may take it."""

    id = models.BigIntegerField(primary_key=True)
    title = models.CharField(
        max_length=TITLE_MAX_LENGTH,
        validators=TITLE_VALIDATORS,
    )
    slug = SlugField(
        max_length=200,
        blank=True,
        allow_unicode=True,
        validators=SLUG_VALIDATORS,
        help_text=_("The page's address. Left blank, it is made from the title."),
    )
    slug_key = models.CharField(max_length=800, unique=True, editable=False)
    body = models.TextField(
        blank=True,
        validators=BODY_VALIDATORS,
        help_text=BODY_HELP,
    )
    # Empty: the date of the story's first publish (publishing.services.stories).
    publish_at = models.DateTimeField(
        null=True,
        blank=True,
        validators=[validate_publish_at],
        help_text=_("Empty: when first published, and kept when published again."),
    )
    description = description_field()
    language = language_field()
    byline = byline_field()
    tags = tags_field()
    state = models.CharField(max_length=16, choices=StoryState.choices, default=StoryState.DRAFT)
    # The date its first publish gave its article (the draft's, or then): an undated
    # draft publishes again with it, after a withdraw or the trash too, so it keeps its
    # place on the front page, the archive and the feeds. Empty: never published.
    first_publish_at = models.DateTimeField(null=True, blank=True, editable=False)
    # Saves of the draft: what a save names as the version it edited (If-Match), so
    # two tabs on one draft are told of each other instead of overwriting silently.
    version = models.PositiveIntegerField(default=0, editable=False)
    # The version last published: a draft with a higher one has unpublished changes.
    published_version = models.PositiveIntegerField(default=0, editable=False)
    # In the trash since then (a delete); purged after STORY_TRASH_DAYS.
    trashed_at = models.DateTimeField(null=True, blank=True, editable=False)
    # The shared preview (/preview/<token>/): the token signs the id and this key, so a
    # new key or none revokes every link given out; it works until preview_expires_at.
    preview_key = models.CharField(max_length=32, blank=True, default="", editable=False)
    preview_expires_at = models.DateTimeField(null=True, blank=True, editable=False)
    # The publish attempts of the article it was, kept when it is withdrawn (its Article
    # row and the attempts' rows go): [{number, started_at, finished_at, outcome, error,
    # worker}], oldest first, at most PUBLISH_LOG_KEPT.
    # (A database default too: the previous release's code, which knows no such column,
    # still inserts stories during a rolling deploy; docs/operations.md.)
    publish_log = models.JSONField(default=list, db_default=EMPTY_LIST, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at", "-id"]
        verbose_name_plural = "stories"

    def __str__(self) -> str:
        return self.title

    def _normalize(self) -> None:
        self.title = (self.title or "").strip()
        self.slug = normalize_slug(self.slug or "")
        self.body = normalize_body(self.body or "")
        normalize_reader_fields(self)
        if self.publish_at:
            self.publish_at = self.publish_at.replace(microsecond=0)

    def clean_fields(self, exclude=None) -> None:
        # Normalised before the field validators, as Article.clean_fields: the story
        # form's full_clean() ran them on the text as typed, and refused a byline with
        # a tab ("Jane\tDoe") that the save made "Jane Doe" (a review's finding).
        self._normalize()
        super().clean_fields(exclude=exclude)

    def clean(self) -> None:
        self._normalize()  # for a caller of clean() alone (story_save)
        if self.body and (problem := amplification_problem(self.body)):
            raise ValidationError({"body": f"The Markdown is too large to render: {problem}."})

    @property
    def has_unpublished_changes(self) -> bool:
        return self.version > self.published_version


class Revision(models.Model):
    """One saved version of a story, with who saved it and when: the history a writer
    diffs and restores. Kept for STORY_REVISIONS_KEEP_DAYS (the newest
    STORY_REVISIONS_KEEP_COUNT always), pruned by the catch-up."""

    story = models.ForeignKey(Story, on_delete=models.CASCADE, related_name="revisions")
    # The story's version this revision is.
    number = models.PositiveIntegerField()
    title = models.CharField(max_length=TITLE_MAX_LENGTH)
    slug = models.CharField(max_length=200)
    body = models.TextField(blank=True)
    publish_at = models.DateTimeField(null=True, blank=True)
    description = models.CharField(
        max_length=DESCRIPTION_MAX_LENGTH, blank=True, default="", db_default=""
    )
    language = models.CharField(
        max_length=LANGUAGE_MAX_LENGTH, blank=True, default="", db_default=""
    )
    byline = models.CharField(max_length=BYLINE_MAX_LENGTH, blank=True, default="", db_default="")
    tags = TagsJSONField(default=list, db_default=EMPTY_LIST, blank=True)
    # The user's name, not a key: a revision outlives the account that saved it.
    saved_by = models.CharField(max_length=150, blank=True, default="")
    saved_at = models.DateTimeField(default=timezone.now)
    # What made it: a save, a restore, a publish of changes made in the Article form…
    note = models.CharField(max_length=200, blank=True, default="")

    class Meta:
        ordering = ["-number"]
        constraints = [
            models.UniqueConstraint(fields=["story", "number"], name="revision_story_number")
        ]

    def __str__(self) -> str:
        return f"{self.story_id} v{self.number}"
