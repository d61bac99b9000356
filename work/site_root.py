"""SITE_ROOT: where the site is written, read as a local folder or a bucket.

`/abs/path` is a local folder; `s3://BUCKET/PREFIX` is S3-compatible object storage
(AWS S3, MinIO, Cloudflare R2, …; the prefix is optional). Anything else (a relative
path, `s3:` alone, `s3://` without a bucket, another scheme) is refused with a message
that says what is expected: a mistake here would otherwise write the blog somewhere
nobody serves it (issue 10: `s3://blog/site` once made a local folder named `s3:`).
A pure function, so config/checks.py and blogpublish.storage read it the same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

# S3's rules for new buckets (also MinIO's and R2's): 3-63 characters of lowercase
# letters, digits, dots and hyphens, beginning and ending with a letter or digit.
# https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html
_BUCKET_RE = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_EXPECTED = "an absolute path (/srv/blog/site) or s3://BUCKET/PREFIX"


@dataclass(frozen=True)
class SiteRoot:
    kind: str  # "local" or "s3"
    path: Path | None = None  # local
    bucket: str = ""  # s3
    prefix: str = ""  # s3: the keys' common prefix, without slashes at either end

    @property
    def is_s3(self) -> bool:
        return self.kind == "s3"

    def __str__(self) -> str:
        if self.is_s3:
            return f"s3://{self.bucket}/{self.prefix}" if self.prefix else f"s3://{self.bucket}"
        return str(self.path)


def parse_site_root(value: str | Path) -> SiteRoot:
    """The SITE_ROOT setting read; ValueError with a message naming it when unusable."""
    text = str(value).strip()
    if not text:
        raise ValueError(f"SITE_ROOT is empty; give {_EXPECTED}.")
    if text.lower().startswith("s3:"):
        return _parse_s3(text)
    if "://" in text:
        raise ValueError(
            f"SITE_ROOT={text!r}: only s3:// URLs are supported as object storage; give "
            f"{_EXPECTED}."
        )
    if "\x00" in text:
        raise ValueError("SITE_ROOT holds a NUL character.")
    path = Path(text)
    if not path.is_absolute():
        raise ValueError(
            f"SITE_ROOT={text!r} is a relative path, which would depend on the directory "
            f"each process starts in; give {_EXPECTED}."
        )
    return SiteRoot(kind="local", path=path)


def _parse_s3(text: str) -> SiteRoot:
    if not text.startswith("s3://"):
        raise ValueError(f"SITE_ROOT={text!r} is not an s3:// URL; give {_EXPECTED}.")
    rest = text[len("s3://") :]
    if any(c in rest for c in "?#\\") or any(ord(c) < 0x20 or c == "\x7f" for c in rest):
        raise ValueError(f"SITE_ROOT={text!r}: write the URL as s3://BUCKET/PREFIX, no more.")
    bucket, _, prefix = rest.partition("/")
    if not bucket:
        raise ValueError(f"SITE_ROOT={text!r} names no bucket; give s3://BUCKET/PREFIX.")
    if not _BUCKET_RE.match(bucket) or ".." in bucket:
        raise ValueError(
            f"SITE_ROOT={text!r}: {bucket!r} is not a valid bucket name (3-63 lowercase "
            "letters, digits, dots and hyphens, beginning and ending with a letter or digit)."
        )
    prefix = prefix.strip("/")
    parts = prefix.split("/") if prefix else []
    if any(part in ("", ".", "..") for part in parts):
        raise ValueError(
            f"SITE_ROOT={text!r}: the prefix may not hold empty, '.' or '..' segments."
        )
    return SiteRoot(kind="s3", bucket=bucket, prefix=str(PurePosixPath(*parts)) if parts else "")
