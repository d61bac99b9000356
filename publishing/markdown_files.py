"""Markdown files with YAML front matter, as Jekyll and Hugo write them: reading one
into an article's fields, and writing an article back (docs/import.md).

Pure functions of the text: no database, no HTML. The YAML is PyYAML's safe loader
(its C parser when built, which is what keeps a 10,000-file import in seconds); only
the `---` lines that delimit the front matter are found here. Front matter is a few
keys, so the loader refuses what only an attack needs (issue 19): anchors and aliases
(`&a`, `*a`: a few hundred bytes of nested aliases stand for gigabytes, the "billion
laughs") and nesting deeper than `MAX_DEPTH`; and no message ever quotes more than
`VALUE_SHOWN` characters of a value.

    ---
    title: Hello, world
    slug: hello-world            # optional: else the file's name
    date: 2024-05-01 09:30:00    # optional: publish_at; UTC when it names no zone; else
                                 # the file name's date (Jekyll's 2024-05-01-hello.md);
                                 # a later Hugo publishDate (pubdate) wins
    draft: true                  # optional: kept as a draft, not published (so is
                                 # Jekyll's `published: false`, Hugo's past `expiryDate`,
                                 # and a file under Jekyll's `_drafts/`)
    author: Ann Writer           # optional: the byline (also `authors:`, a list)
    description: One sentence.   # optional (also Hugo's `summary:`)
    lang: fr                     # optional (also `language:`; en_US is en-US)
    tags: [python, web]          # optional; `categories:` joins them
    aliases: [/old-name/]        # optional: former addresses (also Jekyll's `redirect_from`)
    layout: post                 # anything else is ignored (and named in the summary)
    ---
    The body, *Markdown*, kept as written.

Keys are read in any case, as Hugo reads them (`Draft:`, `Date:`, `publishDate:`).

Dates are read as leniently as the systems that wrote them: Ruby's `Time.parse`
(Jekyll) and Hugo take `2024-05-01 09:30:00 +0200`, `May 1, 2024`, `Wed, 01 May 2024
09:30:00 GMT`, `2024/05/01` and more; `parse_date` takes them too (python-dateutil's
parser, with Ruby's zone abbreviations).
"""

from __future__ import annotations

import re
import reprlib
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time
from pathlib import PurePath
from typing import Any, ClassVar
from urllib.parse import unquote, urlsplit

import yaml
from dateutil import parser as date_parser
from dateutil import tz
from django.core.exceptions import ValidationError
from yaml.composer import Composer, ComposerError
from yaml.constructor import SafeConstructor
from yaml.events import AliasEvent, CollectionStartEvent, Event, NodeEvent

from publishing.validators import normalize_body, slugify_keeping_marks, validate_publish_at

try:  # libyaml: ~10x faster than the pure-Python loader
    from yaml import CSafeDumper as SafeDumper
    from yaml import CSafeLoader as FastSafeLoader
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    # The pure-Python classes in place of the C ones: the same interface, other classes.
    from yaml import SafeDumper  # type: ignore[assignment]
    from yaml import SafeLoader as FastSafeLoader  # type: ignore[assignment]

# The keys the import reads; any other key is ignored (and named once in the summary).
KNOWN_KEYS = frozenset(
    {
        "title",
        "slug",
        "date",
        "draft",
        "first_published",
        "author",
        "authors",
        "description",
        "summary",
        "lang",
        "language",
        "tags",
        "tag",
        "categories",
        "category",
        "aliases",
        "redirect_from",
        "published",
        "publishdate",
        "pubdate",
        "expirydate",
        "unpublishdate",
    }
)
MARKDOWN_SUFFIXES = (".md", ".markdown")


def is_markdown_name(name: str) -> bool:
    """A name the import reads in a folder: `.md` or `.markdown` in any case, not hidden.
    The export's `--prune` asks the same, so what an import would bring back is named."""
    return name.lower().endswith(MARKDOWN_SUFFIXES) and not name.startswith(".")


# The opening line, the YAML, the closing line ("---", or YAML's "..." end marker).
_FRONT_MATTER = re.compile(
    r"\A---[ \t]*\r?\n(?P<yaml>.*?)^(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.DOTALL | re.MULTILINE
)
# Jekyll's file names: `2024-05-01-hello-world.md` is the post `hello-world`.
_JEKYLL_DATE_PREFIX = re.compile(r"^\d{4}-\d{2}-\d{2}-(?=.)")
# Its date, Jekyll's fallback when the front matter gives none.
_JEKYLL_FILE_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})-")
# The zone abbreviations Ruby's Time.parse knows (time.rb, ZoneOffset), which
# dateutil's parser would otherwise leave unknown (a naive time, read as UTC).
_ZONES = {
    "UTC": 0, "UT": 0, "GMT": 0, "Z": 0,
    "EST": -5, "EDT": -4, "CST": -6, "CDT": -5, "MST": -7, "MDT": -6, "PST": -8, "PDT": -7,
    "AST": -4, "ADT": -3, "AKST": -9, "AKDT": -8, "HST": -10, "HAST": -10, "HADT": -9,
    "CET": 1, "CEST": 2, "MET": 1, "MEST": 2, "MEZ": 1, "MESZ": 2, "EET": 2, "EEST": 3,
    "WET": 0, "WEST": 1, "BST": 1, "IST": 5.5, "JST": 9, "KST": 9, "HKT": 8, "SGT": 8,
    "AEST": 10, "AEDT": 11, "ACST": 9.5, "AWST": 8, "NZST": 12, "NZDT": 13,
}  # fmt: skip
# An ISO day (and time) first, a numeric zone last, anything between.
_RUBY_LOOSE = re.compile(
    r"(?P<day>\d{4}-\d{1,2}-\d{1,2})(?:[ T]+(?P<time>\d{1,2}:\d{2}(?::\d{2})?))?"
    r"\s*(?P<between>[^+-]*?)(?P<zone>[+-]\d{2}:?\d{2})?"
    # and the zone's name after its offset, as `date "+%F %T %z %Z"` writes it
    r"(?:(?<=\d)\s+\(?[A-Za-z]{1,6}\)?)?"
)
# Hugo's page bundle in a language of a multilingual site: `index.en`, `_index.pt-br`.
_BUNDLE_LANGUAGE = re.compile(r"_?index\.([A-Za-z]{2,3}(?:-[A-Za-z0-9]{2,8})*)")
# An ISO day and a time written with a dot (`2024-05-01 09.30`).
_DOTTED_TIME = re.compile(r"\d{4}-\d{1,2}-\d{1,2}[ T]+\d{1,2}\.\d")
# Something like a time of day, which the lenient parse must not leave out.
_TIME_LIKE = re.compile(r"\d[:.]\d")
# No date written in any format this import reads is longer.
DATE_LENGTH = 100
# A zone's name as its last word, in any case (Ruby's Time.parse reads `pst` as PST;
# dateutil's parser takes only capitals for a zone).
_LAST_WORD = re.compile(r"(?<=\s)([A-Za-z]{1,5})$")


# `GMT+0200`, `UTC-3` (JavaScript's Date.toString() writes the first): the offset as
# written, as Ruby's Time.parse reads it. dateutil reads `GMT+3` as POSIX TZ does, the
# other way round (UTC-3), so the name is dropped before it parses (a review's finding).
_NAMED_OFFSET = re.compile(r"\b(?:GMT|UTC)\s*(?=[+-]\d)", re.IGNORECASE)


def _zone_in_capitals(text: str) -> str:
    word = _LAST_WORD.search(text)
    if word is None or word[1].upper() not in _ZONES:
        return text
    return text[: word.start()] + word[1].upper()


_TZINFOS = {name: tz.tzoffset(name, int(hours * 3600)) for name, hours in _ZONES.items()}
# Hugo's page bundles: `hello-world/index.md` is the page `hello-world`.
_BUNDLE_NAMES = frozenset({"index", "_index"})
# Lists and mappings nested deeper than this are refused (front matter needs 2 or 3;
# deeper only costs stack).
MAX_DEPTH = 32
# At most this many characters of a value are quoted in a message (a title is 200).
VALUE_SHOWN = 60
_shown = reprlib.Repr()
_shown.maxlevel = 1
_shown.maxstring = _shown.maxother = _shown.maxlong = VALUE_SHOWN
_shown.maxtuple = _shown.maxlist = _shown.maxdict = _shown.maxset = _shown.maxfrozenset = 2


class BadFile(Exception):
    """The file cannot be imported."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def shown(value: object) -> str:
    """`value` as a message quotes it: a repr of at most about VALUE_SHOWN characters,
    whatever its size or nesting (reprlib, cut at the first level)."""
    try:
        return _shown.repr(value)
    except ValueError:  # an int past the 4,300 digits Python turns into text
        return f"a {type(value).__name__}"


class _FrontMatterComposer(Composer):
    """PyYAML's composer, in Python, that refuses an anchor or an alias, and nesting
    past MAX_DEPTH, at the node that has it. Over the C parser's events too: the C
    composer cannot be told to refuse anything. A document without "&" and "*" can
    have neither, and the C loader composes it alone (twice as fast; libyaml stops
    nesting at 1,000 levels itself)."""

    _loader: ClassVar[type[Any]]  # the loader whose parser and constructor are used
    peek_event: Callable[[], Event]  # the parser's, from the loader this is mixed into

    def __init__(self, stream) -> None:
        self._loader.__init__(self, stream)
        Composer.__init__(self)
        self._depth = 0
        self._plain = isinstance(stream, str) and "&" not in stream and "*" not in stream

    def get_single_node(self):
        if self._plain and self._loader is not yaml.SafeLoader:
            return self._loader.get_single_node(self)
        return Composer.get_single_node(self)

    def compose_node(self, parent, index):
        event = self.peek_event()
        # A node's events only (compose_node is called at one): NodeEvent has `anchor`.
        if isinstance(event, AliasEvent) or (
            isinstance(event, NodeEvent) and event.anchor is not None
        ):
            raise ComposerError(
                None,
                None,
                "anchors and aliases (&name, *name) are not allowed in front matter",
                # The C parser's yaml._yaml.Mark, which the stubs do not take here.
                event.start_mark,  # type: ignore[arg-type]
            )
        if not isinstance(event, CollectionStartEvent):
            return super().compose_node(parent, index)
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise ComposerError(
                    None,
                    None,
                    f"lists and mappings nested more than {MAX_DEPTH} deep",
                    # The C parser's yaml._yaml.Mark, which the stubs do not take here.
                    event.start_mark,  # type: ignore[arg-type]
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


_MERGE = "tag:yaml.org,2002:merge"  # YAML 1.1's `<<` key


class _NoRepeatedKeys(SafeConstructor):
    """A mapping that gives one key twice (`date:` and `date:` again) is refused, as
    one that gives it in two cases is (`_keys_in_any_case`) and as Hugo refuses both
    ('mapping key "date" already defined'): PyYAML took the last without a word (a
    review's finding), and which one the blog meant is not known."""

    def construct_mapping(self, node, deep=False):
        # The pairs as written, before flatten_mapping puts a merge's (`<<: {…}`) into
        # node.value: a key the mapping sets over a merged one is YAML's override, not a
        # repeat (a review's finding: `<<: {title: X}` then `title: Mine` was refused).
        written = [key for key, _value in node.value if key.tag != _MERGE]
        mapping = super().construct_mapping(node, deep=deep)
        seen: set = set()
        for key_node in written:
            key = self.construct_object(key_node, deep=deep)  # constructed already
            if key in seen:
                line = key_node.start_mark.line + 2  # the opening `---` is line 1
                raise BadFile(
                    f"the front matter gives {_key_name(key)!r} twice (line {line}):"
                    " which one the blog meant is not known; keep one"
                )
            seen.add(key)
        return mapping


class SafeLoader(_FrontMatterComposer, _NoRepeatedKeys, FastSafeLoader):
    """The loader the import uses: the C parser when built, composed by _FrontMatterComposer."""

    _loader = FastSafeLoader


class PureSafeLoader(_FrontMatterComposer, _NoRepeatedKeys, yaml.SafeLoader):
    """The same in pure Python (PyYAML without libyaml); the tests check both."""

    _loader = yaml.SafeLoader


# YAML 1.1's base-60 numbers (`12:30` read as 750, `1:30:00` as 5400), which Hugo and
# YAML 1.2 read as text: a title or tag like a time stays as written (a review's finding).
_BASE_60 = ":"
_NUMBERS = {"tag:yaml.org,2002:int", "tag:yaml.org,2002:float"}


def _without_base_60(loader: type[yaml.resolver.BaseResolver]) -> None:
    resolvers = {}
    for first, found in loader.yaml_implicit_resolvers.items():
        resolvers[first] = [
            (tag, _no_base_60(pattern) if tag in _NUMBERS else pattern) for tag, pattern in found
        ]
    loader.yaml_implicit_resolvers = resolvers


def _no_base_60(pattern: re.Pattern) -> re.Pattern:
    """The number pattern refusing what holds a colon: only its base-60 forms do."""
    return re.compile(r"(?![\s\S]*" + _BASE_60 + ")" + pattern.pattern, pattern.flags)


_without_base_60(SafeLoader)
_without_base_60(PureSafeLoader)

# YAML 1.2's booleans (its core schema, which Hugo reads): true and false only, not YAML
# 1.1's yes, no, on and off, so `lang: no` (Norwegian) and `title: Yes` are text, where
# they failed as booleans (a review's finding). `draft: yes` and `published: no` still
# say yes and no: _flag reads those words as text.
_BOOL = "tag:yaml.org,2002:bool"
_BOOL_1_2 = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")


def _booleans_of_yaml_1_2(loader: type[yaml.resolver.BaseResolver]) -> None:
    loader.yaml_implicit_resolvers = {
        first: [(tag, _BOOL_1_2 if tag == _BOOL else pattern) for tag, pattern in found]
        for first, found in loader.yaml_implicit_resolvers.items()
    }


_booleans_of_yaml_1_2(SafeLoader)
_booleans_of_yaml_1_2(PureSafeLoader)


@dataclass
class ParsedFile:
    title: str
    body: str
    # From the front matter, or "" when the file gave none (then slug_from_path()).
    slug: str
    # From `date`, in UTC; None when the file gave none.
    publish_at: datetime | None
    ignored_keys: set[str] = field(default_factory=set)
    # The reader fields (issue 21); the model normalises and validates them.
    description: str = ""
    language: str = ""
    byline: str = ""
    tags: list[str] = field(default_factory=list)
    # An undated draft's date of its first publish (a withdrawn story's, exported):
    # what publishing it again keeps (`first_published`, written by render()).
    first_published: datetime | None = None
    # Former addresses (Hugo's `aliases`, Jekyll's `redirect_from`) that are one folder
    # of the site: their slugs. Those deeper in (`/2019/05/old/`) are in `not_aliases`.
    aliases: list[str] = field(default_factory=list)
    not_aliases: list[str] = field(default_factory=list)
    # What the import says of the file, which is imported all the same.
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Draft:
    """A file marked `draft: true`: kept as a draft (a story), never published."""

    parsed: ParsedFile


def parse_date(value: object, *, now: datetime | None = None) -> datetime:
    """`date` as Jekyll and Hugo write it, in UTC: ISO 8601 or `YYYY-MM-DD HH:MM:SS`,
    with or without a zone (UTC when none), or a bare day (its midnight, UTC). YAML
    itself reads most of these into a datetime or a date; the rest arrive as text.
    `now` (the current time when None): what fills the parts a text leaves out."""
    return parse_date_noting(value, now=now)[0]


def parse_date_noting(value: object, *, now: datetime | None = None) -> tuple[datetime, str]:
    """`parse_date`, and what the import should say of it: a zone by a name this parser
    does not know (`MSK`; `_ZONES` has Ruby's and the common ones) is read as UTC, as no
    zone is, where Ruby's Time.parse reads it in the machine's zone. "" when there is
    nothing to say."""
    note = ""
    if isinstance(value, datetime):
        when = value
    elif isinstance(value, date):
        when = datetime.combine(value, time())
    elif isinstance(value, str):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", date_parser.UnknownTimezoneWarning)
            when, dropped = _parse_date_text(value, now=now or datetime.now(UTC))
        unknown = any(issubclass(w.category, date_parser.UnknownTimezoneWarning) for w in caught)
        if when.tzinfo is None and unknown:
            note = (
                f"date {shown(value)}: its zone is not one this import knows by name; read "
                "as UTC (Jekyll reads it in the machine's zone): write it as an offset "
                "(+03:00)"
            )
        elif re.search(r"[^\W\d_]", dropped):
            note = f"date {shown(value)}: {shown(dropped.strip())} left out, as Jekyll does"
            note += "" if when.tzinfo else "; no zone is left: read as UTC"
    else:
        raise BadFile(f"date must be a date, not a {type(value).__name__}")
    if when.tzinfo is None:
        return when.replace(tzinfo=UTC), note
    try:
        return when.astimezone(UTC), note
    except (OverflowError, ValueError):  # ValueError: an offset of a day or more (GMT+24)
        written = value.isoformat(sep=" ") if isinstance(value, datetime) else value
        raise BadFile(f"date {shown(written)} is out of range") from None


def _parse_date_text(value: str, *, now: datetime) -> tuple[datetime, str]:
    """A date written as text, as Jekyll (Ruby's Time.parse) and Hugo read it: ISO 8601
    first, then the lenient parser (`2024-05-01 09:30:00 +0200`, `May 1, 2024`, RFC
    822/1123, `2024/05/01`, a named zone as Ruby names it), then, as Ruby's Date._parse
    picks the parts it recognises, an ISO day (and time) at the start and a numeric
    zone at the end with anything between (`2023-01-29 18:30:22 2023 -0800`, a post of
    Jekyll's own blog)."""
    if len(value.strip()) > DATE_LENGTH:
        # The lenient patterns below backtrack on long runs of spaces: a 20,000-space
        # date took 19 s (a review's finding); no date of any format is this long.
        raise BadFile(f"date {shown(value)} is not a date: longer than {DATE_LENGTH} characters")
    text = _NAMED_OFFSET.sub("", _zone_in_capitals(value.strip()))
    if _DOTTED_TIME.match(text):
        # Python's fromisoformat and dateutil read `09.30` as nine o'clock and 0.3 s (a
        # review's finding): refused, as `9.30` is below.
        raise BadFile(f"date {shown(value)} is not a date: write its time as 09:30")
    try:
        return datetime.fromisoformat(text), ""
    except ValueError:
        pass
    if _OFFSET_ONLY.fullmatch(text := text.strip()) or not text:
        # dateutil read `UTC-3` as the 3rd of January; Time.parse finds no time in it.
        raise BadFile(f"date {shown(value)} is not a date: it gives a zone and no day or time")
    attempts = [(text, "")]
    loose = _RUBY_LOOSE.fullmatch(text)
    # A time it would leave out is a time it cannot read (`25:00`, `09:61`, `9.30`):
    # refused, not the day's midnight.
    if loose and not _TIME_LIKE.search(loose.group("between") or ""):
        kept = " ".join(part for part in loose.group("day", "time", "zone") if part)
        attempts.append((kept, loose.group("between") or ""))
    for attempt, dropped in attempts:
        try:
            return _as_time_parse_fills(attempt, value, now), dropped
        except (ValueError, OverflowError):
            continue
    raise BadFile(
        f"date {shown(value)} is not a date: write it as ISO 8601 "
        "(2024-05-01T09:30:00+02:00), YYYY-MM-DD HH:MM:SS (UTC when no zone is "
        "given) or as Jekyll and Hugo read dates (May 1, 2024 09:30 +0200)"
    )


# Two defaults that differ in every part: a part the two parses agree on is the text's.
# A weekday moves each on by at most 6 days, to days 1-7 and 8-14: never the same day
# (with days 1 and 3, `Monday May 2024` moved both to the 6th, read as given: a review
# of the mend), and still in their month.
_PROBES = (datetime(2000, 1, 1), datetime(2004, 3, 8, 1, 1, 1))
_PARTS = ("year", "month", "day", "hour", "minute", "second")
# A part below the text's highest as Time.parse fills it (the year never is one).
_LEAST = (1, 1, 1, 0, 0, 0)
# A numeric zone alone (`UTC-3` once `UTC` is dropped, `+0200`).
_OFFSET_ONLY = re.compile(r"[+-]\d{1,2}(?::?\d{2})?")


def _as_time_parse_fills(text: str, value: str, now: datetime) -> datetime:
    """`text` read by dateutil, the parts it leaves out filled as Ruby's Time.parse
    fills them (time.rb, make_time): those above its highest part from `now` in the
    text's zone (UTC when none), so `09:30` is today's and `12` this month's 12th;
    those below from their least (`May 2024`: the 1st, midnight). A weekday alone
    (`Monday`) gives no part: Time.parse raises "no time information", and Jekyll
    refuses the file; a weekday with other parts is ignored, as Ruby ignores it
    (`Monday 09:30` is today's; dateutil moved it to the next Monday). dateutil with
    January 1st as the default filled them from that (a review's finding)."""
    read, other = (date_parser.parse(text, default=d, tzinfos=_TZINFOS) for d in _PROBES)
    given = [getattr(read, part) == getattr(other, part) for part in _PARTS]
    if not any(given):
        raise BadFile(f"date {shown(value)} is not a date: it gives no day or time")
    highest = given.index(True)
    local_now = now.astimezone(read.tzinfo or UTC)
    year, month, day, hour, minute, second = (
        getattr(local_now, part) if i < highest else getattr(read, part) if given[i] else _LEAST[i]
        for i, part in enumerate(_PARTS)
    )
    return datetime(year, month, day, hour, minute, second, read.microsecond, tzinfo=read.tzinfo)


def date_from_path(path: PurePath) -> datetime | None:
    """The date of a Jekyll post's file name (`2024-05-01-hello.md`: its midnight, UTC),
    Jekyll's own fallback when the front matter gives none; None for other names."""
    match = _JEKYLL_FILE_DATE.match(path.name)
    if match is None:
        return None
    try:
        year, month, day = map(int, match.groups())
        return datetime(year, month, day, tzinfo=UTC)
    except ValueError:  # 2024-02-30-…: not a date, as Jekyll finds too
        raise BadFile(f"the file name's date {match[0][:-1]} is not a date") from None


def _text(key: str, value: object) -> str:
    """A scalar as text (`title: 2024` is the title "2024"); a list or mapping is refused."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        raise BadFile(f"{key} must be text, not {value!r}")
    if isinstance(value, int | float | date):
        try:
            return str(value)
        except ValueError:  # an int past Python's 4,300 digits for str()
            raise BadFile(f"{key} must be text, not a number this long") from None
    raise BadFile(f"{key} must be text, not a {type(value).__name__}")


def _optional_text(meta: dict, *keys: str) -> str:
    """The first of `keys` the front matter gives, as text ("" when none)."""
    for key in keys:
        if meta.get(key) is not None:
            return _text(key, meta[key])
    return ""


def _byline(meta: dict) -> str:
    """`author` (text, or Jekyll's `{name: …}`) or `authors` (Hugo's list): the names.
    An `author` that names no one (an empty `author:` line, a template's) gives way to
    `authors`, as an empty `description:` does to `summary:`; it hid Hugo's list (a
    review's finding)."""
    for key in ("author", "authors"):
        if (names := _names(key, meta.get(key))).strip():
            return names
    return ""


def _names(key: str, value: object) -> str:
    """The names one byline key gives, joined with ", "; "" when none."""
    if value is None:
        return ""
    if isinstance(value, dict):
        value = value.get("name") or ""  # `name:` left empty names no one
    if isinstance(value, list):
        names = [
            _text(key, (name.get("name") or "") if isinstance(name, dict) else name)
            for name in value
        ]
        return ", ".join(name for name in names if name.strip())
    return _text(key, value)


_ASCII_SPACES_RE = re.compile(r"[ \t\n\v\f\r]+")


def _tag_list(key: str, value: object) -> list[str]:
    """Tags as Jekyll and Hugo write them: a list, or text (Jekyll splits it at spaces,
    ASCII ones as Ruby's String#split does: a no-break space is part of a tag; text with
    commas is split at the commas)."""
    if value is None:
        return []
    if isinstance(value, str):
        if "," in value:
            return [tag.strip() for tag in value.split(",")]
        return [tag for tag in _ASCII_SPACES_RE.split(value) if tag]
    if isinstance(value, list):
        return [_text(key, tag) for tag in value]
    return [_text(key, value)]


def _singular(key: str, value: object) -> list[str]:
    """Jekyll's singular `tag` or `category`: text is one tag, kept whole, as Jekyll's
    Utils.value_from_singular_key keeps it (`category: Release Notes` is one category;
    only the plural key's text is split). A list is its items."""
    if value is None:
        return []
    if isinstance(value, list):
        return [_text(key, tag) for tag in value]
    return [_text(key, value).strip()]


def _tags(meta: dict) -> list[str]:
    """`tags` (and Jekyll's singular `tag`), then `categories` (and `category`): one
    list. Jekyll reads a singular key instead of its plural when both are given; both
    are kept here, so nothing the file says is lost."""
    return [
        *_tag_list("tags", meta.get("tags")),
        *_singular("tag", meta.get("tag")),
        *_tag_list("categories", meta.get("categories")),
        *_singular("category", meta.get("category")),
    ]


def _aliases(meta: dict) -> tuple[list[str], list[str]]:
    """(slugs, others) of `aliases` and `redirect_from`: each an address of the site
    (`/old-name/`, `old-name`, `https://host/old-name/`, `/old-name.html`); one that is
    a single folder of the site is a slug (a `.html` of Jekyll's dropped), the others
    cannot be served by this site's layout (one folder per article) and are given back
    to be named."""
    slugs: list[str] = []
    others: list[str] = []
    for key in ("aliases", "redirect_from"):
        value = meta.get(key)
        for alias in [value] if isinstance(value, str) else _tag_list(key, value):
            try:
                path = urlsplit(alias.strip()).path.strip("/")
            except ValueError:  # `http://[::1`: not an address (a review's finding)
                others.append(_cut(alias.strip(), VALUE_SHOWN))
                continue
            path = path.removesuffix("/index.html").removesuffix(".html")
            if path and "/" not in path:
                slugs.append(unquote(path))
            elif alias.strip():
                others.append(_cut(alias.strip(), VALUE_SHOWN))
    return list(dict.fromkeys(slugs)), others


def _cut(message: str, limit: int = 2 * VALUE_SHOWN) -> str:
    return message if len(message) <= limit else message[: limit - 1] + "…"


def parse(text: str, *, loader: type = SafeLoader) -> ParsedFile | Draft:
    """Read a Markdown file's text. Raises BadFile with the reason when the front matter
    is missing or malformed, or gives no title, a bad date or a non-text slug."""
    if text.startswith("+++"):
        raise BadFile("TOML front matter (+++) is not supported: write it as YAML, between ---")
    match = _FRONT_MATTER.match(text)
    if match is None:
        raise BadFile("no front matter: the file must begin with a YAML block between --- lines")
    try:
        meta = yaml.load(match["yaml"], Loader=loader)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" at line {where.line + 2}" if where is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise BadFile(f"the front matter is not valid YAML{line}: {_cut(problem)}") from None
    except (ValueError, ArithmeticError, RecursionError) as exc:
        # What YAML reads but Python cannot make (`2024-02-30`, an integer of 5,000
        # digits, a sexagesimal float past the float range), or nesting inside a single
        # value too deep for the constructor.
        raise BadFile(
            f"the front matter has a value that cannot be read: {_cut(str(exc))}"
        ) from None
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise BadFile("the front matter must be a mapping of keys to values (title: …)")
    original = meta
    meta = _keys_in_any_case(meta)
    # Kept from the blog, as its own build keeps it: Hugo's and Jekyll's `draft`,
    # Jekyll's `published: false`, Hugo's `expiryDate` passed (a review's finding: all
    # went live, with only the key named as ignored). Hugo's `published` is also a name
    # of publishDate, a date: not a flag then; `unpublishdate` a name of expiryDate.
    expiry = meta.get("expirydate", meta.get("unpublishdate"))
    is_draft = (
        _flag(meta, "draft", False)
        or (not _a_date(meta.get("published")) and not _flag(meta, "published", True))
        or _expired(expiry)
    )
    title = meta.get("title")
    if title is None or (isinstance(title, str) and not title.strip()):
        raise BadFile("no title: the front matter must give a title")
    slug = meta.get("slug")
    parsed = ParsedFile(
        title=_text("title", title),
        body=normalize_body(text[match.end() :]),
        slug="" if slug is None else _text("slug", slug),
        publish_at=None,
        ignored_keys={_key_name(key) for key in original if not _known(key)},
        description=_optional_text(meta, "description", "summary"),
        language=_optional_text(meta, "lang", "language"),
        byline=_byline(meta),
        tags=_tags(meta),
        first_published=_first_published(meta.get("first_published")),
    )
    parsed.aliases, parsed.not_aliases = _aliases(meta)
    _dates(meta, parsed)
    if expiry not in (None, "") and not is_draft:
        parsed.notes.append(
            f"expiryDate {parse_date(expiry).isoformat()}: not kept; the article stays up "
            "after it (withdraw it then): this blog takes nothing down by a date"
        )
    return Draft(parsed) if is_draft else parsed


def _first_published(value: object) -> datetime | None:
    """An undated draft's `first_published`, held to a publish date's rules (the years
    1900 to 9000, seconds kept and fractions dropped): it was stored as written, past
    the validators, and publishing the draft then failed over a date its writer never
    set (a review's finding: `0001-01-01`)."""
    if value is None:
        return None
    when = parse_date(value).replace(microsecond=0)
    try:
        validate_publish_at(when)
    except ValidationError as exc:
        written = value.isoformat() if isinstance(value, date) else value
        raise BadFile(f"first_published {shown(written)}: {' '.join(exc.messages)}") from None
    return when


def _a_date(value: object) -> bool:
    """Hugo's `published` given as a date (a name of publishDate), YAML's or quoted
    (`"2030-05-01T10:00:00Z"`, which Hugo reads as one), not Jekyll's flag."""
    if isinstance(value, date):
        return True
    return isinstance(value, str) and value.strip().lower() not in _TRUE | _FALSE | {""}


def _keys_in_any_case(meta: dict) -> dict:
    """The front matter with its keys in lower case, as Hugo reads every key (`Draft:
    true` is a draft, `Date:` the date: a review found both went live, the draft
    published and the date the import's). Two keys that are one in lower case
    (`date:` and `Date:`) are refused: which one the blog meant is not known."""
    lowered: dict = {}
    written: dict[str, str] = {}
    for key, value in meta.items():
        if not isinstance(key, str):
            lowered[key] = value
            continue
        name = key.lower()
        if name in written:
            raise BadFile(
                f"the front matter gives {_key_name(written[name])!r} and"
                f" {_key_name(key)!r}: one key in any case (Hugo reads keys so); keep one"
            )
        written[name] = key
        lowered[name] = value
    return lowered


def _dates(meta: dict, parsed: ParsedFile) -> None:
    """The article's date from `date`, and Hugo's publishDate (`publishDate`, `pubdate`,
    or `published` as a date), before which Hugo builds no page: the later of the two,
    so that nothing goes live before the blog put it live (the date readers see is then
    the publish date: a note says so when they differ)."""
    found: dict[str, datetime] = {}
    for key in ("date", "publishdate", "pubdate", "published"):
        value = meta.get(key)
        if value is None or (key == "published" and not _a_date(value)):
            continue  # `published: false`: Jekyll's flag (parse reads it)
        when, note = parse_date_noting(value)
        parsed.notes += [note] if note else []
        found.setdefault(key, when)
    if not found:
        return
    later = max(found.values())
    parsed.publish_at = later
    if "date" in found and found["date"] != later:
        key = next(k for k in ("publishdate", "pubdate", "published") if found.get(k) == later)
        parsed.notes.append(
            f"date {found['date'].isoformat()} is before its {key} {later.isoformat()}:"
            " published then, as Hugo publishes it, and dated then (an article has one date)"
        )


_TRUE, _FALSE = {"true", "yes", "on", "1"}, {"false", "no", "off", "0"}


def _flag(meta: dict, key: str, default: bool) -> bool:
    """A yes-or-no key (YAML's booleans, and the words and digits for them); BadFile
    for anything else (`draft: maybe`), rather than a guess either way."""
    value = meta.get(key)
    if value is None or value == "":  # unset, or `draft:` with nothing after it
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise BadFile(f"{key}: {_cut(repr(value), VALUE_SHOWN)} is not true or false")


def _expired(value: object) -> bool:
    """Hugo's `expiryDate` in the past: Hugo builds the page no more."""
    if value is None or value == "":
        return False
    return parse_date(value) <= datetime.now(UTC)


def _known(key: object) -> bool:
    """A key the import reads, in any case (Hugo's way)."""
    return isinstance(key, str) and key.lower() in KNOWN_KEYS


def _key_name(key: object) -> str:
    """A front-matter key as the import names it: text cut short; another kind of key
    by its kind (`str()` of a 20,000-digit integer key raises)."""
    return _cut(key) if isinstance(key, str) else f"<a {type(key).__name__} key>"


def bundle_language(path: PurePath) -> str:
    """The language of a multilingual Hugo bundle's page (`index.fr.md`: "fr"), or ""."""
    found = _BUNDLE_LANGUAGE.fullmatch(path.stem)
    return found[1] if found and path.parent.name else ""


def slug_from_path(path: PurePath, site_language: str = "") -> str:
    """The slug a file without `slug:` gets: its name without the extension (without
    Jekyll's date prefix; a Hugo bundle's `index.md` gives its folder's name), made a
    slug as a title is (lowercase, spaces to hyphens, unicode letters kept).

    A multilingual bundle's pages (`index.en.md`, `index.fr.md`; a review's finding:
    each was `indexen`, then all the folder's, refused as each other's duplicates):
    the one in the site's language (`site_language`) gets the folder's name, the
    others the folder's and their language's (`my-post-fr`)."""
    stem = path.stem
    if language := bundle_language(path):
        same = language.split("-")[0].lower() == site_language.split("-")[0].lower()
        stem = path.parent.name if same else f"{path.parent.name}-{language}"
    if stem in _BUNDLE_NAMES and path.parent.name:
        stem = path.parent.name
    stem = _JEKYLL_DATE_PREFIX.sub("", stem)
    return slugify_keeping_marks(stem)


def render(
    *,
    title: str,
    slug: str,
    publish_at: datetime | None,
    body: str,
    description: str = "",
    language: str = "",
    byline: str = "",
    tags: list[str] | None = None,
    draft: bool = False,
    first_published: datetime | None = None,
    aliases: list[str] | None = None,
) -> str:
    """An article as a file `parse` reads back into the same fields: the reader fields
    under the keys Jekyll and Hugo read (`author`, `description`, `lang`, `tags`), each
    only when set; a draft (a story on no page) with `draft: true`, and its date only
    when it has one (an undated one published before: `first_published`); its former
    addresses as Hugo's `aliases`."""
    meta: dict[str, object] = {"title": title, "slug": slug}
    if publish_at is not None:
        meta["date"] = publish_at.astimezone(UTC).isoformat()
    elif first_published is not None:  # an undated draft, published before: its date
        meta["first_published"] = first_published.astimezone(UTC).isoformat()
    optional = {
        "draft": draft,
        "author": byline,
        "description": description,
        "lang": language,
        "tags": tags,
        # Hugo's way: addresses from the site's root (Jekyll's plugin reads them too).
        "aliases": [f"/{slug}/" for slug in aliases or ()],
    }
    meta.update({key: value for key, value in optional.items() if value})
    front = yaml.dump(meta, Dumper=SafeDumper, allow_unicode=True, sort_keys=False, width=1_000_000)
    return f"---\n{front}---\n\n{body}\n"
