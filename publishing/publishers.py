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

    refresh() -> None            bring shared views (index, feed, …) in line with the
                                 database; called after an attempt's outcome and a
                                 delete have committed. Cheap: its cost must not grow
                                 with the number of articles.
    reconcile() -> None          the full check, from the catch-up: remove whatever the
                                 database no longer has (a delete made while the broker
                                 was down), then refresh.

`publish` and `unpublish` raise `TransientPublishError` or `PermanentPublishError`
(publishing.exceptions); any other exception is treated as transient: a bug is
retried, then lands in dead. `refresh` and `reconcile` failures are logged; the
catch-up runs `reconcile` again later.
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


def run_optional_hook(name: str) -> None:
    """Call `name()` on every publisher that has it; log failures, never raise."""
    for publisher in get_publishers():
        hook = getattr(publisher, name, None)
        if hook is None:
            continue
        try:
            hook()
        except Exception:
            logger.exception("%s.%s() failed", type(publisher).__name__, name)


@receiver(setting_changed)
def _forget_publishers(*, setting: str, **kwargs) -> None:
    if setting.startswith(("PUBLISH_", "SITE_")):
        get_publishers.cache_clear()
