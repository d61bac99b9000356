"""Validators of what a writer types; each error says what is wrong and the limit.

Slugs are compared by their key, `slug_key()`: NFKC, then `casefold()` (so `ß` = `ss`,
`ς` = `σ`, `ＡＤＭＩＮ` = `admin`). Two slugs with one key would share a folder on a
case-insensitive file system, and a reserved name is reserved in every spelling.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import UTC, datetime

from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

BODY_MAX_BYTES = 2**20  # 1 MiB of UTF-8
# A slug is a directory name under SITE_ROOT; most file systems allow 255 bytes.
SLUG_MAX_BYTES = 200
# Names the site writes into SITE_ROOT (blogpublish/site/paths.py takes them from here,
# and a unit test holds the two together) and paths the web app serves itself. Keys,
# so lowercase; `sitemap-<n>.xml` and every name starting with "." are reserved too.
SITE_NAMES = frozenset({"index.html", "feed.xml", "sitemap.xml", "page", ".staging"})
RESERVED_SLUGS = SITE_NAMES | frozenset(
    {
        "admin",
        "api",
        "assets",
        "favicon.ico",
        "feed",
        "healthz",
        "media",
        "metrics",
        "robots.txt",
        "static",
        "status",
        "status.json",
        "tag",  # tag/<tag>/: a tag's page and feed (issue 21)
        "author",  # author/<byline>/: a byline's page and feed
    }
)
# sitemap, sitemap.xml, sitemap-9, sitemap-9.xml: the sitemap index and its chunks.
RESERVED_SLUG_RE = re.compile(r"sitemap(-\d+)?(\.xml)?")
# The chunks' prefix: the database's check constraint refuses it followed by digits
# only (Article.Meta; the dotted names are refused there with every other dot).
SITEMAP_CHUNK_PREFIX = "sitemap-"


def slug_key(value: str) -> str:
    """What slugs are compared by: NFKC, casefolded, NFKC again (casefolding can undo
    the normalisation, as Unicode's NFKC_Casefold notes)."""
    folded = unicodedata.normalize("NFKC", value).casefold()
    return unicodedata.normalize("NFKC", folded)


def is_reserved_slug(value: str) -> bool:
    """Is `value`, in any spelling, a name the site or the web app uses for itself?"""
    key = slug_key(value)
    return key.startswith(".") or key in RESERVED_SLUGS or bool(RESERVED_SLUG_RE.fullmatch(key))


# publish_at: years every part can show. Django's admin, Python's datetime and the
# feed cannot show a time past 9999-12-31 or before 0001-01-01 in every TIME_ZONE (a
# zone up to 14 hours from UTC moves 9999-12-31T23:30Z into year 10000): a wide margin.
PUBLISH_AT_MIN_YEAR = 1900
PUBLISH_AT_MAX_YEAR = 9000


def validate_single_line(value: str) -> None:
    # Also U+2028 and U+2029, the line and paragraph separators (a line break in the
    # listings and the feeds' titles, where tags and descriptions have them made spaces).
    if any(ord(ch) < 32 or ch in "\u2028\u2029" for ch in value):
        raise ValidationError(
            _("The title must be one line without control characters."), code="single_line"
        )


def validate_publish_at(value: datetime) -> None:
    """Years PUBLISH_AT_MIN_YEAR to PUBLISH_AT_MAX_YEAR, in UTC."""
    try:
        year = value.astimezone(UTC).year if value.tzinfo is not None else value.year
    except OverflowError:  # outside datetime's own range once in UTC
        year = None
    if year is None or not PUBLISH_AT_MIN_YEAR <= year <= PUBLISH_AT_MAX_YEAR:
        raise ValidationError(
            _("The date must be in the years %(min)d to %(max)d (UTC)."),
            code="publish_at_range",
            params={"min": PUBLISH_AT_MIN_YEAR, "max": PUBLISH_AT_MAX_YEAR},
        )


# A slug's characters: letters and digits of any script with the marks they carry (the
# Indic scripts' and Thai's vowel signs and viramas, Arabic's and Hebrew's points), `-`
# and `_`. Django's unicode slug (`\w`) has no marks: a typed Hindi slug was refused and
# one made from a Hindi title lost its vowels (हिन्दी → हनद), a review's finding.
_MARKS = frozenset({"Mn", "Mc"})


def _slug_char(ch: str) -> bool:
    return ch.isalnum() or ch in "-_" or unicodedata.category(ch) in _MARKS


def validate_slug_chars(value: str) -> None:
    if not value or not all(_slug_char(ch) for ch in value):
        raise ValidationError(
            _(
                "Enter a valid “slug” consisting of letters (any script, with their "
                "marks), numbers, underscores or hyphens."
            ),
            code="invalid",
        )


def _variation_selector(ch: str) -> bool:
    return "\ufe00" <= ch <= "\ufe0f" or "\U000e0100" <= ch <= "\U000e01ef"


def slugify_keeping_marks(value: str) -> str:
    """Django's `slugify(allow_unicode=True)`, keeping the marks letters carry: NFKC,
    lowercase, what is not a slug's character dropped, spaces and hyphens one hyphen,
    none at either end. A mark is kept after a letter or a digit it was written on, not
    after what was dropped, and a variation selector never (an emoji's: "☕️ Coffee"
    made a slug that began with an invisible U+FE0F, a review's finding)."""
    text = unicodedata.normalize("NFKC", str(value)).lower()
    kept: list[str] = []
    carried = False  # the last character kept can carry a mark
    for ch in text:
        if _variation_selector(ch):
            continue
        if unicodedata.category(ch) in _MARKS:
            if carried:
                kept.append(ch)
            continue
        if _slug_char(ch) or ch.isspace():
            kept.append(ch)
            carried = ch.isalnum()
        else:
            carried = False
    return re.sub(r"[-\s]+", "-", "".join(kept)).strip("-_")


def validate_slug_bytes(value: str) -> None:
    size = len(value.encode("utf-8", "surrogatepass"))  # a lone one is refused elsewhere
    if size > SLUG_MAX_BYTES:
        raise ValidationError(
            _("The slug is %(size)d bytes in UTF-8; at most %(max)d fit in a file name."),
            code="slug_too_long",
            params={"size": size, "max": SLUG_MAX_BYTES},
        )


def validate_not_reserved(value: str) -> None:
    if is_reserved_slug(value):
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


# Blank lines before the text, and blank lines, spaces and tabs after it: str methods,
# linear (the regex `[ \t\n]+\Z` was tried from each blank of a run in the middle of a
# body: 40,000 spaces took 9 s, a review's finding).
_BLANKS = " \t\n"


def normalize_body(value: str) -> str:
    """Browsers send a textarea's lines with CRLF; stored and hashed with LF, so saving an
    article unchanged from the admin publishes nothing. The blank lines before the text
    and the blank lines, spaces and tabs after it are dropped (what they change is the
    end of an unclosed code block, nothing a reader sees), as a Markdown file's are when
    it is imported (markdown_files, with this function): an exported article imports
    unchanged, whatever way it was written. Other whitespace at the end (a no-break or
    an ideographic space) is text, kept."""
    text = value.replace("\r\n", "\n").replace("\r", "\n")
    blank_head = len(text) - len(text.lstrip(_BLANKS))
    # From the line the text begins on: its indentation is the text's (a code block).
    text = text[text.rfind("\n", 0, blank_head) + 1 :]
    return text.rstrip(_BLANKS)
