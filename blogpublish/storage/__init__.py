"""Where the site is stored: SITE_ROOT as a local folder or S3-compatible object
storage (blogpublish.storage.base describes the seam)."""

from __future__ import annotations

import functools
import os

from django.conf import settings

from blogpublish.storage.base import SiteStorage, Staged, content_type_of
from work.site_root import parse_site_root

__all__ = ["SiteStorage", "Staged", "content_type_of", "site_storage", "storage_for"]


def site_storage() -> SiteStorage:
    """The storage SITE_ROOT names, read when used (a test may change the setting)."""
    return storage_for(
        str(settings.SITE_ROOT),
        settings.AWS_ENDPOINT_URL,
        settings.AWS_ACCESS_KEY_ID,
        settings.AWS_DEFAULT_REGION,
    )


@functools.lru_cache(maxsize=8)
def storage_for(site_root: str, *_config: object) -> SiteStorage:
    """One storage (and so one boto3 connection per thread) per configuration."""
    where = parse_site_root(site_root)
    if where.is_s3:
        from blogpublish.storage.s3 import S3SiteStorage  # boto3 only when it is used

        return S3SiteStorage(bucket=where.bucket, prefix=where.prefix)
    from blogpublish.storage.local import LocalStorage

    if where.path is None:  # parse_site_root gives every local root its path
        raise ValueError(f"SITE_ROOT={site_root!r} names no folder")
    return LocalStorage(where.path)


# A forked worker child makes its own connections: boto3's pools are not shared across
# a fork.
os.register_at_fork(after_in_child=storage_for.cache_clear)
