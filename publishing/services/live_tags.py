"""The live tags' index (`ArticleTag`): which live article carries which tag, written
with the live version so a tag's page is one index range (docs/site.md, "Tags")."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from publishing.models import Article, ArticleTag, Tag, TagKind, tags_refresh
from publishing.reader_fields import tag_key, tag_slug
from work.db import insert_rows


def live_tags_write(articles: Iterable[Article]) -> None:
    """Replace the index rows of `articles` (each with `published_tags`,
    `published_byline` and `published_publish_at` as just made live; a byline is a Tag
    of kind AUTHOR), in the caller's transaction: one read and one DELETE of the old
    rows, and when any has tags, one read of the tags' ids (with an INSERT and a second
    read when some are new: `_tag_ids`) and one INSERT of the rows; then one INSERT
    asking for the pages of the tags it touched, old and new, from the oldest date it
    touched in each (TagRefresh). The INSERTs are `insert_rows`, no model instances:
    a group's hundreds of rows cost less than its statements (docs/performance.md)."""
    articles = list(articles)
    if not articles:
        return
    before = ArticleTag.objects.filter(article_id__in=[a.pk for a in articles])
    # By tag, the oldest live date the change touches in its listing (TagRefresh.since):
    # where the articles were, and where they are now.
    since: dict[int, datetime] = {}
    for tag_id, publish_at in before.values_list("tag_id", "publish_at"):
        since[tag_id] = min(publish_at, since.get(tag_id, publish_at))
    before.delete()
    wanted: dict[int, tuple[dict[tuple[str, str], str], datetime]] = {}
    names: dict[tuple[str, str], str] = {}
    for article in articles:
        terms: dict[tuple[str, str], str] = {}
        for name in article.published_tags or []:
            if isinstance(name, str) and name.strip():
                terms.setdefault((TagKind.TAG, tag_key(name)), name)
        if (article.published_byline or "").strip():
            terms[(TagKind.AUTHOR, tag_key(article.published_byline))] = article.published_byline
        assert article.published_publish_at is not None  # listed: it has a live version
        wanted[article.pk] = (terms, article.published_publish_at)
        for term, name in terms.items():
            names.setdefault(term, name)
    if names:
        ids = _tag_ids(names)
        insert_rows(
            ArticleTag,
            ("article_id", "tag_id", "publish_at"),
            [(pk, ids[term], when) for pk, (terms_of, when) in wanted.items() for term in terms_of],
        )
        for terms_of, when in wanted.values():
            for term in terms_of:
                since[ids[term]] = min(when, since.get(ids[term], when))
    tags_refresh(since, since=since)


def _tag_ids(names: dict[tuple[str, str], str]) -> dict[tuple[str, str], int]:
    """The ids of these tags ({(kind, key): name}), read; those not there yet made first
    (in key order, so two completions adding the same new tags wait for each other
    instead of deadlocking; a conflict is another's insert of the same tag) and read."""
    ids = _read_tag_ids(names)
    missing = sorted(term for term in names if term not in ids)
    if missing:
        Tag.objects.bulk_create(
            [
                Tag(kind=kind, key=key, name=names[kind, key], slug=tag_slug(names[kind, key]))
                for kind, key in missing
            ],
            ignore_conflicts=True,
        )
        ids |= _read_tag_ids(missing)
    return ids


def _read_tag_ids(terms: Iterable[tuple[str, str]]) -> dict[tuple[str, str], int]:
    terms = set(terms)
    rows = Tag.objects.filter(key__in={key for _kind, key in terms})
    return {
        (kind, key): pk
        for kind, key, pk in rows.values_list("kind", "key", "id")
        if (kind, key) in terms
    }
