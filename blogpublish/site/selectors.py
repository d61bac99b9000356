"""What the site reads from the database.

The site lists every article with a live version: published at least once and not
deleted (`published_hash != ""`), whatever its status now. An article whose edit is
pending stays listed meanwhile, and one that died after an edit keeps its last page.
What it shows of each is the live version as it was published (`published_title`,
`published_body`, `published_publish_at`, `published_slug`), never an edit that is not
live yet. The order is `(published_publish_at, id)`, newest first; `article_listed_idx`
serves it, so the newest 50 and a page near either end cost the same on a site of any
size.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q, QuerySet
from django.db.models.functions import Substr

from publishing.models import Article, ArticleStatus, ArticleTag, Tag, TagRefresh

# Enough of the body for an excerpt, without reading a 1 MiB body to show 240 characters.
EXCERPT_SOURCE_CHARS = 2000
# Counting the articles newer than one is cheap near the top; past this many, count the
# older ones instead (both walk the index; neither reads a row).
NEAR_TOP = 1000

ENTRY_FIELDS = (
    "id",
    "uid",
    "published_title",
    "published_slug",
    "published_publish_at",
    "published_at",
)


@dataclass(frozen=True)
class Entry:
    """One listed article, as the front page, the archive, the feed and the sitemap show it."""

    id: int
    uid: uuid.UUID
    title: str
    # Where its live page is: the slug it was last published under.
    slug: str
    publish_at: datetime
    published_at: datetime
    head: str = ""
    # What the feeds carry besides (feed_entries); empty in the other documents.
    body: str = ""
    published_hash: str = ""
    description: str = ""
    language: str = ""
    byline: str = ""
    tags: tuple[str, ...] = ()

    @classmethod
    def from_values(cls, row: dict) -> Entry:
        body = row.get("published_body") or ""
        return cls(
            id=row["id"],
            uid=row["uid"],
            title=row["published_title"],
            slug=row["published_slug"],
            publish_at=row["published_publish_at"],
            published_at=row["published_at"] or row["published_publish_at"],
            head=row.get("head") or body[:EXCERPT_SOURCE_CHARS],
            body=body,
            published_hash=row.get("published_hash") or "",
            description=row.get("published_description") or "",
            language=row.get("published_language") or "",
            byline=row.get("published_byline") or "",
            tags=tuple(t for t in row.get("published_tags") or () if isinstance(t, str)),
        )


def listed(*, exclude: Iterable[int] = ()) -> QuerySet[Article]:
    """The listed articles, less the ids in `exclude`."""
    articles = Article.objects.exclude(published_hash="")
    exclude = list(exclude)
    return articles.exclude(pk__in=exclude) if exclude else articles


def _newer_than(entry: Entry) -> Q:
    # (publish_at, id) > (p, i), with a plain range on publish_at first: the OR alone
    # makes SQLite scan the whole index instead of seeking into it.
    return Q(published_publish_at__gte=entry.publish_at) & (
        Q(published_publish_at__gt=entry.publish_at) | Q(id__gt=entry.id)
    )


def _older_than(entry: Entry) -> Q:
    return Q(published_publish_at__lte=entry.publish_at) & (
        Q(published_publish_at__lt=entry.publish_at) | Q(id__lt=entry.id)
    )


def count_listed() -> int:
    return listed().count()


def newest(limit: int, *, exclude: Iterable[int] = ()) -> list[Entry]:
    """The newest `limit` listed articles, newest first, with the head of their body and
    their tags (the front page links them)."""
    rows = (
        listed(exclude=exclude)
        .order_by("-published_publish_at", "-id")
        .annotate(head=Substr("published_body", 1, EXCERPT_SOURCE_CHARS))
        .values(*ENTRY_FIELDS, "head", "published_tags")[:limit]
    )
    return [Entry.from_values(row) for row in rows]


# The feeds' entries: the whole live version of each.
FEED_FIELDS = (
    *ENTRY_FIELDS,
    "published_body",
    "published_hash",
    "published_description",
    "published_language",
    "published_byline",
    "published_tags",
)


def feed_entries(limit: int) -> list[Entry]:
    """The newest `limit` listed articles, newest first, with their whole live version:
    what the Atom feed and the JSON Feed carry."""
    rows = listed().order_by("-published_publish_at", "-id").values(*FEED_FIELDS)[:limit]
    return [Entry.from_values(row) for row in rows]


def tag_entries(tag_id: int, limit: int) -> list[Entry]:
    """The newest `limit` listed articles whose live version carries the tag, whole (a
    tag's page and feed): the rows of `tag_listed_idx`, joined to the listed articles."""
    rows = (
        listed()
        .filter(live_tags__tag_id=tag_id)
        .order_by("-published_publish_at", "-id")
        .values(*FEED_FIELDS)[:limit]
    )
    return [Entry.from_values(row) for row in rows]


def tags_in_use() -> dict[tuple[str, str], int]:
    """{(kind, slug): id} of every tag and byline a listed article carries (the full
    check)."""
    rows = (
        ArticleTag.objects.exclude(article__published_hash="")
        .values_list("tag__kind", "tag__slug", "tag_id")
        .distinct()
    )
    return {(kind, slug): tag_id for kind, slug, tag_id in rows}


def tag_refresh_requests(limit: int) -> tuple[list[int], list[dict]]:
    """The oldest `limit` requests to write a tag's pages again (TagRefresh): their ids,
    and the tags they name (id, kind, name, slug)."""
    requests = list(TagRefresh.objects.order_by("id").values_list("id", "tag_id")[:limit])
    tag_ids = {tag_id for _id, tag_id in requests}
    tags = Tag.objects.filter(pk__in=tag_ids).order_by("id")
    tags = list(tags.values("id", "kind", "name", "slug"))
    return [request_id for request_id, _tag in requests], tags


def tag_refresh_done(request_ids: list[int]) -> None:
    """The requests a pass has written the pages of: the rows it read, none inserted since."""
    TagRefresh.objects.filter(pk__in=request_ids).delete()


def entries_at(*, first: int, size: int, total: int) -> list[Entry]:
    """Positions first … first+size-1 (0 is the oldest), newest first. Read from
    whichever end of the index is nearer, so a page near the top costs as little as one
    near the bottom."""
    articles = listed().values(*ENTRY_FIELDS)
    from_top = total - first - size
    if first <= from_top:
        rows = articles.order_by("published_publish_at", "id")[first : first + size]
        return [Entry.from_values(row) for row in reversed(rows)]
    rows = articles.order_by("-published_publish_at", "-id")[from_top : from_top + size]
    return [Entry.from_values(row) for row in rows]


def _after_key(publish_at: datetime, article_id: int) -> Q:
    # (publish_at, id) > the key, with the plain range first (as _newer_than).
    return Q(published_publish_at__gte=publish_at) & (
        Q(published_publish_at__gt=publish_at) | Q(id__gt=article_id)
    )


def iter_oldest_first(*, after: tuple[datetime, int] | None = None) -> Iterator[Entry]:
    """Every listed article, oldest first, streamed: memory stays flat on a large site.
    `after`: only those after the key (publish_at, id), where a rebuild resumes."""
    articles = listed() if after is None else listed().filter(_after_key(*after))
    rows = articles.order_by("published_publish_at", "id").values(*ENTRY_FIELDS)
    for row in rows.iterator(chunk_size=2000):
        yield Entry.from_values(row)


def count_up_to(key: tuple[datetime, int]) -> int:
    """How many listed articles have a key (publish_at, id) at most `key`: the position
    after it (walks the index, reads no row)."""
    publish_at, article_id = key
    at_most = Q(published_publish_at__lte=publish_at) & (
        Q(published_publish_at__lt=publish_at) | Q(id__lte=article_id)
    )
    return listed().filter(at_most).order_by().count()


def listed_entries(ids: Iterable[int]) -> dict[int, Entry]:
    rows = listed().filter(pk__in=list(ids)).values(*ENTRY_FIELDS)
    return {row["id"]: Entry.from_values(row) for row in rows}


def position_of(entry: Entry, *, total: int) -> int:
    """The position of a listed article, 0 being the oldest, on a site of `total`."""
    articles = listed()
    newer = articles.filter(_newer_than(entry)).order_by()[:NEAR_TOP].count()
    if newer < NEAR_TOP:
        return total - 1 - newer
    return articles.filter(_older_than(entry)).count()


# --- the pipeline's rows --------------------------------------------------------------


def has_content(*, article_id: int, content_hash: str) -> bool:
    """Is this still the article's content? False once it was edited or deleted."""
    return Article.objects.filter(pk=article_id, content_hash=content_hash).exists()


def listed_if_current(
    *, article_id: int, content_hash: str, claims: int | None = None
) -> tuple[bool, str] | None:
    """None once the article was edited or deleted, or (given the attempt's `claims`
    token) once the attempt was overtaken by a newer one; else whether it is listed
    now, and its listed date (ISO, "" when not listed)."""
    fence = Q() if claims is None else Q(claims=claims, status=ArticleStatus.PENDING)
    row = (
        Article.objects.filter(fence, pk=article_id, content_hash=content_hash)
        .values_list("published_hash", "published_publish_at")
        .first()
    )
    if row is None:
        return None
    published_hash, listed_at = row
    return published_hash != "", listed_date(listed_at)


def listed_if_current_many(
    current: dict[int, tuple[str, int | None]],
) -> dict[int, tuple[bool, str]]:
    """`listed_if_current` for many articles ({id: (content hash, the attempt's claims
    token or None)}) in one query: those still at that content (and, given a token,
    still pending under that attempt), each with whether it is listed now and its
    listed date."""
    rows = Article.objects.filter(pk__in=list(current)).values_list(
        "id", "content_hash", "claims", "status", "published_hash", "published_publish_at"
    )
    listed = {}
    for article_id, content_hash, claims, status, published_hash, listed_at in rows:
        wanted_hash, token = current[article_id]
        if content_hash != wanted_hash:
            continue
        if token is not None and (claims != token or status != ArticleStatus.PENDING):
            continue
        listed[article_id] = (published_hash != "", listed_date(listed_at))
    return listed


def listed_date(moment: datetime | None) -> str:
    return moment.isoformat() if moment else ""


def article_states(ids: Iterable[int]) -> dict[int, dict]:
    rows = Article.objects.filter(pk__in=list(ids)).values(
        "id", "status", "published_hash", "published_slug", "published_publish_at"
    )
    return {row["id"]: row for row in rows}


def _owner_q(slug: str) -> Q:
    # The live page of an article, or the page an attempt in flight may be writing.
    return Q(published_slug=slug) | Q(slug=slug, status=ArticleStatus.PENDING)


def slug_owned(slug: str, *, besides: int | None = None) -> bool:
    """Does an article (other than `besides`) need the page directory `slug`?"""
    owners = Article.objects.filter(_owner_q(slug))
    if besides is not None:
        owners = owners.exclude(pk=besides)
    return owners.exists()


def owned_slugs() -> set[str]:
    """Every page directory an article needs, for reconcile: one pass over the table.

    One statement, so one snapshot: read as two queries, an article completing between
    them would be in neither (no longer pending, not yet live), and its fresh page
    would look like an orphan."""
    rows = (
        Article.objects.filter(~Q(published_slug="") | Q(status=ArticleStatus.PENDING))
        .values_list("published_slug", "slug", "status")
        .iterator(chunk_size=2000)
    )
    needed: set[str] = set()
    for published_slug, slug, status in rows:
        if published_slug:
            needed.add(published_slug)
        if status == ArticleStatus.PENDING:
            needed.add(slug)
    return needed


# --- the full check: live pages that are missing ------------------------------------


@dataclass(frozen=True)
class LiveVersion:
    """What an article's page shows: its live version (documents.article_page)."""

    id: int
    slug: str
    title: str
    body: str
    publish_at: datetime
    published_hash: str
    description: str = ""
    language: str = ""
    byline: str = ""
    tags: tuple[str, ...] = ()


def live_versions(*, exclude_slugs: set[str]) -> Iterator[LiveVersion]:
    """The live version of every listed article whose page is not among `exclude_slugs`
    (the pages the storage holds): the slugs are streamed, the bodies read only for
    those missing."""
    rows = listed().values_list("id", "published_slug").iterator(chunk_size=2000)
    yield from live_versions_of([i for i, slug in rows if slug not in exclude_slugs])


LIVE_READER_FIELDS = (
    "published_publish_at",
    "published_hash",
    "published_description",
    "published_language",
    "published_byline",
    "published_tags",
)


def live_versions_of(ids: list[int]) -> Iterator[LiveVersion]:
    """The live versions of those of the articles still listed, 200 bodies a query."""
    fields = ("id", "published_slug", "published_title", "published_body")
    for start in range(0, len(ids), 200):
        chunk = listed().filter(pk__in=ids[start : start + 200])
        for row in chunk.values(*fields, *LIVE_READER_FIELDS):
            yield LiveVersion(
                id=row["id"],
                slug=row["published_slug"],
                title=row["published_title"],
                body=row["published_body"],
                publish_at=row["published_publish_at"],
                published_hash=row["published_hash"],
                description=row["published_description"],
                language=row["published_language"],
                byline=row["published_byline"],
                tags=tuple(row["published_tags"] or ()),
            )


@dataclass(frozen=True)
class ListedPage:
    """What a listed article's page may show (issue 17, the full check): its live
    version, or, while an attempt of newer content is under way, that content."""

    id: int
    slug: str
    published_hash: str
    content_hash: str
    pending: bool

    def shows_right(self, shown: str) -> bool:
        """Is a page carrying the content hash `shown` right for this article now?"""
        return shown == self.published_hash or (self.pending and shown == self.content_hash)


def listed_pages(ids: Iterable[int] | None = None) -> Iterator[ListedPage]:
    """Every listed article's page (or those of `ids`), streamed: no body is read."""
    rows = listed() if ids is None else listed().filter(pk__in=list(ids))
    fields = ("id", "published_slug", "published_hash", "content_hash", "status")
    for row in rows.values_list(*fields).iterator(chunk_size=2000):
        article_id, slug, published_hash, content_hash, status = row
        yield ListedPage(
            article_id, slug, published_hash, content_hash, status == ArticleStatus.PENDING
        )


def is_live(version: LiveVersion) -> bool:
    """Is this still the article's live version (not deleted, not republished since)?"""
    return Article.objects.filter(
        pk=version.id, published_hash=version.published_hash, published_slug=version.slug
    ).exists()
