"""The one small interface between the pipeline and what it publishes to.

A publisher is any class named in settings.PUBLISH_PUBLISHERS with

    publish(article) -> None     make this content of the article live; idempotent
    unpublish(article) -> None   take the article off the site; idempotent

raising `TransientPublishError` or `PermanentPublishError` (publishing.exceptions).
Any other exception is treated as transient: a bug is retried, then lands in dead.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Protocol

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.module_loading import import_string

if TYPE_CHECKING:
    from publishing.models import Article


class Publisher(Protocol):
    def publish(self, article: Article) -> None: ...

    def unpublish(self, article: Article) -> None: ...


@cache
def get_publishers() -> tuple[Publisher, ...]:
    return tuple(import_string(path)() for path in settings.PUBLISH_PUBLISHERS)


@receiver(setting_changed)
def _forget_publishers(*, setting: str, **kwargs) -> None:
    if setting.startswith(("PUBLISH_", "SITE_")):
        get_publishers.cache_clear()
