"""The live tags' index (`ArticleTag`): which live article carries which tag, written
with the live version so a tag's page is one index range (docs/site.md, "Tags")."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime

from django.apps import apps as django_apps
from django.db import IntegrityError, OperationalError, transaction

from publishing.models import Article, ArticleTag, Tag, TagKind, tags_refresh
from publishing.reader_fields import tag_key, tag_slug
from work.db import insert_rows

logger = logging.getLogger(__name__)


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


# --- rows of an earlier release -----------------------------------------------------------


def tags_by_their_keys(apps=django_apps) -> set[int]:
    """Bring every Tag row to its key and folder of now (reader_fields.tag_key,
    tag_slug), as migration 0026 first did (it passes its historical models) and the
    full check does again (a release before it, still running beside it in a rolling
    deploy, makes rows by its own keys meanwhile). Rows that are now one tag are merged
    into the oldest (its name, its folder): the others' articles join it (an article
    that carried both keeps one row), their refresh requests go. The ids whose pages are
    to be written again are returned and asked for (TagRefresh, every page): the merged
    ones', the moved ones', and those of a folder a moved one leaves (it may have
    written there last)."""
    Tag = apps.get_model("publishing", "Tag")
    ArticleTag = apps.get_model("publishing", "ArticleTag")
    TagRefresh = apps.get_model("publishing", "TagRefresh")
    kept: dict[tuple[str, str], int] = {}
    moved: dict[int, tuple[str, str]] = {}
    left: set[tuple[str, str]] = set()  # (kind, slug) a moved row leaves
    slugs: dict[int, tuple[str, str]] = {}
    asked: set[int] = set()
    # The merges first: the kept row may take the key a newer row holds.
    for tag in Tag.objects.only("id", "kind", "name", "key", "slug").order_by("pk").iterator():
        key, slug = tag_key(tag.name), tag_slug(tag.name)
        into = kept.setdefault((tag.kind, key), tag.pk)
        if into != tag.pk:  # an older row has the key: its articles join that one
            theirs = ArticleTag.objects.filter(tag_id=into).values("article_id")
            ArticleTag.objects.filter(tag_id=tag.pk, article_id__in=theirs).delete()
            ArticleTag.objects.filter(tag_id=tag.pk).update(tag_id=into)
            TagRefresh.objects.filter(tag_id=tag.pk).delete()
            Tag.objects.filter(pk=tag.pk).delete()
            asked.add(into)
            continue
        slugs[tag.pk] = (tag.kind, slug)
        if tag.key != key or tag.slug != slug:
            moved[tag.pk] = (key, slug)
            if tag.slug != slug:
                asked.add(tag.pk)
                left.add((tag.kind, tag.slug))
    for pk, (key, slug) in moved.items():
        Tag.objects.filter(pk=pk).update(key=key, slug=slug)
    asked |= {pk for pk, kind_slug in slugs.items() if kind_slug in left}
    TagRefresh.objects.bulk_create(TagRefresh(tag_id=pk, since=None) for pk in sorted(asked))
    return asked


def live_tags_heal() -> int:
    """The full check's repair of the live tags' index: rows by an earlier release's
    keys merged (`tags_by_their_keys`), and the rows of articles that name a tag no
    longer there (an earlier release's completion that read a tag's id as the
    migration merged it away; ArticleTag.tag has no constraint in the database) made
    again from their live versions. How many articles' rows were made again."""
    try:
        with transaction.atomic():
            tags_by_their_keys()
    except (IntegrityError, OperationalError):  # another process meanwhile: the next check
        logger.warning("the full check could not bring the tags to their keys; next time")
    dangling = (
        ArticleTag.objects.exclude(tag_id__in=Tag.objects.values("pk"))
        .values_list("article_id", flat=True)
        .distinct()
    )
    ids = list(dangling)
    if not ids:
        return 0
    with transaction.atomic():
        # Locked as a completion locks them: its own rewrite of the rows waits, or wins.
        articles = list(Article.objects.select_for_update().filter(pk__in=ids).order_by("pk"))
        live_tags_write([a for a in articles if a.published_hash])
        ArticleTag.objects.filter(article_id__in=ids).exclude(
            article_id__in=[a.pk for a in articles if a.published_hash]
        ).delete()
    return len(ids)
