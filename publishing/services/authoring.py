"""What a writer does: create and edit articles. Every way in (the admin, the API, the
import, a program) goes through these, so all of them normalise and validate alike.

`Article.save()` refuses invalid content too (the shell and any other code are held to
the same rules), and the database's check constraints refuse what SQL can express
(for `bulk_create` and `update()`, which bypass `save()`); these functions add the
whole of `full_clean()`: uniqueness with a clear message, and one error per field.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from publishing.dispatch import dispatch_when_due
from publishing.models import (
    CONTENT_FIELDS,
    READER_FIELDS,
    Article,
    new_message_id,
    slug_from_title,
)
from work.db import after_commit


def reborn_claims() -> int:
    """The fencing token of a row made again under an id it had (a story published
    again after a withdraw or the trash: its Article was deleted and is inserted anew):
    the time in milliseconds, past any token its former row reached (one a claim, each
    claim at least a lease apart, and fewer than the milliseconds since). From 0, a
    claim of the former row's, its worker paused past the withdraw, held the new row's
    first token and put it dead with its late failure (a review's finding)."""
    return time.time_ns() // 1_000_000


def _article(
    *,
    title: str,
    body: str,
    slug: str = "",
    publish_at: datetime | None = None,
    article_id: int | None = None,
    **reader: Any,
) -> Article:
    unknown = set(reader) - set(READER_FIELDS)
    if unknown:
        raise TypeError(f"not an article's content: {', '.join(sorted(unknown))}")
    article = Article(id=article_id, title=title, body=body, slug=slug, **reader)
    if article_id is not None:
        article.claims = reborn_claims()
    if publish_at is not None:
        article.publish_at = publish_at
    return article


def article_create(
    *,
    title: str,
    body: str,
    slug: str = "",
    publish_at: datetime | None = None,
    article_id: int | None = None,
    **reader: Any,
) -> Article:
    """A new pending article (the slug made from the title when blank); ValidationError
    with a message per field, and nothing stored, when the content is not acceptable.
    `article_id` is a story's (publishing.services.stories): its Article takes its id;
    `reader`: the reader fields (READER_FIELDS: description, language, byline, tags)."""
    article = _article(
        title=title, body=body, slug=slug, publish_at=publish_at, article_id=article_id, **reader
    )
    article.full_clean()
    article.save()
    return article


def article_update(*, article: Article, **fields) -> Article:
    """Change what a writer edits (title, slug, body, publish_at, the reader fields) and
    save; edited content becomes pending again (Article.save). A ValidationError leaves `article`
    as it was."""
    unknown = set(fields) - set(CONTENT_FIELDS)
    if unknown:
        raise TypeError(f"not an article's content: {', '.join(sorted(unknown))}")
    before = {name: getattr(article, name) for name in fields}
    for name, value in fields.items():
        setattr(article, name, value)
    try:
        article.full_clean()
        article.save()
    except ValidationError:
        for name, value in before.items():  # the caller's copy stays what is stored
            setattr(article, name, value)
        raise
    return article


def articles_create_many(rows: Iterable[Mapping]) -> list[Article]:
    """Create many articles at once, each validated as `article_create` validates it.

    `Article.objects.bulk_create()` does not call `save()`, so it does not validate
    (only the database's constraints hold, with an IntegrityError); this is the bulk
    path that does. All or nothing: one invalid row raises a ValidationError naming
    each bad row (`row 3: slug: …`) and stores none. The rows go in one INSERT, and
    each is sent to be published after the commit, as a save would."""
    articles: list[Article] = []
    errors: list[str] = []
    keys: set[str] = set()
    for number, row in enumerate(rows, start=1):
        article = _article(**row)
        try:
            article.clean_fields()
            if not article.slug:
                base = slug_from_title(article.title)
                article.slug = article._unique_slug(base, also_taken=keys)
            article.full_clean()
            article.fill_slug_keys()
            if article.slug_key in keys:
                raise ValidationError({"slug": "the same slug as an earlier row"})
        except ValidationError as exc:
            errors += [
                f"row {number}: {field}: {m}" for field, ms in exc.message_dict.items() for m in ms
            ]
            continue
        keys.add(article.slug_key)
        article.content_hash = article._content_hash()
        article.message_id = new_message_id()
        articles.append(article)
    if errors:
        raise ValidationError(errors)
    with transaction.atomic():
        created = Article.objects.bulk_create(articles)
        for article in created:
            after_commit(
                dispatch_when_due,
                article_id=article.pk,
                publish_at=article.publish_at,
                task_id=article.message_id,
            )
    return created
