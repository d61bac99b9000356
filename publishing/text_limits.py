"""What a title or body may contain: pure text checks, no HTML (issue 8).

- **Characters XML 1.0 can carry.** The feed and the sitemap are XML; a character
  outside XML 1.0's `Char` production (C0 controls other than tab, newline and
  carriage return; U+FFFE and U+FFFF; lone surrogates, which a JSON `\\ud800` escape can
  produce) cannot be written into them at all. Such text is refused at validation, and
  the site strips it from whatever got past validation (`strip_xml_illegal`).
- **No invisible tricks in a title or a slug.** Bidirectional embeddings, overrides
  and isolates (U+202A–U+202E, U+2066–U+2069) are invisible and reorder what follows
  them on screen (a title ending in U+202E "gpj.exe" reads "exe.jpg"), and C0 and C1
  controls and DEL are no part of a title; all are refused with the character named
  (issue 19). ZWJ, ZWNJ, LRM and RLM stay allowed: Persian, the Indic scripts and emoji
  need them, and they mark direction without overriding it.

Markdown has no limit but its size (`validate_body_size`, 1 MiB): the renderer is linear
by construction (cmark-gfm, blogpublish.rendering; issue 20), so the denylist of slow
shapes python-markdown needed is gone. `validate_markdown_limits` stays by name because
migration 0009 imports it.

Pure functions of the text: the model's validators call them, and so does the site
(blogpublish.site.documents) on whatever got past validation.
"""

from __future__ import annotations

import re
import unicodedata

from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

# XML 1.0 (Fifth Edition) §2.2: Char ::= #x9 | #xA | #xD | [#x20-#xD7FF]
#   | [#xE000-#xFFFD] | [#x10000-#x10FFFF]. Everything else is refused; the range
# excludes the surrogates, so a lone one is caught too.
XML_ILLEGAL_RE = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


# What an HTML page may not hold besides what XML 1.0 cannot carry (the HTML standard's
# "control-character-in-input-stream" and "noncharacter-in-input-stream" parse errors,
# which the Nu checker reports): DEL, the C1 controls and the noncharacters (U+FDD0–
# U+FDEF and the last two code points of every plane). Text in Windows-1252 read as
# Latin-1 has C1 controls for ’ “ ” … (a review's finding: one such body made the front
# page invalid).
#
# Each pattern is one class of what is *allowed*, negated: written as a class of the 34
# astral noncharacters instead, Python's `re` tests every one of them at every character,
# and the whole page's check cost 0.75 ms on a 7 KB page (12x this form; a burst's
# profile, docs/performance.md). tests/unit/test_text_limits.py compares every code point
# with the definition.
_EVERY_PLANE_BUT_ITS_LAST_TWO = "".join(
    f"{chr(plane << 16)}-{chr(plane << 16 | 0xFFFD)}" for plane in range(1, 17)
)
_HTML_ALLOWED = "\x00-\x7e\xa0-\ufdcf\ufdf0-\ufffd" + _EVERY_PLANE_BUT_ITS_LAST_TWO
HTML_ILLEGAL_RE = re.compile(f"[^{_HTML_ALLOWED}]")
# Both: what a page is written without.
PAGE_ILLEGAL_RE = re.compile(
    f"[^\t\n\r\x20-\x7e\xa0-\ud7ff\ue000-\ufdcf\ufdf0-\ufffd{_EVERY_PLANE_BUT_ITS_LAST_TWO}]"
)


# Whitespace but the no-break spaces (U+00A0, the figure space U+2007, the narrow
# U+202F): French writes "M.\u00a0Dupont" and "Bonjour\u202f!", English "10\u00a0km";
# str.split() took them for spaces and made them places a line may break.
_BREAKING_SPACES_RE = re.compile(r"[^\S\u00a0\u2007\u202f]+")


def one_line(value: str) -> str:
    """`value` as one line: each run of spaces and line breaks one space, none at either
    end; the no-break spaces kept as written."""
    return _BREAKING_SPACES_RE.sub(" ", value).strip()


def strip_page_illegal(value: str) -> str:
    """`value` without what an HTML page may not hold (PAGE_ILLEGAL_RE): a row saved
    before validation refused it still makes a valid page."""
    return PAGE_ILLEGAL_RE.sub("", value) if PAGE_ILLEGAL_RE.search(value) else value


def first_xml_illegal(value: str) -> tuple[int, str] | None:
    """The first character XML 1.0 cannot carry, as (1-based position, character)."""
    match = XML_ILLEGAL_RE.search(value)
    return (match.start() + 1, match.group()) if match else None


def strip_xml_illegal(value: str) -> str:
    """`value` without the characters XML 1.0 cannot carry (linear; a no-op copy-free
    return when there are none, which is nearly always)."""
    return XML_ILLEGAL_RE.sub("", value) if XML_ILLEGAL_RE.search(value) else value


def _refuse_first(pattern: re.Pattern, value: str, message, code: str) -> None:
    """Raise `message` for the first match of `pattern` in `value`, with its params:
    the character as `code` (its number) and `char` (U+XXXX and its name), and its
    1-based `position`."""
    match = pattern.search(value)
    if match is None:
        return
    char = match.group()
    params = {"code": ord(char), "char": char_name(char), "position": match.start() + 1}
    raise ValidationError(message, code=code, params=params)


def char_name(char: str) -> str:
    """U+202E RIGHT-TO-LEFT OVERRIDE; a control character has no name in Unicode."""
    name = unicodedata.name(char, "")
    if not name:
        code = ord(char)
        nonchar = 0xFDD0 <= code <= 0xFDEF or code & 0xFFFE == 0xFFFE
        name = "a noncharacter" if nonchar else "a control character"
    return f"U+{ord(char):04X} {name}"


def validate_xml_chars(value: str) -> None:
    """Refuse what the feed could not carry, naming the first such character."""
    message = _(
        "U+%(code)04X at position %(position)d is a character the feed (XML 1.0) "
        "cannot carry; remove it."
    )
    _refuse_first(XML_ILLEGAL_RE, value, message, "xml_char")


def validate_html_chars(value: str) -> None:
    """Refuse what a web page may not hold (HTML_ILLEGAL_RE), naming the first."""
    message = _(
        "%(char)s at position %(position)d is a character a web page may not hold "
        "(text in Windows-1252 read as Latin-1 has such control characters for ’ “ ” …); "
        "remove it, or fix the text's encoding."
    )
    _refuse_first(HTML_ILLEGAL_RE, value, message, "html_char")


# C0 controls, DEL, C1 controls; the bidirectional embeddings, overrides (U+202A-U+202E)
# and isolates (U+2066-U+2069). Not U+200C-U+200F (ZWNJ, ZWJ, LRM, RLM).
DISPLAY_TRICK_RE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def validate_display_chars(value: str) -> None:
    """Refuse a control character or a bidirectional override, naming the first."""
    message = _(
        "%(char)s at position %(position)d is an invisible control character that "
        "changes how the text is shown; remove it."
    )
    _refuse_first(DISPLAY_TRICK_RE, value, message, "display_char")


# Characters that show nothing: spaces, format characters (zero-width ones, the soft
# hyphen, the BOM), marks with no letter to sit on, and the letters Unicode made to look
# blank (the Hangul fillers, the braille blank).
_BLANK_CATEGORIES = frozenset({"Zs", "Zl", "Zp", "Cf", "Cc", "Mn", "Me"})
_BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")


def shows_something(value: str) -> bool:
    """Has `value` one character a reader sees? Stops at the first (linear at worst)."""
    return any(
        ch not in _BLANK_LETTERS and unicodedata.category(ch) not in _BLANK_CATEGORIES
        for ch in value
    )


def validate_visible(value: str) -> None:
    """Refuse text that shows nothing (a title of zero-width spaces was a link with no
    text on the front page: a review's finding); empty text is the field's own rule."""
    if value and not shows_something(value):
        raise ValidationError(
            _("It shows nothing: only spaces or invisible characters; write some text."),
            code="invisible",
        )


# GitHub's tables: cmark-gfm pads every row of a table to its header's width, so a row of
# one character costs the header's columns: a 500-column header over thousands of short
# rows is millions of cells (hundreds of MB of HTML, gigabytes of memory) from 100 KB of
# text (found by the issue 19 review). A real table stays far below this many cells.
MAX_TABLE_CELLS = 100_000
_DASH_RUN = re.compile(r"-+")


def table_cells(text: str) -> int:
    """How many cells the tables of `text` can make at most, counted in one pass: from a
    delimiter row (`|---|:--:|`) on, each line up to a blank one is a row of as many
    cells as the delimiter row has columns (more than cmark-gfm may take as rows: a
    bound, never an underestimate)."""
    total = columns = 0
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            columns = 0
        elif columns:
            total += columns
        elif "|" in stripped and "-" in stripped and not stripped.strip("|:- \t"):
            columns = len(_DASH_RUN.findall(stripped))
    return total


def table_cells_problem(text: str) -> str | None:
    """Why the text's tables are too large to render, or None."""
    cells = table_cells(text)
    if cells <= MAX_TABLE_CELLS:
        return None
    return (
        f"its tables would make {cells:,} cells (each row gets as many cells as its "
        f"table's header has columns); at most {MAX_TABLE_CELLS:,}"
    )


# GitHub's footnotes: each reference becomes a link, and the footnote a way back to it
# (each with its own id and label): a reference of five characters ("[^1] ") renders as
# about 180 bytes, 36 times its size (a review: 1 MiB of them made a 58 MB page and
# 70 MB feeds, and every later feed pass rendered it again). Counted as every "[^" in
# the text: a bound (a regular expression's "[^a-z]" counts too); an article has tens.
MAX_FOOTNOTE_REFERENCES = 5_000


def footnotes_problem(text: str) -> str | None:
    """Why the text has too many footnote references to render, or None."""
    references = text.count("[^")
    if references <= MAX_FOOTNOTE_REFERENCES:
        return None
    return (
        f"it has {references:,} footnote references (“[^”), each of which renders as a "
        f"link and a link back; at most {MAX_FOOTNOTE_REFERENCES:,}"
    )


def amplification_problem(text: str) -> str | None:
    """Why the text would render many times its size (its tables, its footnotes), or
    None: the shapes whose HTML grows faster than the text."""
    return table_cells_problem(text) or footnotes_problem(text)


def validate_markdown_limits(value: str) -> None:
    """Accepts every text. Kept for migration 0009, which names it: the shape limits it
    held went with python-markdown (issue 20); the body's one limit is its size."""
