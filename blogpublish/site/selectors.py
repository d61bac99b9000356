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

import bisect
import heapq
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection, connections
from django.db.models import BooleanField, Count, ExpressionWrapper, Q, QuerySet, Subquery
from django.db.models.functions import Now, Substr

from blogpublish import rendering
from blogpublish.desk.renditions import Renditions
from blogpublish.models import Image
from publishing.db import EpochMicroseconds, epoch_micros, utc_datetime
from publishing.models import (
    Article,
    ArticleStatus,
    ArticleTag,
    FormerAddress,
    Tag,
    TagKind,
    TagRefresh,
)
from publishing.reader_fields import tag_key

# Enough of the body for an excerpt, without reading a 1 MiB body to show 240 characters
# (with the definitions of the references it uses: rendering.excerpt_source).
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
    def of_article(cls, article: Article) -> Entry:
        """The entry an article's attempt makes of it once it completes."""
        at = article.publish_at
        return cls(article.pk, article.uid, article.title, article.slug, at, at)

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


def _newer_than(entry: Entry, *, or_it: bool = False) -> Q:
    # (publish_at, id) > (p, i) (`or_it`: >=), with a plain range on publish_at first:
    # the OR alone makes SQLite scan the whole index instead of seeking into it.
    same_date = Q(id__gte=entry.id) if or_it else Q(id__gt=entry.id)
    return Q(published_publish_at__gte=entry.publish_at) & (
        Q(published_publish_at__gt=entry.publish_at) | same_date
    )


def _older_than(entry: Entry, *, or_it: bool = False) -> Q:
    same_date = Q(id__lte=entry.id) if or_it else Q(id__lt=entry.id)
    return Q(published_publish_at__lte=entry.publish_at) & (
        Q(published_publish_at__lt=entry.publish_at) | same_date
    )


def count_listed() -> int:
    return listed().count()


def newest(limit: int, *, exclude: Iterable[int] = ()) -> list[Entry]:
    """The newest `limit` listed articles, newest first, with the head of their body and
    their tags (the front page links them). A head that may use a reference defined
    further on is made the excerpt's source (`excerpt_source`), from the whole body,
    read for those articles whose source is not kept yet."""
    rows = list(
        listed(exclude=exclude)
        .order_by("-published_publish_at", "-id")
        .annotate(head=Substr("published_body", 1, EXCERPT_SOURCE_CHARS))
        .values(*ENTRY_FIELDS, "head", "published_tags", "published_hash")[:limit]
    )
    unknown = []
    for row in rows:
        version = row.pop("published_hash")  # the front page's entries carry no content
        if rendering.may_refer_on(row["head"], EXCERPT_SOURCE_CHARS):
            kept = _kept_source(version)
            if kept is None:
                unknown.append(row["id"])
            row["head"] = kept or row["head"]
    if unknown:
        wholes = (
            listed().filter(pk__in=unknown).values_list("id", "published_hash", "published_body")
        )
        sources = {pk: excerpt_source(version, body) for pk, version, body in wholes}
        for row in rows:
            row["head"] = sources.get(row["id"], row["head"])
    return [Entry.from_values(row) for row in rows]


# The excerpts' sources of the live versions whose head may use a later definition, by
# content hash: the front page and every feed that carries one (the site's, its tags')
# make it at every pass, and finding the definitions reads the whole body (a pass of a
# regular expression, but up to a third of a second for 1 MiB of definitions).
SOURCES_KEPT = 2048
_sources: OrderedDict[str, str] = OrderedDict()
_sources_lock = threading.Lock()  # a web process renders in threads


def _kept_source(published_hash: str) -> str | None:
    with _sources_lock:
        found = _sources.get(published_hash)
        if found is not None:
            _sources.move_to_end(published_hash)
        return found


def excerpt_source(published_hash: str, body: str) -> str:
    """`rendering.excerpt_source` of a live version's body (whose content hash is
    `published_hash`; "" for none: not kept), its first EXCERPT_SOURCE_CHARS with the
    definitions of the references they use. Kept by the hash alone: the feeds pass the
    body without what XML cannot carry, the front page the body as stored, and every
    excerpt is stripped of those characters after (blogpublish.site.documents)."""
    if not published_hash or not rendering.may_refer_on(body, EXCERPT_SOURCE_CHARS):
        return rendering.excerpt_source(body, EXCERPT_SOURCE_CHARS)  # the head, at once
    found = _kept_source(published_hash)
    if found is not None:
        return found
    source = rendering.excerpt_source(body, EXCERPT_SOURCE_CHARS)
    with _sources_lock:
        _sources[published_hash] = source
        while len(_sources) > SOURCES_KEPT:
            _sources.popitem(last=False)
    return source


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


def tag_entries_many(tag_ids: Iterable[int], limit: int) -> dict[int, list[Entry]]:
    """`tag_entries` of many tags (a pass's), by tag id: the ids of each tag's newest
    `limit` in one statement (UNION ALL: a LIMIT per tag, one range of the index each),
    then the whole live version of each article once, however many of the tags it
    carries: two queries for the tags instead of one a tag."""
    tag_ids = list(tag_ids)
    if not tag_ids:
        return {}

    def newest(tag_id: int) -> QuerySet:
        return (
            listed()
            .filter(live_tags__tag_id=tag_id)
            .order_by("-published_publish_at", "-id")
            .values("id")[:limit]
        )

    sql, params = _union_per(newest, tag_ids, sentinels=(-1, -2), key=("tag entries", limit))
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        pairs = cursor.fetchall()
    rows = listed().filter(pk__in={article_id for _n, article_id in pairs}).values(*FEED_FIELDS)
    entries = {row["id"]: Entry.from_values(row) for row in rows}
    found: dict[int, list[Entry]] = {tag_id: [] for tag_id in tag_ids}
    for number, article_id in pairs:
        found[tag_ids[number]].append(entries[article_id])
    for listing in found.values():
        listing.sort(key=lambda entry: (entry.publish_at, entry.id), reverse=True)
    return found


# `_union_per`'s compiled sentinels, by its caller's key and the connection: the
# statements do not change in a process, and compiling them cost more than running them.
_COMPILED: dict[tuple[Hashable, str], tuple[tuple[str, Sequence], tuple[str, Sequence]]] = {}


def _union_per(
    make: Callable[[Any], QuerySet],
    values: list,
    *,
    sentinels: tuple[Any, Any],
    key: Hashable = None,
) -> tuple[str, list]:
    """One statement (SQL, parameters) of `make(value)` for each of `values` (a LIMIT
    each: one range of an index each), each row led by the number of its value in
    `values`. The query is compiled once, not once a value (Django takes milliseconds
    to compile one): the parameters that differ between the two `sentinels`' are the
    value's; `key` (the caller's name and whatever else `make` depends on) keeps the
    compiled query for the next call. On PostgreSQL the values are an array and the
    query a LATERAL subquery, planned once (a UNION ALL of 300 took 180 ms to plan,
    16 ms to run); elsewhere a UNION ALL of the queries, which SQLite plans in no time."""
    cache = (key, connection.alias) if key is not None else None
    compiled = _COMPILED.get(cache) if cache else None
    if compiled is None:
        compiled = (
            make(sentinels[0]).query.sql_with_params(),
            make(sentinels[1]).query.sql_with_params(),
        )
        if cache:
            _COMPILED[cache] = compiled
    (sql, first), (same, second) = compiled
    slots = [n for n, (one, other) in enumerate(zip(first, second, strict=False)) if one != other]
    pieces = sql.split("%s")
    if same != sql or len(first) != len(second) or not slots or len(pieces) != len(first) + 1:
        # Not one query with the value as a parameter: each its own.
        return _union_all([make(value).query.sql_with_params() for value in values])
    if connection.vendor == "postgresql":
        lateral = pieces[0] + "".join(
            ("v.value" if n in slots else "%s") + piece for n, piece in enumerate(pieces[1:])
        )
        array = "text[]" if isinstance(sentinels[0], str) else "bigint[]"
        outer = (
            f"SELECT v.number - 1 AS value_number, u.* FROM unnest(%s::{array}) "
            f"WITH ORDINALITY AS v(value, number) CROSS JOIN LATERAL ({lateral}) u"
        )
        return outer, [list(values), *(p for n, p in enumerate(first) if n not in slots)]
    return _union_all([(sql, _put(first, slots, value)) for value in values])


def _union_all(compiled: Sequence[tuple[str, Sequence]]) -> tuple[str, list]:
    parts: list[str] = []
    params: list = []
    for number, (one_sql, one_params) in enumerate(compiled):
        parts.append(f"SELECT {number} AS value_number, u{number}.* FROM ({one_sql}) u{number}")
        params.extend(one_params)
    return " UNION ALL ".join(parts), params


def _put(params: Sequence, slots: list[int], value: Any) -> list:
    filled = list(params)
    for slot in slots:
        filled[slot] = value
    return filled


def count_tagged_many(tag_ids: Iterable[int]) -> dict[int, int]:
    """`count_tagged` of many tags in one statement, by tag id (a tag none carries: 0)."""
    tag_ids = list(tag_ids)
    rows = (
        ArticleTag.objects.filter(tag_id__in=tag_ids)
        .exclude(article__published_hash="")
        .values("tag_id")
        .annotate(count=Count("article_id"))
        .order_by()
        .values_list("tag_id", "count")
    )
    return {tag_id: 0 for tag_id in tag_ids} | dict(rows)


def tags_in_use() -> dict[tuple[str, str], int]:
    """{(kind, slug): id} of every tag and byline a listed article carries (the full
    check)."""
    rows = (
        ArticleTag.objects.exclude(article__published_hash="")
        .values_list("tag__kind", "tag__slug", "tag_id")
        .distinct()
    )
    return {(kind, slug): tag_id for kind, slug, tag_id in rows}


def tag_in_use(kind: str, slug: str) -> bool:
    """Does a listed article carry this tag (or byline) now?"""
    return (
        ArticleTag.objects.filter(tag__kind=kind, tag__slug=slug)
        .exclude(article__published_hash="")
        .exists()
    )


def tag_rename(tag_id: int, name: str) -> None:
    """The tag's (byline's) name as its pages now show it (build.shown_name)."""
    Tag.objects.filter(pk=tag_id).update(name=name)


# The rows `tag_refresh_requests` reads, per tag it may name: 20,000 for a pass's 1,000
# tags, under SQLite's 32,766 parameters a statement and PostgreSQL's 65,535.
REQUESTS_READ_PER_TAG = 20


def tag_refresh_requests(limit: int) -> list[dict]:
    """The tags named by the oldest `limit` requests to write a tag's pages again
    (TagRefresh), oldest request first: each with its id, kind, name, slug, `requests`
    (the ids of ALL its requests made so far, the later ones too) and `since` (the
    oldest date they touched; None when one asks for every page).

    All of a tag's requests, because its pages are written once for them all: every
    group of a burst asks for the tags it touched, and when a pass took only the oldest
    `limit` requests, the next pass found the same tags again in the next groups'
    requests and wrote them again (a burst of 5,000 on 1,000 tags made 15,000 requests,
    and each tag's pages were written about ten times; the tags' pages listed it four
    minutes after its last publish). Requests made after this read stay for the next
    pass: the listings a pass writes are read after its requests. At most
    REQUESTS_READ_PER_TAG times `limit` rows, oldest first (their ids are deleted in
    one statement, which SQLite and PostgreSQL bound in parameters); a tag's requests
    past them stay, and the next pass writes it once more."""
    while True:
        oldest = TagRefresh.objects.order_by("id").values("tag_id")[:limit]
        rows = (
            TagRefresh.objects.filter(tag_id__in=oldest)
            .order_by("id")
            .values_list("id", "tag_id", "since")[: limit * REQUESTS_READ_PER_TAG]
        )
        found: dict[int, dict] = {}
        for request_id, tag_id, moment in rows:
            tag = found.setdefault(tag_id, {"requests": [], "since": moment})
            tag["requests"].append(request_id)
            before = tag["since"]
            # None (every page) wins over any date.
            tag["since"] = None if before is None or moment is None else min(before, moment)
        names = Tag.objects.filter(pk__in=found).values("id", "kind", "name", "slug")
        named = {row["id"]: row for row in names}
        # A tag deleted meanwhile (its requests with it, by the cascade) is left out; the
        # requests of one deleted outside the ORM (no constraint: models.TagRefresh) go.
        gone = [i for tag_id, tag in found.items() if tag_id not in named for i in tag["requests"]]
        if gone:
            TagRefresh.objects.filter(pk__in=gone).delete()
        if named or not gone:
            return [{**named[tag_id], **tag} for tag_id, tag in found.items() if tag_id in named]
        # Every tag read was gone: the requests after them, or the pass would end as if
        # none were left and theirs would wait for the catch-up.


def _of_tag(tag_id: int, **dated: datetime) -> QuerySet[Article]:
    """The listed articles of the tag; `dated`: a lookup on the live tag's date
    (`publish_at__gte=…`), in the same filter so that it narrows the same row of the
    index (a second filter() would join the table again)."""
    return listed().filter(
        live_tags__tag_id=tag_id, **{f"live_tags__{k}": v for k, v in dated.items()}
    )


def count_tagged(tag_id: int) -> int:
    """The listed articles that carry the tag: a range of `tag_listed_idx`."""
    return _of_tag(tag_id).order_by().count()


def count_tagged_before(tag_id: int, since: datetime, *, total: int) -> int:
    """The position in the tag's listing of `total` (0 the oldest) of its first article
    dated `since` or later: how many are older, counted from the nearer end."""
    newer = _of_tag(tag_id, publish_at__gte=since).order_by()
    near = newer[:NEAR_TOP].count()
    if near < NEAR_TOP:
        return total - near
    return _of_tag(tag_id, publish_at__lt=since).order_by().count()


def tagged_pages(
    tag_id: int, pages: Iterable[int], *, size: int, total: int
) -> Iterator[tuple[int, list[Entry]]]:
    """A tag's pages (numbered as `entries_pages`), each run of consecutive pages in one
    statement."""
    return _pages(_of_tag(tag_id), pages, size=size, total=total)


def tag_refresh_done(request_ids: list[int]) -> bool:
    """The requests a pass has written the pages of: the rows it read, none inserted since.
    True when requests are left that the pass could see (past the number it reads)."""
    TagRefresh.objects.filter(pk__in=request_ids).delete()
    return TagRefresh.objects.exists()


def entries_pages(
    pages: Iterable[int], *, size: int, total: int
) -> Iterator[tuple[int, list[Entry]]]:
    """The listing's pages (numbered from 1, the oldest; `size` entries each), as (page,
    its entries newest first), read from whichever end of the index is nearer: a page
    near the top costs as little as one near the bottom."""
    return _pages(listed(), pages, size=size, total=total)


def _pages(
    listing: QuerySet[Article], pages: Iterable[int], *, size: int, total: int
) -> Iterator[tuple[int, list[Entry]]]:
    """Each run of consecutive pages is one statement streamed from the nearer end of
    the index, not a statement per page: an offset walks the index up to it, so a page
    at a time made a pass that rewrote a run of k pages walk about k²/4 pages' entries
    (an import into a tag of 10,000, a third of its passes' time)."""
    numbers = sorted(set(pages))
    runs: list[list[int]] = []
    for number in numbers:
        if runs and runs[-1][-1] == number - 1:
            runs[-1].append(number)
        else:
            runs.append([number])
    for run in runs:
        start, stop = size * (run[0] - 1), size * run[-1]
        from_top = total - stop
        articles = listing.values(*ENTRY_FIELDS)
        if start <= from_top:
            rows = articles.order_by("published_publish_at", "id")[start:stop]
            order = iter(run)
        else:
            rows = articles.order_by("-published_publish_at", "-id")[from_top : total - start]
            order = iter(run[::-1])
        batch: list[Entry] = []
        for row in rows.iterator(chunk_size=2000):
            batch.append(Entry.from_values(row))
            if len(batch) == size:
                yield next(order), batch[::-1] if start <= from_top else batch
                batch = []
        if batch:  # fewer rows than `total` said: the rest where they would be
            yield next(order), batch[::-1] if start <= from_top else batch


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


def keys_down_to(entry: Entry, *, limit: int) -> list[tuple[datetime, int]] | None:
    """The keys (publish_at, id) of the listed articles from the newest down to
    `entry`'s, newest first, read in one statement: None when there are more than
    `limit` (walks the index; reads no row)."""
    rows = list(
        listed()
        .filter(_newer_than(entry, or_it=True))
        .order_by("-published_publish_at", "-id")
        .values_list("published_publish_at", "id")[: limit + 1]
    )
    if len(rows) > limit:
        return None
    return [(at, pk) for at, pk in rows if at is not None]  # listed: all have a date


def position_of(entry: Entry, *, total: int) -> int:
    """The position of a listed article, 0 being the oldest, on a site of `total`."""
    articles = listed()
    newer = articles.filter(_newer_than(entry)).order_by()[:NEAR_TOP].count()
    if newer < NEAR_TOP:
        return total - 1 - newer
    return articles.filter(_older_than(entry)).count()


# --- an article's neighbours: its page's previous and next links -----------------------

# An article not saved yet (a preview) sorts after every saved one of its date.
UNSAVED_ID = 2**62


@dataclass(frozen=True)
class Neighbours:
    """The listed articles just older and just newer than a key (publish_at, id)."""

    older: Entry | None
    newer: Entry | None


def neighbours(publish_at: datetime, article_id: int | None) -> Neighbours:
    """The neighbours of the key (`publish_at`, `article_id`) among the listed articles
    but that article itself: two seeks into `article_listed_idx`."""
    key = Entry(article_id or UNSAVED_ID, uuid.UUID(int=0), "", "", publish_at, publish_at)
    others = listed(exclude=[article_id] if article_id else [])
    older = others.filter(_older_than(key)).order_by("-published_publish_at", "-id")
    newer = others.filter(_newer_than(key)).order_by("published_publish_at", "id")
    return Neighbours(
        older=next((Entry.from_values(r) for r in older.values(*ENTRY_FIELDS)[:1]), None),
        newer=next((Entry.from_values(r) for r in newer.values(*ENTRY_FIELDS)[:1]), None),
    )


# A window read for many keys at once holds at most this many listed rows per key;
# keys spread wider than that are sought one by one.
WINDOW_PER_KEY = 20


def neighbours_many(
    keys: Iterable[tuple[datetime, int]], *, extra: Iterable[Entry] = ()
) -> dict[int, Neighbours]:
    """`neighbours_at` by article id, for keys of one article each (a batch's, a
    pass's pages where they are listed now). An article given at two keys keeps only
    one of them here: where it was and where it is, ask `neighbours_at`."""
    return {key[1]: around for key, around in neighbours_at(keys, extra=extra).items()}


def neighbours_at(
    keys: Iterable[tuple[datetime, int]], *, extra: Iterable[Entry] = ()
) -> dict[tuple[datetime, int], Neighbours]:
    """`neighbours` of many keys (publish_at, id), by key: the listed rows between
    the first and last key read at once (with one more at each end), so a batch or a
    pass's articles cost a few queries, not two each. `extra`: entries to count as
    listed where they say (a batch's articles, listed once it completes), in place of
    where the listing has them. By key, not by id: a moved article's old key and its
    new one each have their own neighbours (`neighbour_ids`)."""
    keys = sorted(set(keys))
    if not keys:
        return {}
    extras = {entry.id: entry for entry in extra}
    window = _window(keys[0], keys[-1], limit=WINDOW_PER_KEY * len(keys))
    if window is None:  # too wide: one by one (the listing only)
        return {(p, i): neighbours(p, i) for p, i in keys}
    universe = sorted(
        {**{e.id: e for e in window}, **extras}.values(), key=lambda e: (e.publish_at, e.id)
    )
    order = [(e.publish_at, e.id) for e in universe]
    found = {}
    for key in keys:
        at = bisect.bisect_left(order, key)
        # Never itself, wherever the listing or `extras` has it (a moved article's old key).
        older = next((e for e in reversed(universe[:at]) if e.id != key[1]), None)
        newer = next((e for e in universe[at:] if e.id != key[1]), None)
        found[key] = Neighbours(older, newer)
    return found


def _window(low: tuple[datetime, int], high: tuple[datetime, int], *, limit: int):
    """The listed entries from `low` to `high` (keys), with the one just before and the
    one just after; None when more than `limit` lie between."""
    first = Entry(low[1], uuid.UUID(int=0), "", "", low[0], low[0])
    last = Entry(high[1], uuid.UUID(int=0), "", "", high[0], high[0])
    # From `low` to `high` both included, written as the two ranges (not as "neither
    # older than `low` nor newer than `high`": PostgreSQL seeks no index for a negated
    # condition, and read the whole listing's index for every window).
    inside = (
        listed()
        .filter(_newer_than(first, or_it=True) & _older_than(last, or_it=True))
        .order_by("published_publish_at", "id")
        .values(*ENTRY_FIELDS)[: limit + 1]
    )
    before = listed().filter(_older_than(first)).order_by("-published_publish_at", "-id")
    after = listed().filter(_newer_than(last)).order_by("published_publish_at", "id")
    ends = [q.values(*ENTRY_FIELDS)[:1] for q in (before, after)]
    if connections[inside.db].features.supports_slicing_ordering_in_compound:
        # PostgreSQL: the three in one statement (an idle publish's path waits for each).
        found = [Entry.from_values(row) for row in inside.union(*ends, all=True)]
        rows = [e for e in found if low <= (e.publish_at, e.id) <= high]
        if len(rows) > limit:
            return None
        return found
    rows = [Entry.from_values(row) for row in inside]
    if len(rows) > limit:
        return None
    return [*rows, *(Entry.from_values(r) for q in ends for r in q)]


def neighbour_ids(keys: Iterable[tuple[datetime, int]]) -> set[int]:
    """The ids of the listed neighbours of each key (publish_at, id): of every key, an
    article's where it was listed as well as where it is (a new date, a delete and a
    publish again), not only the last of an article's keys."""
    found: set[int] = set()
    for around in neighbours_at(keys).values():
        found.update(entry.id for entry in (around.older, around.newer) if entry)
    return found


# --- an article's related articles: those sharing the most of its tags --------------

# Related articles an article's page lists at most.
RELATED_MAX = 3
# Of each of its tags, the newest this many listed articles are the candidates: one
# range of `tag_listed_idx` per tag, so a page's related articles cost the same on a site
# of any size and with any number of tags (docs/site.md, "Related articles"). Ten, not
# the 25 it was: a tagged burst's group of 100 read 7,500 candidates to keep 300
# (docs/performance.md, "Tags in use").
RELATED_PER_TAG = 10
# Tags a query reads at most (SQLite allows 500 terms in one UNION ALL; PostgreSQL's
# LATERAL form has no such limit: `_union_per`).
RELATED_TAGS_PER_QUERY = 200

# Of a page's candidates, the best this many more than RELATED_MAX are named (title and
# slug read): one deleted since its tag's index was read leaves a place the next fills.
RELATED_SPARE = 2


def related(tags: Iterable[str], article_id: int | None) -> list[Entry]:
    """The listed articles (but `article_id`) sharing the most of `tags`, then newest:
    at most RELATED_MAX; none for an article without tags."""
    return related_many({article_id: list(tags)}).get(article_id, [])


def _tag_keys(tags: Iterable[str]) -> set[str]:
    return {tag_key(t) for t in tags if isinstance(t, str) and t.strip()}


def related_many(
    wanted: Mapping[int | None, Iterable[str]],
    *,
    extra: Iterable[tuple[Entry, Iterable[str]]] = (),
) -> dict[int | None, list[Entry]]:
    """`related` of many articles ({id: tags}) in two queries (a group's, a chunk's):
    the candidates of every distinct tag they carry read at once from the tags' index
    alone, ranked for each, then the titles and slugs of the few ranked best, read
    from the listing (which drops any deleted since). `extra`: (entry, tags) to count
    as listed with those tags, in place of what the listing has of them (a group's
    articles, listed once it completes)."""
    keys_of = {article_id: _tag_keys(tags) for article_id, tags in wanted.items()}
    every = sorted(set().union(*keys_of.values())) if keys_of else []
    candidates: dict[str, list[Candidate]] = {}
    per_query = RELATED_TAGS_PER_QUERY if connection.vendor != "postgresql" else len(every)
    for start in range(0, len(every), max(per_query, 1)):
        candidates |= _related_candidates(every[start : start + per_query])
    extra = list(extra)
    named: dict[int, tuple[str, str]] = {}
    if extra:
        replaced = {entry.id for entry, _tags in extra}
        candidates = {
            key: [row for row in rows if row[0] not in replaced] for key, rows in candidates.items()
        }
        for entry, tags in extra:
            named[entry.id] = (entry.title, entry.slug)
            for key in _tag_keys(tags) & set(candidates):
                candidates[key].append((entry.id, epoch_micros(entry.publish_at)))
    ranked = {
        article_id: _rank_related(article_id, keys, candidates)
        for article_id, keys in keys_of.items()
    }
    # The best RELATED_MAX of each named first; the spares only for a page one of whose
    # best was not found (deleted since the index was read): a second query, rarely.
    for depth in (RELATED_MAX, RELATED_MAX + RELATED_SPARE):
        unnamed = {i for best in ranked.values() for i, _at in best[:depth] if i not in named}
        if unnamed:
            rows = listed().filter(pk__in=sorted(unnamed)).values_list("id", *RELATED_NAMES)
            named |= {i: (title, slug) for i, title, slug in rows}
            unnamed -= set(named)
        if not unnamed:
            break
    found: dict[int | None, list[Entry]] = {}
    for article_id, best in ranked.items():
        kept = [(i, at) for i, at in best if i in named][:RELATED_MAX]
        found[article_id] = [_related_entry(i, at, *named[i]) for i, at in kept]
    return found


# A related article's candidate: (article id, its date in microseconds since 1970 UTC),
# as the tags' index has them (no join: a tag's rows are those of listed articles, a
# delete taking its rows with it); a datetime is made of the date for the few kept.
Candidate = tuple[int, int]
RELATED_NAMES = ("published_title", "published_slug")


def _related_candidates(keys: list[str]) -> dict[str, list[Candidate]]:
    """{tag key: [Candidate]}: the newest RELATED_PER_TAG articles of each tag, one
    range of `tag_listed_idx` each (read from the index alone), in one statement (UNION
    ALL: a LIMIT per tag, which both databases take inside a subquery)."""
    if not keys:
        return {}
    sql, params = _union_per(
        _candidates, keys, sentinels=("a", "b"), key=("related", RELATED_PER_TAG)
    )
    found: dict[str, list[Candidate]] = {key: [] for key in keys}
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        for number, article_id, at in cursor.fetchall():
            found[keys[number]].append((article_id, at))
    return found


def _candidates(key: str) -> QuerySet:
    """The newest RELATED_PER_TAG index entries of the tag `key`. The tag's id is a
    subquery, not a join: with the id known before the index is read, the range is read
    backwards from its end and stopped at the limit; joined, PostgreSQL read the tag's
    whole range and sorted it (a publish's cost grew with the articles of its tags)."""
    tag = Tag.objects.filter(kind=TagKind.TAG, key=key).values("pk")
    return (
        ArticleTag.objects.filter(tag_id=Subquery(tag))
        .order_by("-publish_at", "-article_id")
        .annotate(at=EpochMicroseconds("publish_at"))
        .values("article_id", "at")[:RELATED_PER_TAG]
    )


def _rank_related(
    article_id: int | None,
    keys: set[str],
    candidates: Mapping[str, list[Candidate]],
) -> list[Candidate]:
    """The best RELATED_MAX + RELATED_SPARE of the candidates of `keys`: most tags
    shared, then newest."""
    shared: dict[int, int] = {}
    dated: dict[int, int] = {}
    for key in keys:
        for other, at in candidates.get(key, ()):
            if other != article_id:
                shared[other] = shared.get(other, 0) + 1
                dated[other] = at
    best = heapq.nsmallest(
        RELATED_MAX + RELATED_SPARE, shared, key=lambda i: (-shared[i], -dated[i], -i)
    )
    return [(i, dated[i]) for i in best]


def _related_entry(article_id: int, at: int, title: str, slug: str) -> Entry:
    moment = utc_datetime(at)
    return Entry(article_id, uuid.UUID(int=0), title, slug, moment, moment)


# --- the pipeline's rows --------------------------------------------------------------


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


def listed_dates(article_ids: Iterable[int]) -> dict[int, str]:
    """Of these articles, the listed ones, with their listed date (`listed_date`)."""
    rows = (
        Article.objects.filter(pk__in=list(article_ids))
        .exclude(published_hash="")
        .values_list("id", "published_publish_at")
    )
    return {article_id: listed_date(listed_at) for article_id, listed_at in rows}


def may_be_written() -> Q:
    """A pending row whose page an attempt may be writing (or will soon write): it is
    due, or an attempt holds its lease, by the database's clock. Not one scheduled for
    later with no attempt on it: an attempt of an earlier date that was written as
    the date moved back to the future (a review's finding: the page was public until
    then) is nobody's page."""
    return Q(status=ArticleStatus.PENDING) & (
        Q(publish_at__lte=Now()) | Q(lease_expires_at__gt=Now())
    )


def article_states(ids: Iterable[int]) -> dict[int, Mapping[str, Any]]:
    """Of each row: its status, its live version, and whether an attempt may be writing
    its page (`writing`, may_be_written)."""
    rows = (
        Article.objects.filter(pk__in=list(ids))
        .annotate(writing=ExpressionWrapper(may_be_written(), output_field=BooleanField()))
        .values(
            "id",
            "status",
            "published_hash",
            "published_slug",
            "published_publish_at",
            "writing",
        )
    )
    return {row["id"]: row for row in rows}


def _owner_q(slug: str) -> Q:
    # The live page of an article, or the page an attempt in flight may be writing.
    return Q(published_slug=slug) | (Q(slug=slug) & may_be_written())


def slug_owned(slug: str) -> bool:
    """Does an article need the page directory `slug` for its own page?"""
    return Article.objects.filter(_owner_q(slug)).exists()


def owned_slugs() -> set[str]:
    """Every page directory an article needs, for reconcile: one pass over the table.

    One statement, so one snapshot: read as two queries, an article completing between
    them would be in neither (no longer pending, not yet live), and its fresh page
    would look like an orphan."""
    writing = may_be_written()
    rows = (
        Article.objects.filter(~Q(published_slug="") | writing)
        .annotate(writing=ExpressionWrapper(writing, output_field=BooleanField()))
        .values_list("published_slug", "slug", "writing")
        .iterator(chunk_size=2000)
    )
    needed: set[str] = set()
    for published_slug, slug, being_written in rows:
        if published_slug:
            needed.add(published_slug)
        if being_written:
            needed.add(slug)
    return needed


# --- former addresses: the pages that send readers on ---------------------------------


def _former_of_listed() -> QuerySet[FormerAddress]:
    return FormerAddress.objects.exclude(article__published_hash="").exclude(
        article__published_slug=""
    )


def moved_to(slug: str) -> str | None:
    """The live slug of the listed article that left `slug` last, where the page at
    `slug` sends readers (FormerAddress); None if no listed article left it."""
    target = (
        _former_of_listed()
        .filter(slug=slug)
        .exclude(article__published_slug=slug)
        .order_by("-left_at", "-id")
        .values_list("article__published_slug", flat=True)
        .first()
    )
    return target or None


def moved_targets() -> dict[str, str]:
    """`moved_to` of every former address of a listed article, in one query."""
    targets: dict[str, str] = {}
    rows = _former_of_listed().order_by("left_at", "id")
    for slug, target in rows.values_list("slug", "article__published_slug"):
        if target != slug:
            targets[slug] = target  # the last one left it last
    return targets


def former_slugs_of(article_ids: Iterable[int]) -> dict[int, list[str]]:
    """The former addresses of these articles, listed or not."""
    found: dict[int, list[str]] = {}
    rows = FormerAddress.objects.filter(article_id__in=list(article_ids))
    for article_id, slug in rows.values_list("article_id", "slug"):
        found.setdefault(article_id, []).append(slug)
    return found


def former_addresses_forget(article_ids: Iterable[int] | None = None) -> int:
    """The former addresses of these deleted articles (None: of every article that is
    gone) forgotten; how many."""
    rows = FormerAddress.objects.all()
    if article_ids is None:
        rows = rows.exclude(article_id__in=Article.objects.values("pk"))
    else:
        rows = rows.filter(article_id__in=list(article_ids))
    return rows.delete()[0]


def moved_slugs() -> set[str]:
    """Every former address of a listed article: a folder the site keeps (a page that
    sends readers on, or another article's page where one took the address)."""
    return set(_former_of_listed().values_list("slug", flat=True))


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


LIVE_FIELDS = (
    "id",
    "published_slug",
    "published_title",
    "published_body",
    "published_publish_at",
    "published_hash",
    "published_description",
    "published_language",
    "published_byline",
    "published_tags",
)


def _live_version(row: dict) -> LiveVersion:
    return LiveVersion(
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


def live_versions_of(ids: list[int]) -> Iterator[LiveVersion]:
    """The live versions of those of the articles still listed, 200 bodies a query."""
    for start in range(0, len(ids), 200):
        chunk = listed().filter(pk__in=ids[start : start + 200])
        for row in chunk.values(*LIVE_FIELDS):
            yield _live_version(row)


def live_versions_after(after: int, *, limit: int) -> list[LiveVersion]:
    """The live versions of the next `limit` listed articles after the key `after`, in
    key order (the re-render's keyset walk)."""
    rows = listed().filter(pk__gt=after).order_by("pk").values(*LIVE_FIELDS)[:limit]
    return [_live_version(row) for row in rows]


@dataclass(frozen=True)
class ListedPage:
    """What a listed article's page may show (issue 17, the full check): its live
    version, or, while an attempt of newer content is under way, that content; and the
    neighbours its previous and next links name now."""

    id: int
    slug: str
    published_hash: str
    content_hash: str
    pending: bool
    neighbours: Neighbours
    # The last publish among the article and its neighbours (the whole listing's
    # stream; None from the seeks): after it, its page may have had to change
    # (blogpublish.site.full_check).
    changed_at: datetime | None = None

    def shows_right(self, shown: str) -> bool:
        """Is a page carrying the content hash `shown` right for this article now?"""
        return shown == self.published_hash or (self.pending and shown == self.content_hash)


PAGE_FIELDS = ("id", "published_slug", "published_hash", "content_hash", "status")


def listed_pages(ids: Iterable[int] | None = None) -> Iterator[ListedPage]:
    """Every listed article's page (or those of `ids`), streamed: no body is read. The
    whole listing is read in its order, each article's neighbours from the stream; for
    `ids`, two seeks each."""
    if ids is not None:
        ids = list(ids)
        for start in range(0, len(ids), 1000):
            chunk = listed().filter(pk__in=ids[start : start + 1000])
            rows = list(chunk.values(*PAGE_FIELDS, "published_publish_at"))
            around = neighbours_many((row["published_publish_at"], row["id"]) for row in rows)
            for row in rows:
                yield _listed_page(row, around[row["id"]])
        return
    yield from _streamed_pages()


def _streamed_pages() -> Iterator[ListedPage]:
    rows = listed().order_by("published_publish_at", "id").values(*PAGE_FIELDS, *ENTRY_FIELDS)
    before: dict | None = None
    row: dict | None = None
    for after in rows.iterator(chunk_size=2000):
        if row is not None:
            yield _streamed_page(before, row, after)
        before, row = row, after
    if row is not None:
        yield _streamed_page(before, row, None)


def _streamed_page(before: dict | None, row: dict, after: dict | None) -> ListedPage:
    around = Neighbours(
        Entry.from_values(before) if before else None, Entry.from_values(after) if after else None
    )
    times = [r["published_at"] for r in (before, row, after) if r and r["published_at"]]
    return _listed_page(row, around, changed_at=max(times, default=None))


def _listed_page(row: dict, around: Neighbours, *, changed_at=None) -> ListedPage:
    return ListedPage(
        row["id"],
        row["published_slug"],
        row["published_hash"],
        row["content_hash"],
        row["status"] == ArticleStatus.PENDING,
        around,
        changed_at,
    )


# --- images ----------------------------------------------------------------------------


def image_renditions(image_paths: Iterable[str]) -> dict[str, Renditions]:
    """The copies of the uploaded images at `image_paths` (`media/<sha256>.<ext>`), for
    those that have them: one query (blogpublish.site.figures)."""
    wanted = list(image_paths)
    if not wanted:
        return {}
    rows = Image.objects.filter(path__in=wanted, renditions__isnull=False)
    return {
        path: Renditions.from_json(made)
        for path, made in rows.values_list("path", "renditions")
        if made is not None
    }
