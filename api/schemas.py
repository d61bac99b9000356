"""What the API reads and writes, as pydantic models: django-ninja builds the OpenAPI
schema at /api/schema from these.

Only the *shape* is checked here (which fields, of which JSON type). The content rules
(title length, slug characters, reserved slugs, body size, Markdown limits, a free slug)
are the admin's: `publishing.services.article_create`/`article_update` run
`full_clean()` and their messages come back in a 400. The schema states the limits in
each field's description; it does not restate them as `maxLength` or `pattern`, because
the model normalises first (a title is stripped, a slug NFKC-normalised and lowercased),
and a schema constraint checked before normalising would refuse what the admin accepts.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from enum import StrEnum

from ninja import Field, Schema
from pydantic import ConfigDict
from pydantic.config import JsonDict

from blogpublish.site.paths import article_url
from publishing.models import READER_FIELDS, TITLE_MAX_LENGTH, Article, ArticleStatus
from publishing.validators import PUBLISH_AT_MAX_YEAR, PUBLISH_AT_MIN_YEAR, SLUG_MAX_BYTES

TITLE_HELP = (
    f"One line, 1 to {TITLE_MAX_LENGTH} characters after surrounding spaces are removed; "
    "no control characters and no bidirectional overrides or isolates (U+202A-U+202E, "
    "U+2066-U+2069)."
)
SLUG_HELP = (
    "The page's address: letters of any script, digits, `-` and `_`, at most "
    f"{SLUG_MAX_BYTES} bytes of UTF-8; stored NFKC-normalised and lowercased. Unique "
    "ignoring case and width; names the site uses itself (admin, api, feed, sitemap, "
    "…) are refused. Empty or left out: made from the title."
)
BODY_HELP = (
    "Markdown, 1 byte to 1 MiB of UTF-8, kept as written (CRLF stored as LF). Markdown the "
    "renderer could not read in bounded time is refused (docs/site.md, 'Rendering')."
)
PUBLISH_AT_HELP = (
    "Not published before this time: RFC 3339 with a zone (`2026-12-01T09:30:00Z`, "
    f"`…+01:00`), in the years {PUBLISH_AT_MIN_YEAR} to {PUBLISH_AT_MAX_YEAR} (UTC); kept "
    "to whole seconds. Left out on create: now."
)

DESCRIPTION_HELP = (
    "What search results, link cards and feed summaries show: one line (whitespace runs "
    "become one space), at most 1,000 characters. Empty: the article's first lines."
)
LANGUAGE_HELP = (
    "A BCP 47 language tag (`en`, `pt-BR`, `zh-Hans`; `en_US` is stored as `en-US`). "
    "Empty: the site's language (SITE_LANGUAGE)."
)
BYLINE_HELP = (
    "The author's name as readers see it (the page, the feeds, JSON-LD), one line, at "
    "most 200 characters. Words on the page, not an owner of the work."
)
TAGS_HELP = (
    "At most 50 tags of 1-100 characters, one line each; the first spelling of each is "
    "kept (tags are compared ignoring case and width), in the order given."
)

# Stated in the schema only (pydantic does not check them): the model's validation
# does, with the admin's messages, together with every other field's.
NOT_EMPTY: JsonDict = {"minLength": 1}
DATE_TIME: JsonDict = {"format": "date-time"}

# RFC 3339 `date-time` (what the schema's `format: date-time` means): a zone is required.
RFC3339 = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})", re.ASCII
)


def parse_publish_at(value: str) -> datetime:
    """An RFC 3339 date-time, in UTC; ValueError naming what is wrong."""
    if not RFC3339.fullmatch(value):
        raise ValueError(
            "Give a date and time in RFC 3339 with its zone, e.g. 2026-12-01T09:30:00Z."
        )
    try:
        parsed = datetime.fromisoformat(value.upper().replace("Z", "+00:00"))
    except ValueError as exc:
        raise ValueError(f"Not a valid date and time: {exc}.") from None
    try:
        # In UTC: PostgreSQL stores offsets up to ±15:59 only, RFC 3339 allows ±23:59.
        return parsed.astimezone(UTC)
    except OverflowError:
        raise ValueError("The date is out of range.") from None


class StatusFilter(StrEnum):
    pending = ArticleStatus.PENDING.value
    published = ArticleStatus.PUBLISHED.value
    dead = ArticleStatus.DEAD.value


class CreateStatus(StrEnum):
    draft = "draft"
    pending = ArticleStatus.PENDING.value


class ArticleCreateIn(Schema):
    model_config = ConfigDict(extra="forbid")

    status: CreateStatus = Field(
        CreateStatus.pending,
        description=(
            "`pending` (the default): published as soon as a worker takes it. `draft`: "
            "kept unpublished until `POST /api/articles/<id>/publish`; the body may be "
            "empty, the date left out means when first published (and kept then)."
        ),
    )
    title: str = Field(..., json_schema_extra=NOT_EMPTY, description=TITLE_HELP)
    body: str = Field(..., json_schema_extra=NOT_EMPTY, description=BODY_HELP)
    slug: str = Field("", description=SLUG_HELP)
    # `str = Field(None)`, here and below: left out is None (pydantic does not check a
    # default), but a value given must be a string; `str | None` would take a null too.
    publish_at: str = Field(None, json_schema_extra=DATE_TIME, description=PUBLISH_AT_HELP)  # type: ignore[assignment]
    description: str = Field("", description=DESCRIPTION_HELP)
    language: str = Field("", description=LANGUAGE_HELP)
    byline: str = Field("", description=BYLINE_HELP)
    tags: list[str] = Field(default_factory=list, description=TAGS_HELP)


class ArticlePatchIn(Schema):
    """Only the fields given change; the others stay as they are."""

    model_config = ConfigDict(extra="forbid")

    # Left out: None, unchanged; null is refused (see ArticleCreateIn.publish_at).
    title: str = Field(None, json_schema_extra=NOT_EMPTY, description=TITLE_HELP)  # type: ignore[assignment]
    body: str = Field(None, json_schema_extra=NOT_EMPTY, description=BODY_HELP)  # type: ignore[assignment]
    slug: str = Field(None, description=SLUG_HELP)  # type: ignore[assignment]
    publish_at: str = Field(None, json_schema_extra=DATE_TIME, description=PUBLISH_AT_HELP)  # type: ignore[assignment]
    description: str = Field(None, description=DESCRIPTION_HELP)  # type: ignore[assignment]
    language: str = Field(None, description=LANGUAGE_HELP)  # type: ignore[assignment]
    byline: str = Field(None, description=BYLINE_HELP)  # type: ignore[assignment]
    tags: list[str] = Field(None, description=TAGS_HELP)  # type: ignore[arg-type]  # left out: None


class ReaderFieldsOut(Schema):
    description: str
    language: str
    byline: str
    tags: list[str]


class ArticleSummaryOut(ReaderFieldsOut):
    """An article in a list: every field but the body (docs/api.md)."""

    id: int
    slug: str
    title: str
    status: StatusFilter = Field(..., description="pending (work to do), published, or dead")
    scheduled: bool = Field(..., description="Pending and not due yet (publish_at is ahead).")
    publish_at: datetime
    published_at: datetime | None = Field(..., description="When it was last made live.")
    attempts: int = Field(
        ..., description="Attempts at the current content (reset by an edit or a requeue)."
    )
    last_error: str = Field(..., description="The last failed attempt's error; empty when none.")
    next_attempt_at: datetime | None = Field(..., description="When a failed attempt is retried.")
    url: str = Field(..., description="The article's page (live once published).")
    created_at: datetime
    updated_at: datetime


class ArticleOut(ArticleSummaryOut):
    body: str


class DraftSummaryOut(ReaderFieldsOut):
    """A story's draft (docs/design.md, "Drafts"): on no page until published."""

    id: int = Field(..., description="The story's id, which its article takes when published.")
    slug: str
    title: str
    status: CreateStatus = Field(..., description="draft")
    publish_at: datetime | None = Field(..., description="Empty: when first published (kept then).")
    version: int = Field(..., description="Saves of the draft (for PATCH's If-Match).")
    url: str = Field(..., description="Where its page will be.")
    created_at: datetime
    updated_at: datetime


class DraftOut(DraftSummaryOut):
    body: str


class ArticlePage(Schema):
    count: int = Field(..., description="Articles that match, on all pages.")
    page: int
    page_size: int
    items: list[ArticleSummaryOut]


class TagOut(Schema):
    name: str = Field(..., description="The tag as first spelled on a live article.")
    articles: int = Field(..., description="Listed articles that carry it.")


class DraftPage(Schema):
    count: int = Field(..., description="Drafts, on all pages.")
    page: int
    page_size: int
    items: list[DraftSummaryOut]


class DeliveryOut(Schema):
    """A webhook delivery (docs/design.md, "Webhook deliveries")."""

    id: int
    article_id: int
    event: str
    status: str = Field(..., description="pending, delivered or dead.")
    attempts: int
    last_error: str
    next_attempt_at: datetime | None
    delivered_at: datetime | None
    created_at: datetime
    updated_at: datetime


class ErrorOut(Schema):
    detail: str = Field(..., description="What went wrong, in a sentence.")
    errors: dict[str, list[str]] = Field(
        default_factory=dict,
        description="For a 400: each field (or `__all__`) and its problems.",
    )


def _utc(value: datetime | None) -> datetime | None:
    return value.astimezone(UTC) if value is not None else None


def article_out(article: Article, *, with_body: bool = True) -> dict:
    data = {
        "id": article.pk,
        "slug": article.slug,
        "title": article.title,
        "status": article.status,
        "scheduled": article.is_scheduled,
        "publish_at": _utc(article.publish_at),
        "published_at": _utc(article.published_at),
        "attempts": article.attempts,
        "last_error": article.last_error,
        "next_attempt_at": _utc(article.next_attempt_at),
        "url": article_url(article.slug),
        "created_at": _utc(article.created_at),
        "updated_at": _utc(article.updated_at),
        **reader_out(article),
    }
    if with_body:
        data["body"] = article.body
    return data


def delivery_out(delivery) -> dict:
    return {
        "id": delivery.pk,
        "article_id": delivery.article_id,
        "event": delivery.event,
        "status": delivery.status,
        "attempts": delivery.attempts,
        "last_error": delivery.last_error,
        "next_attempt_at": _utc(delivery.next_attempt_at),
        "delivered_at": _utc(delivery.delivered_at),
        "created_at": _utc(delivery.created_at),
        "updated_at": _utc(delivery.updated_at),
    }


def draft_out(story, *, with_body: bool = True) -> dict:
    out = {
        "id": story.pk,
        "slug": story.slug,
        "title": story.title,
        "status": CreateStatus.draft,
        "publish_at": _utc(story.publish_at),
        "version": story.version,
        "url": article_url(story.slug),
        "created_at": _utc(story.created_at),
        "updated_at": _utc(story.updated_at),
        **reader_out(story),
    }
    if with_body:
        out["body"] = story.body
    return out


def reader_out(obj) -> dict:
    return {name: getattr(obj, name) for name in READER_FIELDS}
