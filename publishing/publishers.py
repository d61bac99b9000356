"""The one small interface between the pipeline and what it publishes to.

A publisher is any class named in settings.PUBLISH_PUBLISHERS, built with no
arguments, with

    publish(article) -> None     make this content of the article live. Called while
                                 the attempt holds its lease, before it completes.
                                 Idempotent.
    unpublish(article) -> None   the article was deleted: take it off. `article` is an
                                 unsaved Article carrying id, uid, slug, published_slug
                                 and title. Idempotent.

and, optionally,

    forget(article) -> None      the article is being deleted: called inside the
                                 delete's transaction (same `article` as unpublish),
                                 so what must go is known even if no message arrives.
    refresh() -> None            bring shared views (index, feed, …) in line with the
                                 database. Run by the coalescing refresher
                                 (publishing.services.refresh), one pass at a time on
                                 any host, after outcomes and deletes have committed.
                                 Cheap: its cost follows what changed, not the site.
    reconcile() -> None          the full check, from the catch-up now and then: remove
                                 whatever the database no longer has, then refresh.
    publish_many(articles) -> dict[int, Exception]
                                 `publish` for a batch's articles (publishing.services.
                                 batches): each with `publish`'s guarantees, the
                                 failures returned by article id instead of raised, so
                                 one article's failure is its own. A publisher without
                                 it is called with `publish`, article by article.

`publish` and `unpublish` raise `TransientPublishError` or `PermanentPublishError`
(publishing.exceptions); any other exception is treated as transient: a bug is
retried, then lands in dead. `refresh` and `reconcile` failures are logged and the
pass is wanted again; `forget` failing fails the delete.
"""

from __future__ import annotations

import logging
from functools import cache
from typing import TYPE_CHECKING, Protocol

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.module_loading import import_string

if TYPE_CHECKING:
    from publishing.models import Article

logger = logging.getLogger(__name__)


class Publisher(Protocol):
    def publish(self, article: Article) -> None: ...

    def unpublish(self, article: Article) -> None: ...


@cache
def get_publishers() -> tuple[Publisher, ...]:
    return tuple(import_string(path)() for path in settings.PUBLISH_PUBLISHERS)


def run_optional_hook(name: str, *args, raising: bool = False) -> None:
    """Call `name(*args)` on every publisher that has it; failures are logged and, with
    `raising`, the first one is raised once every publisher had its call."""
    failure: Exception | None = None
    for publisher in get_publishers():
        hook = getattr(publisher, name, None)
        if hook is None:
            continue
        try:
            hook(*args)
        except Exception as exc:
            logger.exception("%s.%s() failed", type(publisher).__name__, name)
            failure = failure or exc
    if raising and failure is not None:
        raise failure


@receiver(setting_changed)
def _forget_publishers(*, setting: str, **kwargs) -> None:
    if setting.startswith(("PUBLISH_", "SITE_")):
        get_publishers.cache_clear()
