"""What readers see beside the text (issue 21): a description, the language, a byline
and tags. Pure functions: normalising and validating these fields, shared by the
article, its story's draft, the import and the API.

These are content: they are in the content hash and the live version, so changing one
republishes the article as an edit of its body does (publishing.models).
"""

from __future__ import annotations

import csv
import functools
import hashlib
import re
import unicodedata
from collections.abc import Iterable

from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from publishing.text_limits import (
    one_line,
    validate_display_chars,
    validate_html_chars,
    validate_visible,
    validate_xml_chars,
)
from publishing.validators import SLUG_MAX_BYTES, slugify_keeping_marks

DESCRIPTION_MAX_LENGTH = 1000
BYLINE_MAX_LENGTH = 200
LANGUAGE_MAX_LENGTH = 35
TAG_MAX_LENGTH = 100
TAGS_MAX = 50
# The longest key (tag_key) a tag or a byline may have: the Tag row's column. NFKC and
# casefold lengthen some text (one "ﷺ" is 18 characters once normalised), so a tag
# within TAG_MAX_LENGTH can have a longer key: refused when it is, at validation,
# instead of failing its publish's completion on PostgreSQL (SQLite keeps any length).
TAG_KEY_MAX_LENGTH = 4 * max(TAG_MAX_LENGTH, BYLINE_MAX_LENGTH)
# A well-formed BCP 47 tag (RFC 5646, section 2.1: the subtags in their order and
# sizes; the registry is not read), which is also RFC 4287's atomLanguageTag, as `lang`
# and JSON Feed take it. The primary subtag is 2 or 3 letters (those of 4 to 8 are
# reserved, none registered: `english` is no tag, and the Nu checker refuses it, a
# review's finding); a singleton is followed by its subtags (`en-x` is not a tag).
LANGUAGE_RE = re.compile(
    r"(?:[A-Za-z]{2,3}(?:-[A-Za-z]{3}){0,3}"  # language, extended language subtags
    r"(?:-[A-Za-z]{4})?"  # script
    r"(?:-(?:[A-Za-z]{2}|[0-9]{3}))?"  # region
    r"(?:-(?:[A-Za-z0-9]{5,8}|[0-9][A-Za-z0-9]{3}))*"  # variants
    r"(?:-[0-9A-WYZa-wyz](?:-[A-Za-z0-9]{2,8})+)*"  # extensions
    r"(?:-[Xx](?:-[A-Za-z0-9]{1,8})+)?"  # private use
    r"|[Xx](?:-[A-Za-z0-9]{1,8})+"  # private use alone
    r"|[Ii]-[A-Za-z]{2,8})"  # the grandfathered i- tags (i-klingon)
)


def _one_line(value: str, what: str) -> None:
    if any(ord(ch) < 32 or ch == "\x7f" for ch in value):
        raise ValidationError(
            _("The %(what)s must be one line without control characters."),
            code="single_line",
            params={"what": what},
        )


def validate_byline(value: str) -> None:
    _one_line(value, "byline")
    _key_fits(value, "byline")


def _key_fits(value: str, what: str) -> None:
    if len(tag_key(value)) > TAG_KEY_MAX_LENGTH:
        raise ValidationError(
            _(
                "The %(what)s “%(value)s…” grows past %(max)d characters once normalised "
                "(NFKC): write it with fewer ligatures or compatibility characters."
            ),
            code="key_long",
            params={"what": what, "value": value[:40], "max": TAG_KEY_MAX_LENGTH},
        )


def validate_description(value: str) -> None:
    if "\x00" in value:
        raise ValidationError(_("The description has a NUL character."), code="nul")


def validate_language(value: str) -> None:
    if value and not LANGUAGE_RE.fullmatch(value):
        raise ValidationError(
            _("“%(value)s” is not a language tag: write it as en, fr, pt-BR or zh-Hans."),
            code="language",
            params={"value": value[:40]},
        )


def normalize_language(value: str) -> str:
    """A language tag as stored: `en_US` (a locale, as Jekyll sites write it) is `en-US`."""
    return (value or "").strip().replace("_", "-")


# Spaces and hyphens between a tag's words, as one: "machine learning", "Machine-Learning"
# and "machine - learning" are one tag (as Hugo, whose taxonomy pages are by the term
# made a URL, and WordPress, whose terms are by slug, take them).
_WORD_BREAKS_RE = re.compile(r"[\s-]+")
# The hash a tag's slug ends with when the key is not a slug (tag_slug): 64 bits, so
# that no two tags share a folder by chance (32 bits met after some 50,000 tries).
HASH_CHARS = 16
# How a slug with a hash ends: a slug without one never ends so.
_HASHED_RE = re.compile(rf"(?:^|-)[0-9a-f]{{{HASH_CHARS}}}$")


def tag_key(name: str) -> str:
    """What two tags are compared by: "Python", "python" and "ＰＹＴＨＯＮ" are one tag,
    and so are "Machine learning" and "machine-learning"."""
    return _WORD_BREAKS_RE.sub("-", unicodedata.normalize("NFKC", name).casefold().strip())


def distinct_tags(names: Iterable[str]) -> list[str]:
    """`names` with the first spelling of each tag (tag_key) kept, in order: an article
    saved before two spellings were one tag may carry both."""
    seen: set[str] = set()
    kept = []
    for name in names:
        if (key := tag_key(name)) not in seen:
            seen.add(key)
            kept.append(name)
    return kept


@functools.lru_cache(maxsize=4096)  # pure; every page of a tagged burst asks again
def tag_slug(name: str) -> str:
    """The folder of a tag's page (tag/<slug>/): its key when that is a slug already,
    unicode letters kept with the marks they carry (हिन्दी: migration 0030); otherwise
    ("c++", "c#" are both "c") the key made a slug and a short hash of the key after
    it, and so is a key that ends as a hash does (a tag named as the folder of "c++"
    is), so two tags share no folder (but by a 64-bit hash's collision). A slug longer
    than an article's may be (SLUG_MAX_BYTES of UTF-8: a folder's name, and the name it
    takes when it is moved aside to be removed, must fit in a file name's 255 bytes; 100
    Chinese characters are 300) is cut, and the hash follows. Pure: a page links to a
    tag without a query."""
    key = tag_key(name)
    slug = slugify_keeping_marks(key)
    fits = len(slug.encode("utf-8")) <= SLUG_MAX_BYTES
    if fits and slug == key and not _HASHED_RE.search(slug):
        return slug
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:HASH_CHARS]
    if not fits:  # cut at a character, the hash and its "-" within the limit
        cut = SLUG_MAX_BYTES - HASH_CHARS - 1
        slug = slug.encode("utf-8")[:cut].decode("utf-8", "ignore").rstrip("-")
    return f"{slug}-{digest}" if slug else digest


def normalize_tags(value: object) -> list[str]:
    """A list of tags as stored: each stripped, the empty ones dropped, the first
    spelling of each (tag_key) kept in order. Text is a comma-separated list, as a
    form field gives it. Anything else is returned as it is, for the validator."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        value = _split_tags(value)
    if not isinstance(value, list | tuple):
        return value  # type: ignore[return-value]
    if not all(isinstance(tag, str) for tag in value):
        return list(value)  # the validator names it
    lines = (one_line(tag) for tag in value)  # single spaces, a no-break one kept
    return distinct_tags(tag for tag in lines if tag)


def validate_tags(value: object) -> None:
    if not isinstance(value, list) or not all(isinstance(tag, str) for tag in value):
        raise ValidationError(_("Tags must be a list of text."), code="tags_type")
    if len(value) > TAGS_MAX:
        raise ValidationError(
            _("%(n)d tags; at most %(max)d."),
            code="tags_many",
            params={"n": len(value), "max": TAGS_MAX},
        )
    for tag in value:
        if len(tag) > TAG_MAX_LENGTH:
            raise ValidationError(
                _("The tag “%(tag)s…” is longer than %(max)d characters."),
                code="tag_long",
                params={"tag": tag[:40], "max": TAG_MAX_LENGTH},
            )
        _one_line(tag, "tag")
        _key_fits(tag, "tag")
        validate_xml_chars(tag)
        validate_display_chars(tag)
        validate_html_chars(tag)
        validate_visible(tag)


def _split_tags(text: str) -> list[str]:
    """A comma-separated list of tags, a tag with a comma in it in double quotes, as
    `tags_text` writes it (CSV's quoting: "Hello, World", python)."""
    line = " ".join(text.splitlines())
    try:
        return next(csv.reader([line], skipinitialspace=True), [])
    except csv.Error:  # a field past csv's limit (128 KiB): the validator names its size
        return line.split(",")


def unclosed_quote(text: str) -> str | None:
    """Where a list of tags typed as one line opens a double quote at a tag's start and
    never closes it, the text from that quote on (cut to 40 characters); else None.
    Read as it is, such a quote takes the rest of the line as one tag ('python, "Hello,
    World' → "Hello, World"), which is rarely what was meant: the form refuses it."""
    if '"' not in text:  # nearly always; an 8 MiB line of commas took seconds below
        return None
    line = " ".join(text.splitlines())
    at = 0
    while True:
        while line[at : at + 1] == " ":  # CSV's skipinitialspace, as _split_tags reads
            at += 1
        if line[at : at + 1] == '"':
            opened, at = at, at + 1
            while True:
                at = line.find('"', at)
                if at < 0:
                    rest = line[opened:]
                    return rest if len(rest) <= 40 else rest[:39] + "…"
                if line[at + 1 : at + 2] != '"':  # "" is a quote inside the tag
                    break
                at += 2
        at = line.find(",", at)
        if at < 0:
            return None
        at += 1


def tags_text(tags: Iterable[str]) -> str:
    """Tags as a form field shows them: "python, 数据库, web"; a tag with a comma in it
    (or that starts with a double quote) quoted, so saving the form unchanged keeps
    it whole ("Hello, World" came back as two tags: a review's finding)."""
    return ", ".join(
        '"' + tag.replace('"', '""') + '"' if "," in tag or tag.startswith('"') else tag
        for tag in tags
    )
