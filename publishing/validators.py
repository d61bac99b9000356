"""Validators of what a writer types; each error says what is wrong and the limit."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

BODY_MAX_BYTES = 2**20  # 1 MiB of UTF-8
# A slug is a directory name under SITE_ROOT; most file systems allow 255 bytes.
SLUG_MAX_BYTES = 200
# Paths the site or the web app use for themselves.
RESERVED_SLUGS = frozenset(
    {"admin", "page", "static", "media", "assets", "feed", "healthz", "metrics", "status"}
)


def validate_single_line(value: str) -> None:
    if any(ch in value for ch in "\r\n\t\x00") or any(ord(ch) < 32 for ch in value):
        raise ValidationError(
            _("The title must be one line without control characters."), code="single_line"
        )


def validate_slug_bytes(value: str) -> None:
    size = len(value.encode("utf-8", "surrogatepass"))  # a lone one is refused elsewhere
    if size > SLUG_MAX_BYTES:
        raise ValidationError(
            _("The slug is %(size)d bytes in UTF-8; at most %(max)d fit in a file name."),
            code="slug_too_long",
            params={"size": size, "max": SLUG_MAX_BYTES},
        )


def validate_not_reserved(value: str) -> None:
    if value in RESERVED_SLUGS:
        raise ValidationError(
            _("“%(slug)s” is used by the site itself; choose another slug."),
            code="slug_reserved",
            params={"slug": value},
        )


def validate_body_size(value: str) -> None:
    size = len(value.encode("utf-8", "surrogatepass"))  # a lone one is refused elsewhere
    if size > BODY_MAX_BYTES:
        raise ValidationError(
            _("The body is %(size)s bytes; the limit is %(max)s bytes (1 MiB)."),
            code="body_too_large",
            params={"size": f"{size:,}", "max": f"{BODY_MAX_BYTES:,}"},
        )
