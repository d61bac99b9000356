"""The live tags' index (`ArticleTag`): which live article carries which tag, written
with the live version so a tag's page is one index range (docs/site.md, "Tags")."""

from __future__ import annotations

from collections.abc import Iterable

from publishing.models import Article, ArticleTag, Tag, tags_refresh
from publishing.reader_fields import tag_key, tag_slug


def live_tags_write(articles: Iterable[Article]) -> None:
    """Replace the index rows of `articles` (each with `published_tags` and
    `published_publish_at` as just made live), in the caller's transaction: one DELETE,
    and when any has tags, one INSERT of new tags (in key order, so two completions
    adding the same new tags wait for each other instead of deadlocking), one read of
    their ids and one INSERT of the rows; then one INSERT asking for the pages of the
    tags it touched, old and new (TagRefresh)."""
    articles = list(articles)
    if not articles:
        return
    before = ArticleTag.objects.filter(article_id__in=[a.pk for a in articles])
    touched = set(before.values_list("tag_id", flat=True))
    before.delete()
    wanted: dict[int, tuple[dict[str, str], object]] = {}
    names: dict[str, str] = {}
    for article in articles:
        tags = {}
        for name in article.published_tags or []:
            if isinstance(name, str) and name.strip():
                tags.setdefault(tag_key(name), name)
        wanted[article.pk] = (tags, article.published_publish_at)
        for key, name in tags.items():
            names.setdefault(key, name)
    if names:
        keys = sorted(names)
        Tag.objects.bulk_create(
            [Tag(key=k, name=names[k], slug=tag_slug(names[k])) for k in keys],
            ignore_conflicts=True,
        )
        ids = dict(Tag.objects.filter(key__in=keys).values_list("key", "id"))
        ArticleTag.objects.bulk_create(
            ArticleTag(article_id=pk, tag_id=ids[key], publish_at=when)
            for pk, (tags, when) in wanted.items()
            for key in tags
        )
        touched |= set(ids.values())
    tags_refresh(touched)
