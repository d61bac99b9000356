"""System checks of the site's configuration (`manage.py check`, and every start)."""

from __future__ import annotations

from django.conf import settings
from django.core.checks import Tags, Warning, register
from django.db import connections

from work.site_root import parse_site_root


@register()
def sqlite_with_object_storage(app_configs, **kwargs) -> list[Warning]:
    """Object storage is how several hosts share one site; SQLite is one host's database,
    and the site's guards (blogpublish.site.lock) are only as wide as the database: on
    SQLite they are its file lock, which no other host sees."""
    if not parse_site_root(str(settings.SITE_ROOT)).is_s3:
        return []
    if connections["default"].vendor != "sqlite":
        return []
    return [
        Warning(
            f"SITE_ROOT is object storage ({settings.SITE_ROOT}) but the database is SQLite.",
            hint=(
                "SQLite serves one host only: run every worker on this host, or use "
                "PostgreSQL (DATABASE_URL=postgres://…) so that workers on several hosts "
                "are kept apart (docs/operations.md, 'Where the site lives')."
            ),
            id="blogpublish.W001",
        )
    ]


@register(Tags.security, deploy=True)
def site_url_set(app_configs, **kwargs) -> list[Warning]:
    """A deployment that sets no SITE_URL names `make run`'s local address in every feed,
    sitemap, canonical link and webhook (`check --deploy`)."""
    if settings.DEBUG or settings.SITE_URL != settings.SITE_URL_DEFAULT:
        return []
    return [
        Warning(
            f"SITE_URL is not set: the feeds, sitemap, canonical links and webhooks name "
            f"{settings.SITE_URL_DEFAULT}.",
            hint="Set SITE_URL to the blog's public address (e.g. https://blog.example.com).",
            id="blogpublish.W002",
        )
    ]
