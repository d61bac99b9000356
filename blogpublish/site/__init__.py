"""The static site under SITE_ROOT (docs/site.md). Named in PUBLISH_PUBLISHERS as
`blogpublish.site.StaticSitePublisher`."""

from __future__ import annotations

from blogpublish.site.publisher import StaticSitePublisher

__all__ = ["StaticSitePublisher"]
