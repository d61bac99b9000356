"""The static site under SITE_ROOT (docs/site.md). Named in PUBLISH_PUBLISHERS as
`blogpublish.site.StaticSitePublisher`."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from blogpublish.site.publisher import StaticSitePublisher

__all__ = ["StaticSitePublisher"]


def __getattr__(name: str):
    # Imported when first named, so that blogpublish.storage may use blogpublish.site's
    # small modules (paths) without importing the publisher, which imports the storage.
    if name == "StaticSitePublisher":
        from blogpublish.site.publisher import StaticSitePublisher

        return StaticSitePublisher
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
