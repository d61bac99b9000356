"""Markdown files with YAML front matter, as Jekyll and Hugo write them: reading one
into an article's fields, and writing an article back (docs/import.md).

Pure functions of the text: no database, no HTML. The YAML is PyYAML's (its C loader
when built, which is what keeps a 10,000-file import in seconds); only the `---` lines
that delimit the front matter are found here.

    ---
    title: Hello, world
    slug: hello-world            # optional: else the file's name
    date: 2024-05-01 09:30:00    # optional: publish_at; UTC when it names no zone
    draft: true                  # optional: the file is skipped
    tags: [ignored]              # anything else is ignored (and named in the summary)
    ---
    The body, *Markdown*, kept as written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time
from pathlib import PurePath

import yaml
from django.utils.text import slugify

try:  # libyaml: ~10x faster than the pure-Python loader
    from yaml import CSafeDumper as SafeDumper
    from yaml import CSafeLoader as SafeLoader
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml import SafeDumper, SafeLoader

# The keys the import reads; any other key is ignored (and named once in the summary).
KNOWN_KEYS = frozenset({"title", "slug", "date", "draft"})
MARKDOWN_SUFFIXES = (".md", ".markdown")

# The opening line, the YAML, the closing line ("---", or YAML's "..." end marker).
_FRONT_MATTER = re.compile(
    r"\A---[ \t]*\r?\n(?P<yaml>.*?)^(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.DOTALL | re.MULTILINE
)
# The blank lines between the closing `---` and the text: a separator, not the body.
_LEADING_BLANK_LINES = re.compile(r"\A(?:[ \t]*\r?\n)+")
# Jekyll's file names: `2024-05-01-hello-world.md` is the post `hello-world`.
_JEKYLL_DATE_PREFIX = re.compile(r"^\d{4}-\d{2}-\d{2}-(?=.)")
# Hugo's page bundles: `hello-world/index.md` is the page `hello-world`.
_BUNDLE_NAMES = frozenset({"index", "_index"})


class BadFile(Exception):
    """The file cannot be imported."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Draft:
    """A file marked `draft: true`: skipped, and counted as skipped."""


@dataclass
class ParsedFile:
    title: str
    body: str
    # From the front matter, or "" when the file gave none (then slug_from_path()).
    slug: str
    # From `date`, in UTC; None when the file gave none.
    publish_at: datetime | None
    ignored_keys: set[str] = field(default_factory=set)


def parse_date(value: object) -> datetime:
    """`date` as Jekyll and Hugo write it, in UTC: ISO 8601 or `YYYY-MM-DD HH:MM:SS`,
    with or without a zone (UTC when none), or a bare day (its midnight, UTC). YAML
    itself reads most of these into a datetime or a date; the rest arrive as text."""
    if isinstance(value, datetime):
        when = value
    elif isinstance(value, date):
        when = datetime.combine(value, time())
    elif isinstance(value, str):
        try:
            when = datetime.fromisoformat(value.strip())
        except ValueError:
            raise BadFile(
                f"date {value!r} is not a date: write it as ISO 8601 (2024-05-01T09:30:00+02:00) "
                "or YYYY-MM-DD HH:MM:SS (UTC when no zone is given)"
            ) from None
    else:
        raise BadFile(f"date must be a date, not {type(value).__name__} {value!r}")
    if when.tzinfo is None:
        return when.replace(tzinfo=UTC)
    try:
        return when.astimezone(UTC)
    except OverflowError:
        raise BadFile(f"date {value!r} is out of range") from None


def _text(key: str, value: object) -> str:
    """A scalar as text (`title: 2024` is the title "2024"); a list or mapping is refused."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        raise BadFile(f"{key} must be text, not {value!r}")
    if isinstance(value, int | float | date):
        return str(value)
    raise BadFile(f"{key} must be text, not a {type(value).__name__}")


def parse(text: str) -> ParsedFile | Draft:
    """Read a Markdown file's text. Raises BadFile with the reason when the front matter
    is missing or malformed, or gives no title, a bad date or a non-text slug."""
    if text.startswith("+++"):
        raise BadFile("TOML front matter (+++) is not supported: write it as YAML, between ---")
    match = _FRONT_MATTER.match(text)
    if match is None:
        raise BadFile("no front matter: the file must begin with a YAML block between --- lines")
    try:
        meta = yaml.load(match["yaml"], Loader=SafeLoader)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" at line {where.line + 2}" if where is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise BadFile(f"the front matter is not valid YAML{line}: {problem}") from None
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise BadFile("the front matter must be a mapping of keys to values (title: …)")
    draft = meta.get("draft", False)
    if draft is True or (isinstance(draft, str) and draft.strip().lower() in {"true", "yes"}):
        return Draft()
    title = meta.get("title")
    if title is None or (isinstance(title, str) and not title.strip()):
        raise BadFile("no title: the front matter must give a title")
    slug = meta.get("slug")
    return ParsedFile(
        title=_text("title", title),
        body=_LEADING_BLANK_LINES.sub("", text[match.end() :], count=1).rstrip(),
        slug="" if slug is None else _text("slug", slug),
        publish_at=None if meta.get("date") is None else parse_date(meta["date"]),
        ignored_keys={str(key) for key in meta if key not in KNOWN_KEYS},
    )


def slug_from_path(path: PurePath) -> str:
    """The slug a file without `slug:` gets: its name without the extension (without
    Jekyll's date prefix; a Hugo bundle's `index.md` gives its folder's name), made a
    slug as a title is (lowercase, spaces to hyphens, unicode letters kept)."""
    stem = path.stem
    if stem in _BUNDLE_NAMES and path.parent.name:
        stem = path.parent.name
    stem = _JEKYLL_DATE_PREFIX.sub("", stem)
    return slugify(stem, allow_unicode=True)


def render(*, title: str, slug: str, publish_at: datetime, body: str) -> str:
    """An article as a file `parse` reads back into the same fields."""
    meta = {"title": title, "slug": slug, "date": publish_at.astimezone(UTC).isoformat()}
    front = yaml.dump(meta, Dumper=SafeDumper, allow_unicode=True, sort_keys=False, width=1_000_000)
    return f"---\n{front}---\n\n{body}\n"
