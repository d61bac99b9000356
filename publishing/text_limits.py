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
- **Markdown the renderer reads in bounded time**: nesting, runs of emphasis marks,
  brackets and dense paragraphs under limits no real article comes near
  (`markdown_complexity_problems`, linear; the limits and measurements are in
  docs/site.md, "Rendering").

Pure functions of the text: the model's validators call them, and so does the renderer
(blogpublish.rendering) before it renders.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left

from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

# XML 1.0 (Fifth Edition) §2.2: Char ::= #x9 | #xA | #xD | [#x20-#xD7FF]
#   | [#xE000-#xFFFD] | [#x10000-#x10FFFF]. Everything else is refused; the range
# excludes the surrogates, so a lone one is caught too.
XML_ILLEGAL_RE = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


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
    return f"U+{ord(char):04X} {name or 'a control character'}"


def validate_xml_chars(value: str) -> None:
    """Refuse what the feed could not carry, naming the first such character."""
    message = _(
        "U+%(code)04X at position %(position)d is a character the feed (XML 1.0) "
        "cannot carry; remove it."
    )
    _refuse_first(XML_ILLEGAL_RE, value, message, "xml_char")


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


# --- Markdown the renderer reads in bounded time ----------------------------------------
#
# python-markdown has paths whose cost grows with the square of the input, or whose
# recursion follows the nesting (measured in docs/site.md, "Rendering"). Rather than
# trust a time limit to stop them, the body is held to limits no real article comes
# near, checked in linear time before rendering: at validation, and again by the
# renderer (blogpublish.rendering), so a row that got past validation is refused there
# in milliseconds instead of holding a worker until its time limit, five times.

# Blockquotes and lists nested deeper than this (a real article rarely goes past 4).
MAX_NESTING = 16
# Consecutive emphasis marks ("*", "_", in any mix): "***" is bold italic, so 3 is all
# Markdown ever needs; 64 leaves room for ASCII art. A line of one mark alone is a rule.
MAX_EMPHASIS_RUN = 64
# Square brackets in a body: each one costs the link parser a few tries, so a body of
# nothing but brackets is slow however they pair up. A long article has a few hundred
# links; 10,000 links take the renderer a few seconds.
MAX_BRACKETS = 10_000
# What the link parser reads: for every "[", the characters up to its "]", or to the end
# of its paragraph when it has none; for every "](", up to its ")". A link costs the
# length of its text and address (a 100 kB article with 1,000 links: about 100,000); an
# unclosed bracket costs the rest of its paragraph; "[[[[…" the square of its length.
# Measured: 500,000 characters read take the renderer about 0.8 s.
MAX_BRACKET_WORK = 500_000

# Inline markup in one paragraph: python-markdown rewrites a paragraph's whole text for
# every piece of inline markup it finds in it (a code span, a link, an emphasis), so a
# long paragraph dense with markup costs its length times its marks. Measured: 64 KiB
# of "`a` " in one paragraph (32,768 marks × 65,536 characters, about 2e9) renders in
# 0.6-1.5 s; 256 KiB in 4.6 s; 1 MiB in minutes. A 5,000-character paragraph of prose
# with 200 marks costs 1e6; paragraphs under LONG_PARAGRAPH characters are not counted.
MAX_INLINE_WORK = 1_000_000_000
LONG_PARAGRAPH = 4096

# Each level takes at least one character and at most 4 (indentation) or 11 ("123456789. ")
# of a line's prefix: 256 characters hold more than MAX_NESTING levels of any kind.
_CONTAINER_PREFIX = re.compile(rf"^[ \t>*+\-0-9.)]{{{MAX_NESTING + 1},256}}", re.MULTILINE)
_PREFIX_TOKEN = re.compile(
    r"(?P<marker>>|(?:[*+-]|[0-9]{1,9}[.)])(?=[ \t]|$))[ \t]?|(?P<space>[ \t]+)|(?P<other>.)"
)
# python-markdown's horizontal rule: three or more of one mark, up to 2 spaces apart.
_RULE = re.compile(r" {0,3}([*_-])(?: {0,2}\1){2,} *$")
_EMPHASIS_RUN = re.compile(rf"[*_]{{{MAX_EMPHASIS_RUN + 1},}}")
_SQUARE = re.compile(r"[\[\]]")
_DESTINATION = re.compile(r"\]\((?:[^()]*\))?")
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_INLINE_MARK = re.compile(r"[`\\\[<&*_!]")


def _line_at(text: str, at: int) -> str:
    """The line holding position `at` (found from `at`: the cost is the line's length)."""
    end = text.find("\n", at)
    return text[text.rfind("\n", 0, at) + 1 : end if end >= 0 else len(text)]


def _line_number(text: str, at: int) -> int:
    return text.count("\n", 0, at) + 1


def _nesting(prefix: str) -> int:
    """Containers a line's prefix opens: each ">" and each list marker, and each four
    columns of indentation besides the one space that follows a marker (python-markdown
    nests a list indented by four). Stops at anything else."""
    depth = columns = 0
    for match in _PREFIX_TOKEN.finditer(prefix):
        if match["marker"]:
            depth += 1
        elif match["space"]:
            columns += match["space"].count(" ") + 4 * match["space"].count("\t")
        else:
            break
    return depth + columns // 4


def deepest_nesting(text: str) -> tuple[int, int]:
    """(depth, line) of the first line nested deeper than MAX_NESTING, or (0, 0). Only
    lines with a long prefix can be, and a regular expression finds those."""
    for match in _CONTAINER_PREFIX.finditer(text):
        if _RULE.match(_line_at(text, match.start())):
            continue  # "* * * * …" alone on a line is a horizontal rule, not a list
        depth = _nesting(match.group())
        if depth > MAX_NESTING:
            return depth, _line_number(text, match.start())
    return 0, 0


def long_emphasis_run(text: str) -> tuple[int, int]:
    """(length, line) of the first run of emphasis marks over MAX_EMPHASIS_RUN that is
    not in a horizontal rule (a line of one mark, which is never read as emphasis)."""
    at = 0
    while match := _EMPHASIS_RUN.search(text, at):
        line_end = text.find("\n", match.start())
        line_end = len(text) if line_end < 0 else line_end
        if not _RULE.match(_line_at(text, match.start())):
            return len(match.group()), _line_number(text, match.start())
        at = line_end  # the rest of this rule is rule too
    return 0, 0


def bracket_work(text: str, *, limit: int = MAX_BRACKET_WORK) -> int:
    """What the link parser reads (see MAX_BRACKET_WORK); stops counting past `limit`.
    Paragraphs end at blank lines, as they do for the parser. A link address with
    parentheses inside is counted as unclosed: an overestimate, never an underestimate.
    Linear: one step per square bracket and per "](" (at most MAX_BRACKETS each)."""
    ends = [end for _start, end in paragraphs(text)]
    work, opened, paragraph = 0, [], 0
    for match in _SQUARE.finditer(text):
        at = match.start()
        while at > ends[paragraph]:  # a new paragraph: what is still open never closes
            work += sum(ends[paragraph] - start for start in opened)
            opened, paragraph = [], paragraph + 1
        if match.group() == "[":
            opened.append(at)
        elif opened:
            work += at - opened.pop()
        if work > limit:
            return work
    work += sum(ends[paragraph] - start for start in opened)
    for match in _DESTINATION.finditer(text):
        closed = match.group().endswith(")")
        work += (
            len(match.group()) if closed else ends[bisect_left(ends, match.start())] - match.start()
        )
        if work > limit:
            return work
    return work


def paragraphs(text: str) -> list[tuple[int, int]]:
    """(start, end) of each paragraph: the text between blank lines."""
    bounds, start = [], 0
    for match in _PARAGRAPH_BREAK.finditer(text):
        bounds.append((start, match.start()))
        start = match.end()
    bounds.append((start, len(text)))
    return bounds


def dense_paragraph(text: str) -> tuple[int, int, int]:
    """(line, length, marks) of the first long paragraph whose length times its inline
    marks, added to those before it, goes past MAX_INLINE_WORK; (0, 0, 0) if none."""
    work = 0
    for start, end in paragraphs(text):
        if end - start < LONG_PARAGRAPH:
            continue
        marks = len(_INLINE_MARK.findall(text, start, end))
        work += marks * (end - start)
        if work > MAX_INLINE_WORK:
            return _line_number(text, start), end - start, marks
    return 0, 0, 0


def markdown_complexity_problems(text: str) -> list[str]:
    """What in `text` the renderer could not read in bounded time, each said plainly;
    empty when it can. Linear in the length of `text`."""
    problems = []
    brackets = max(text.count("["), text.count("]"))
    if brackets > MAX_BRACKETS:
        problems.append(
            f"The text has {brackets:,} square brackets; at most {MAX_BRACKETS:,} are allowed."
        )
    elif bracket_work(text) > MAX_BRACKET_WORK:
        problems.append(
            "Too many “[” or “](” without their closing “]” or “)”, or brackets nested "
            "too deeply: the Markdown link parser would take too long (it may read "
            f"{MAX_BRACKET_WORK:,} characters). Close them, or escape them as \\[ and \\(."
        )
    depth, line = deepest_nesting(text)
    if depth:
        problems.append(
            f"Line {line} nests blockquotes or lists at least {depth} levels deep; at most "
            f"{MAX_NESTING} are allowed."
        )
    run, line = long_emphasis_run(text)
    if run:
        problems.append(
            f"Line {line} has a run of {run} “*” or “_” marks; at most {MAX_EMPHASIS_RUN} "
            "in a row are allowed (escape them as \\* or \\_, or put them in a code block)."
        )
    line, length, marks = dense_paragraph(text)
    if line:
        problems.append(
            f"The paragraph at line {line} is {length:,} characters long with {marks:,} "
            "Markdown marks (`, *, _, [, <, &, !, \\) in it: too dense for the renderer. "
            "Break it up with blank lines."
        )
    return problems


def validate_markdown_limits(value: str) -> None:
    problems = markdown_complexity_problems(value)
    if problems:
        raise ValidationError(
            [ValidationError(problem, code="markdown_too_complex") for problem in problems]
        )
