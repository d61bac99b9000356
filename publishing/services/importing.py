"""Bringing a blog in: Markdown files → pending articles (`manage.py import_articles`).

Each file is validated as the admin validates an article (the field validators, the
slug's key and the reserved names, the live pages of other articles, the addresses that
drafts and withdrawn stories keep), then written in
chunks: one transaction per chunk, new rows in one INSERT, edits in one UPDATE. Rows
written this way send no message each (no `save()`, so no `post_save`): after each
chunk's commit, a few batch tasks go out (`publishing.tasks.publish_batch`), which
claim the due rows many at a time. docs/import.md says what a user sees.

Idempotent by slug: a file whose article exists with the same content changes nothing
(no attempt, no webhook); different content is an edit, pending again with a fresh
budget of attempts, as an edit in the admin is. A `draft: true` file is kept as a
story's draft (publishing.services.stories), by its slug too, and never published.
"""

from __future__ import annotations

import errno
import logging
import os
import stat
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.db.models import OuterRef, Q, Subquery
from django.db.models.functions import Now
from django.utils import timezone

from publishing import markdown_files
from publishing.dispatch import dispatch_batches, dispatch_many, eta_horizon
from publishing.markdown_files import BadFile, Draft, ParsedFile, shown
from publishing.models import (
    CONTENT_FIELDS,
    EDITED_WHILE_PENDING,
    FRESH_PENDING,
    READER_FIELDS,
    Article,
    ArticleStatus,
    FormerAddress,
    Story,
    StoryState,
    key_of,
    normalize_slug,
)
from publishing.services.site import articles_readdress
from publishing.services.stories import story_save
from publishing.validators import BODY_MAX_BYTES
from work.db import address_locks
from work.lease import now_plus

logger = logging.getLogger(__name__)

# Rows per transaction: large enough that a commit costs little per row, small enough
# that publishing starts while the rest is still being read.
CHUNK = 500
# A file this large cannot hold a body of at most 1 MiB and sensible front matter:
# refused without reading it.
FRONT_MATTER_ROOM = 64 * 1024
FILE_MAX_BYTES = BODY_MAX_BYTES + FRONT_MATTER_ROOM
# Never through a link; O_NONBLOCK so that a FIFO swapped in after the lstat() cannot
# hang the open (a regular file ignores it).
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
# A folder on the way to a file found in a folder named: never a link.
_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# What a path that is not a regular file is, in a message.
_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


# An import that wrote at least this many rows refreshes PostgreSQL's statistics of the
# article table at its end (`_analyze`).
ANALYZE_AFTER = 1000
# Written rows read at once for their ETA (SQLite's bound on a statement's variables).
ARM_CHUNK = 500


def _analyze() -> None:
    """`ANALYZE` the article table on PostgreSQL. A table that grew from a few rows to
    thousands in seconds still has the statistics of the few until autovacuum comes
    round; with them, the planner ran each batch's claim as a scan of every pending
    row (14-40 ms a claim on 10,000 rows) instead of the pending index and the primary
    key (0.5 ms; docs/performance.md). A few tens of milliseconds, once per import."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {connection.ops.quote_name(Article._meta.db_table)}")


class Action:
    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"
    SKIPPED = "skipped"
    FAILED = "failed"

    ALL = (CREATED, UPDATED, UNCHANGED, SKIPPED, FAILED)


@dataclass
class FileResult:
    path: Path
    action: str
    reason: str = ""
    slug: str = ""


@dataclass
class ImportReport:
    counts: Counter = field(default_factory=Counter)
    failures: list[FileResult] = field(default_factory=list)
    ignored_keys: set[str] = field(default_factory=set)
    # `aliases` this site cannot serve (not one folder, or not a slug it allows), with why.
    aliases_not_kept: list[str] = field(default_factory=list)
    # What a file imported all the same should be told (a date's zone read as UTC).
    notes: list[str] = field(default_factory=list)
    # Article ids written (created or updated), for the caller's information.
    written_ids: list[int] = field(default_factory=list)

    def add(self, result: FileResult) -> None:
        self.counts[result.action] += 1
        if result.action == Action.FAILED:
            self.failures.append(result)

    @property
    def summary(self) -> str:
        return ", ".join(f"{action} {self.counts[action]}" for action in Action.ALL)


# --- finding and reading the files -------------------------------------------------


def find_files(paths: Iterable[str | Path]) -> Iterator[Path | FileResult]:
    """Each file `found_files` finds, or its failure."""
    for item in found_files(paths):
        yield item if isinstance(item, FileResult) else item[1]


def found_files(paths: Iterable[str | Path]) -> Iterator[tuple[Path | None, Path] | FileResult]:
    """(the folder named it was found in, or None for a file named; the file) for each
    file `_find_files` finds, each once: a file named and also found in a folder named
    (`import_articles posts ./posts/a.md`, overlapping globs) was read twice and
    refused as its own duplicate slug (a review's finding)."""
    seen: set[str] = set()
    for item in _find_files(paths):
        if not isinstance(item, FileResult):
            # Its folder resolved (a folder named through a link is the same folder), the
            # file itself not: a file that is a link still fails as one in read_file().
            where = os.path.join(os.path.realpath(item[1].parent), item[1].name)
            if where in seen:
                continue
            seen.add(where)
        yield item


def _find_files(paths: Iterable[str | Path]) -> Iterator[tuple[Path | None, Path] | FileResult]:
    """Each file named, and each Markdown file (.md, .markdown) under each folder named
    (`_files_in`). A path that does not exist gives a failure, not an exception."""
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for item in _files_in(path):
                yield item if isinstance(item, FileResult) else (path, item)
        elif os.path.lexists(path):
            yield None, path  # a file, or something read_file() refuses with its reason
        else:
            yield FileResult(path, Action.FAILED, "no such file or folder")


def _files_in(path: Path) -> list[Path | FileResult]:
    """Each Markdown file under the folder `path`, recursively, in name order; hidden
    files and folders are left out. The folder may be a link (the operator's choice);
    links inside it are not followed: a link to a folder is not entered (it is skipped,
    saying so), and a file that is a link (or not a regular file) fails in read_file().
    A folder that cannot be listed (no permission, a path past PATH_MAX) fails, named:
    os.walk() left it out without a word, and the run exited 0 without its files (a
    review's finding). Walked with a list of folders to list, as deep as the paths
    allow: os.walk() recurses on Python 3.11, and a tree ~1,000 folders deep raised
    RecursionError out of the import (the next review's finding)."""
    found: list[Path | FileResult] = []
    folders = [path]
    while folders:
        folder = folders.pop()
        try:
            with os.scandir(folder) as listing:
                entries = [entry for entry in listing if not entry.name.startswith(".")]
        except OSError as exc:
            reason = f"cannot read this folder: {exc.strerror or exc}"
            found.append(FileResult(folder, Action.FAILED, reason))
            continue
        for entry in entries:
            where = Path(folder, entry.name)
            if not _a_folder(entry):  # a file, or what read_file() refuses with its reason
                if markdown_files.is_markdown_name(entry.name):
                    found.append(where)
            elif entry.is_symlink():
                reason = "a link to a folder, not followed: name the folder itself"
                found.append(FileResult(where, Action.SKIPPED, reason))
            else:
                folders.append(where)
    return sorted(found, key=lambda item: str(item.path if isinstance(item, FileResult) else item))


def _a_folder(entry: os.DirEntry) -> bool:
    """A folder, or a link to one (as os.walk() tells them); False when it cannot say."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def _refuse_unless_regular(mode: int) -> None:
    if stat.S_ISLNK(mode):
        raise BadFile("a symbolic link, not followed: name the file it points to instead")
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _KINDS if test(mode)), "not a file")
        raise BadFile(f"{kind}, not a regular file: only regular files are read")


def _too_large(size: int) -> BadFile:
    return BadFile(
        f"the file is {size:,} bytes; at most {FILE_MAX_BYTES:,} are read (a body of "
        f"{BODY_MAX_BYTES:,} bytes, 1 MiB, and {FRONT_MATTER_ROOM // 1024} KiB of front matter)"
    )


def read_bytes(path: Path, *, root: Path | None = None) -> bytes:
    """The bytes of a regular file, at most FILE_MAX_BYTES of them; BadFile for a link
    (never followed), a device, a FIFO, a socket or a folder (never opened blocking),
    and a file over the cap (refused without reading it). `root`: the folder named
    that `path` was found in; no folder between them is followed if it is a link
    (`_open_under`)."""
    try:
        fd = _open_under(root, path) if root is not None else _open_file(None, str(path))
    except FileNotFoundError:
        raise BadFile("no such file") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # made a link after the lstat()
            raise BadFile("a symbolic link, not followed") from None
        raise BadFile(f"cannot read it: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as fh:
        try:
            info = os.fstat(fd)
            _refuse_unless_regular(info.st_mode)  # swapped after the lstat()
            if info.st_size > FILE_MAX_BYTES:
                raise _too_large(info.st_size)
            os.set_blocking(fd, True)
            raw = fh.read(FILE_MAX_BYTES + 1)
        except OSError as exc:
            raise BadFile(f"cannot read it: {exc.strerror or exc}") from None
    if len(raw) > FILE_MAX_BYTES:  # grew after the fstat()
        raise _too_large(len(raw))
    return raw


def _open_file(dir_fd: int | None, name: str) -> int:
    """`name` (in the folder `dir_fd`) opened for reading if it is a regular file, its
    type checked before the open (lstat: a link is not followed)."""
    _refuse_unless_regular(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    return os.open(name, _READ_FLAGS, dir_fd=dir_fd)


def _open_under(root: Path, path: Path) -> int:
    """`path`, found under the folder `root`, opened one folder at a time from `root`
    (which may be a link: the operator named it), each with O_NOFOLLOW | O_DIRECTORY
    and relative to the one before: a folder of the tree swapped for a link after the
    listing was followed, since O_NOFOLLOW guards only the last part of a path (a
    review's finding), and the file read through it could be anywhere."""
    *folders, name = path.relative_to(root).parts
    dir_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for folder in folders:
            try:
                inner = os.open(folder, _FOLDER_FLAGS, dir_fd=dir_fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise BadFile(
                        f"{folder!r} on its path is no longer a folder (a symbolic link, or"
                        " a file, since it was listed): not followed"
                    ) from None
                raise
            os.close(dir_fd)
            dir_fd = inner
        return _open_file(dir_fd, name)
    finally:
        os.close(dir_fd)


def read_file(path: Path, *, root: Path | None = None) -> ParsedFile | Draft:
    """Parse one file; BadFile with the reason when it cannot be imported. `root`: as
    for read_bytes."""
    raw = read_bytes(path, root=root)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise BadFile(f"not UTF-8 text (byte {exc.start + 1})") from None
    result = markdown_files.parse(text)
    if isinstance(result, ParsedFile) and _in_drafts(path):
        result = Draft(result)  # Jekyll builds its drafts only when asked to
    parsed = result.parsed if isinstance(result, Draft) else result
    if parsed.publish_at is None and not isinstance(result, Draft):
        # Jekyll's fallback for a post: the file name's date. Not a draft's: Jekyll's
        # drafts have none in their names (it dates them by the file's time), Hugo never
        # reads it, and an undated draft the export wrote as `<slug>.md` would take one
        # from a slug such as `2024-05-01-notes` (a review's finding).
        parsed.publish_at = markdown_files.date_from_path(path)
    if not parsed.language:  # a multilingual bundle's page is in its file's language
        parsed.language = markdown_files.bundle_language(path)
    if not parsed.slug:
        if any("\udc80" <= ch <= "\udcff" for ch in path.name):
            # Bytes that are not UTF-8, which the slug would silently drop (`caf\xe9.md`
            # became `caf`: a review's finding).
            raise BadFile("its file name is not UTF-8: set `slug:` in the front matter")
        parsed.slug = markdown_files.slug_from_path(path, settings.SITE_LANGUAGE)
        if not parsed.slug:
            raise BadFile("its file name gives no slug: set `slug:` in the front matter")
    return result


def _in_drafts(path: Path) -> bool:
    """Under Jekyll's `_drafts/` (which Jekyll reads recursively): of the folders named
    `_drafts` and `_posts` on the file's real path, the innermost is `_drafts`. So
    `import_articles site/_drafts/2024` (or a file in it) reads drafts, as Jekyll does
    (a review's finding: 9f4da39 counted only the folder named and below, and they went
    live), while a blog kept in a writer's `~/_drafts/site/` has its `_posts/` live (the
    finding 9f4da39 mended). Resolved, so a folder named through a link, or `.` inside
    `_drafts/`, is read as where it is."""
    for name in reversed(Path(os.path.realpath(path.parent)).parts):
        if name in ("_drafts", "_posts"):
            return name == "_drafts"
    return False


# --- validating -----------------------------------------------------------------------


def _messages(exc: ValidationError) -> str:
    if hasattr(exc, "error_dict"):
        return "; ".join(f"{name}: {' '.join(msgs)}" for name, msgs in exc.message_dict.items())
    return "; ".join(exc.messages)


_NON_CONTENT = [f.name for f in Article._meta.fields if f.name not in CONTENT_FIELDS]


def _article(parsed: ParsedFile, *, now) -> Article:
    """An unsaved Article of the file's content, validated as the admin validates it
    (the field validators; the slug's uniqueness is checked by chunk, in one query)."""
    article = Article(
        title=parsed.title,
        slug=parsed.slug,
        body=parsed.body,
        **{name: getattr(parsed, name) for name in READER_FIELDS},
    )
    article.publish_at = parsed.publish_at or now
    article.clean_fields(exclude=_NON_CONTENT)  # normalises first, as save() does
    article.fill_slug_keys()
    return article


# A draft keeps its address (docs/writing.md, "Drafts"): the admin and the API refuse it
# to any other article with this reason (Article._check_slug_free), and so does the import.
KEPT_BY_A_STORY = (
    "slug: a draft (a story never published, or withdrawn) keeps this address; choose another"
)


def kept_by_a_published_story(article_slug: str) -> str:
    """The reason for the address a published story keeps although its article moved
    to another slug (in the Article form or the API): the story still has this one."""
    return (
        f"slug: a published story keeps this address (its article is now at"
        f" {shown(article_slug)}); choose another"
    )


def _kept_by_stories(keys: Iterable[str]) -> dict[str, tuple[int, str]]:
    """{slug key: (the id of the story that keeps it, the reason a file of that key is
    refused)} among `keys`, in one query. A story in the trash keeps none (its key is
    its trash key). A story whose Article (the same id) has another slug is a published
    story whose article moved: no draft on no page, whatever KEPT_BY_A_STORY says."""
    article_slug = Article.objects.filter(pk=OuterRef("pk")).values("slug")[:1]
    rows = (
        Story.objects.filter(slug_key__in=list(keys))
        .annotate(article_slug=Subquery(article_slug))
        .values_list("slug_key", "id", "article_slug")
    )
    return {
        key: (story_id, KEPT_BY_A_STORY if slug is None else kept_by_a_published_story(slug))
        for key, story_id, slug in rows
    }


@dataclass
class _Planned:
    path: Path
    article: Article
    dated: bool  # the file gave a date (else an existing article keeps its own)
    aliases: tuple[str, ...] = ()  # its former addresses (`aliases`, `redirect_from`)


def _plan_chunk(
    planned: list[_Planned], report: ImportReport, on_result: Callable[[FileResult], None]
) -> tuple[list[_Planned], list[_Planned]]:
    """(new, changed) of a chunk: each file matched by its slug's key against the
    database; the unchanged and the conflicting reported here. Two queries per chunk."""
    keys = [p.article.slug_key for p in planned]
    kept = _kept_by_stories(keys)
    existing = {}
    live_pages = {}
    rows = Article.objects.filter(Q(slug_key__in=keys) | Q(published_slug_key__in=keys)).values(
        "id", "slug_key", "published_slug_key", "content_hash", "publish_at", "status"
    )
    for found in rows:
        existing[found["slug_key"]] = found
        if found["published_slug_key"]:
            live_pages[found["published_slug_key"]] = found["id"]
    new: list[_Planned] = []
    changed: list[_Planned] = []
    for p in planned:
        article, key = p.article, p.article.slug_key
        row = existing.get(key)
        other_page = live_pages.get(key)
        if other_page is not None and (row is None or row["id"] != other_page):
            _report(
                report,
                on_result,
                FileResult(
                    p.path,
                    Action.FAILED,
                    "slug: another article's live page is at this address; choose another",
                    article.slug,
                ),
            )
            continue
        story_id, reason = kept.get(key, (None, ""))
        if story_id is not None and (row is None or row["id"] != story_id):
            # A story's own article (published from it) is this file's to update.
            _report(report, on_result, FileResult(p.path, Action.FAILED, reason, article.slug))
            continue
        if row is not None:
            article.pk = row["id"]
            article._state.adding = False
            if not p.dated:
                article.publish_at = row["publish_at"]
        article.content_hash = article._content_hash()
        if row is None:
            new.append(p)
        elif row["content_hash"] == article.content_hash:
            _report(report, on_result, FileResult(p.path, Action.UNCHANGED, slug=article.slug))
        else:
            changed.append(p)
    same = {id(p) for p in _same_once_normalized(changed)}
    for p in changed:
        if id(p) in same:
            _report(report, on_result, FileResult(p.path, Action.UNCHANGED, slug=p.article.slug))
    return new, [p for p in changed if id(p) not in same]


def _same_once_normalized(changed: list[_Planned]) -> list[_Planned]:
    """Those of `changed` whose row, normalised as a save now would (a body's trailing
    newline, two spellings of one tag: rules newer than the row), is the file's content:
    a row saved before such a rule would otherwise be "updated", and republished, by
    the import of its own export. One query, for the rows whose hash differs only."""
    if not changed:
        return []
    stored = Article.objects.filter(pk__in=[p.article.pk for p in changed]).values(
        "id", *CONTENT_FIELDS
    )
    now_hash = {row["id"]: Article.hash_as_saved_now(row) for row in stored}
    return [p for p in changed if now_hash.get(p.article.pk) == p.article.content_hash]


def _report(report: ImportReport, on_result, result: FileResult) -> None:
    report.add(result)
    on_result(result)


# --- writing ------------------------------------------------------------------------------


TAKEN_MEANWHILE = "slug: another article took this slug meanwhile"


def _create(new: list[_Planned]) -> list[tuple[_Planned, str | None]]:
    """INSERT the new rows in one statement; if a concurrent writer took one of the
    slugs meanwhile, row by row, and the ones not inserted are returned with the
    reason, or None when the article that took the slug holds the file's content
    (`_same_as_winner`: another run of the same import). Under the addresses' locks (as
    an article's save and a draft's take theirs), a draft saved at one of them since
    the plan is seen here, and one saved after waits for this commit and then finds
    the article."""
    if not new:
        return []
    address_locks(p.article.slug_key for p in new)
    kept = _kept_by_stories(p.article.slug_key for p in new)
    refused: list[tuple[_Planned, str | None]] = [
        (p, kept[p.article.slug_key][1]) for p in new if p.article.slug_key in kept
    ]
    new = [p for p in new if p.article.slug_key not in kept]
    try:
        with transaction.atomic():
            Article.objects.bulk_create([p.article for p in new])
        return refused
    except IntegrityError:
        pass
    for p in new:
        p.article.pk = None
        try:
            with transaction.atomic():
                Article.objects.bulk_create([p.article])
        except IntegrityError:
            p.article.pk = None
            refused.append((p, None if _same_as_winner(p) else TAKEN_MEANWHILE))
    return refused


def _same_as_winner(p: _Planned) -> bool:
    """Whether the article that took the file's slug since the plan holds the file's
    content, as `_plan_chunk` compares an existing row (an undated file takes the row's
    date): two runs of one import at once, where the second reported every file the
    first created as failed, and exited 1 (a review's finding). The INSERT's
    IntegrityError came once the winner committed, so this read sees it."""
    row = Article.objects.filter(slug_key=p.article.slug_key).values("id", *CONTENT_FIELDS).first()
    if row is None:
        return False
    if not p.dated:
        p.article.publish_at = row["publish_at"]
        p.article.content_hash = p.article._content_hash()
    return Article.hash_as_saved_now(row) == p.article.content_hash


def _update(changed: list[_Planned]) -> list[_Planned]:
    """The edits: the content written in one UPDATE, then pending again as an edit in
    the admin makes it (Article._save_edit). Returns those that really changed (a
    concurrent edit may have written the same content meanwhile)."""
    if not changed:
        return []
    by_id = {p.article.pk: p for p in changed}
    current = dict(
        Article.objects.select_for_update().filter(pk__in=by_id).values_list("id", "content_hash")
    )
    edits = [p for pk, p in by_id.items() if current.get(pk) not in (None, p.article.content_hash)]
    if not edits:
        return []
    now = timezone.now()
    for p in edits:
        p.article.updated_at = now
    Article.objects.bulk_update(
        [p.article for p in edits], [*CONTENT_FIELDS, "content_hash", "updated_at"]
    )
    rows = Article.objects.filter(pk__in=[p.article.pk for p in edits])
    # An attempt in flight keeps its lease: its content no longer matches, so it cannot
    # complete, and the new content goes once it lets go.
    rows.filter(status__in=[ArticleStatus.PUBLISHED, ArticleStatus.DEAD]).update(
        **FRESH_PENDING, updated_at=Now()
    )
    rows.filter(status=ArticleStatus.PENDING).update(**EDITED_WHILE_PENDING, updated_at=Now())
    return edits


def _write_chunk(
    new: list[_Planned],
    changed: list[_Planned],
    report: ImportReport,
    on_result,
    *,
    aliased: Sequence[_Planned] = (),
) -> bool:
    """One transaction. Returns whether a due row was written (then batches go out).
    The former addresses of the chunk's articles (`aliased`: those unchanged, and the
    new and changed ones once written) with them: a batch that publishes a row finds
    them when its pass settles it (docs/site.md, "Former addresses")."""
    with transaction.atomic():
        # The edits' rows first, then the new rows' addresses: the order a save takes
        # an article's row and an address in (Article.save).
        edits = _update(changed)
        refused = _create(new)
        readdressed = _record_aliases(
            [*aliased, *(p for p in new if p.aliases and p.article.pk is not None)]
        )
    # An article left as it was gets no publish to write its new former addresses: the
    # next pass does (a note each), not the next full check.
    publishing = {id(p) for p in (*new, *edits)}
    left_as_it_was = {p.article.pk for p in aliased if id(p) not in publishing}
    articles_readdress(sorted(readdressed & left_as_it_was))
    refused_ids = {id(p) for p, _reason in refused}
    for p, reason in refused:
        if reason is None:  # another run wrote this very content meanwhile
            _report(report, on_result, FileResult(p.path, Action.UNCHANGED, slug=p.article.slug))
        else:
            _report(report, on_result, FileResult(p.path, Action.FAILED, reason, p.article.slug))
    for p in new:
        if id(p) not in refused_ids:
            report.written_ids.append(p.article.pk)
            _report(report, on_result, FileResult(p.path, Action.CREATED, slug=p.article.slug))
    edited = {id(p) for p in edits}
    for p in changed:
        action = Action.UPDATED if id(p) in edited else Action.UNCHANGED
        if action == Action.UPDATED:
            report.written_ids.append(p.article.pk)
        _report(report, on_result, FileResult(p.path, action, slug=p.article.slug))
    now = timezone.now()
    written = [p for p in new if id(p) not in refused_ids] + edits
    return any(p.article.publish_at <= now for p in written)


def _aliases(path: Path, parsed: ParsedFile, article: Article, report: ImportReport) -> tuple:
    """The file's former addresses that are slugs this site allows (the slug field's
    own validators) other than its own; each other one named in the report."""
    kept = []
    for alias in parsed.not_aliases:
        report.aliases_not_kept.append(f"{path}: {alias} (not one folder of the site)")
    for written in parsed.aliases:
        alias = normalize_slug(written)  # as a slug is stored (NFKC, lowercase)
        if key_of(alias) == article.slug_key.partition("#")[0]:
            continue  # its own address, in another spelling: the same folder
        try:
            Article._meta.get_field("slug").clean(alias, article)
        except ValidationError as exc:
            report.aliases_not_kept.append(f"{path}: {written} ({_messages(exc)})")
            continue
        kept.append(alias)
    return tuple(dict.fromkeys(kept))


def _record_aliases(planned: Iterable[_Planned]) -> set[int]:
    """Each imported article's aliases as its former addresses (one statement; one
    already recorded is left as it is). The articles that got one they did not have."""
    rows = {
        (alias, p.article.pk): FormerAddress(slug=alias, article_id=p.article.pk)
        for p in planned
        for alias in p.aliases
    }
    if not rows:
        return set()
    had = set(
        FormerAddress.objects.filter(article_id__in={pk for _, pk in rows}).values_list(
            "slug", "article_id"
        )
    )
    FormerAddress.objects.bulk_create([rows[key] for key in sorted(rows)], ignore_conflicts=True)
    return {pk for alias, pk in rows if (alias, pk) not in had}


def _report_same_slug(
    group: list[_Planned | tuple[Path, ParsedFile]],
    report: ImportReport,
    on_result: Callable[[FileResult], None],
) -> None:
    """Each of the files that share one slug fails, naming the others."""

    def path_slug(file: _Planned | tuple[Path, ParsedFile]) -> tuple[Path, str]:
        if isinstance(file, _Planned):
            return file.path, file.article.slug
        return file[0], normalize_slug(file[1].slug)

    for file in group:
        path, slug = path_slug(file)
        others = ", ".join(str(path_slug(other)[0]) for other in group if other is not file)
        reason = f"slug: {slug!r} is also the slug of {others}"
        _report(report, on_result, FileResult(path, Action.FAILED, reason, slug))


# --- drafts --------------------------------------------------------------------------------


def _report_draft(
    path: Path,
    parsed: ParsedFile,
    report: ImportReport,
    on_result: Callable[[FileResult], None],
    *,
    dry_run: bool,
) -> None:
    """A draft file kept (`_keep_draft`), reported with its notes."""
    kept = _keep_draft(path, parsed, dry_run=dry_run)
    _report(report, on_result, kept)
    if kept.action is not Action.FAILED:  # its date is kept as an article's is
        report.ignored_keys |= parsed.ignored_keys
        report.notes += [f"{path}: {note}" for note in parsed.notes]
        for alias in [*parsed.aliases, *parsed.not_aliases]:
            # A draft is on no page: no address sends readers to it.
            report.aliases_not_kept.append(f"{path}: {alias} (a draft has no page)")


def _keep_draft(path: Path, parsed: ParsedFile, *, dry_run: bool) -> FileResult:
    """A `draft: true` file becomes a story's draft (issue 22), never published; by its
    slug, as articles are: the draft of that slug is updated (a new revision when the
    text changed) only while it is on no page (never published, or withdrawn). A slug
    that an article has already is refused, also when that article is a story's,
    published; and so is the slug of a published story whose article moved to another
    one (a review's finding: the file edited that live story's draft, which the
    writer's next Publish put live): a draft file must not take back, or shadow, what
    is on the blog, nor edit behind it a draft its writer may be working on."""
    slug = normalize_slug(parsed.slug)
    key = key_of(slug)
    if Article.objects.filter(Q(slug_key=key) | Q(published_slug_key=key)).exists():
        reason = "draft: an article has this slug already; remove `draft: true` to update it"
        return FileResult(path, Action.FAILED, reason, slug)
    with transaction.atomic():
        # Locked, as story_publish locks it: a publish of this story waits for the save
        # below, or has been seen here.
        story = (
            Story.objects.select_for_update().filter(slug_key=key, trashed_at__isnull=True).first()
        )
        if story is not None and (reason := _on_a_page(story)):
            return FileResult(path, Action.FAILED, reason, slug)
        return _save_draft(path, parsed, slug, story, dry_run=dry_run)


def _on_a_page(story: Story) -> str:
    """Why a draft file may not update `story` ("" when it may): the story is
    published, its Article (the same id) at another slug than the story's own."""
    article_slug = Article.objects.filter(pk=story.pk).values_list("slug", flat=True).first()
    if story.state == StoryState.DRAFT and article_slug is None:
        return ""
    where = "" if article_slug is None else f", its article now at {shown(article_slug)}"
    return (
        f"draft: this slug is a published story's{where}: a file updates only a draft on"
        " no page (never published, or withdrawn); edit its draft in the admin, or choose"
        " another slug"
    )


def _save_draft(
    path: Path, parsed: ParsedFile, slug: str, story: Story | None, *, dry_run: bool
) -> FileResult:
    """The file as the draft of `story` (a new story when None)."""
    fields: dict[str, Any] = {
        "title": parsed.title,
        "body": parsed.body,
        "slug": slug,
        # A file without a date keeps the draft's own, as an article's is kept: a date
        # set in the desk is not undone by importing the same file again.
        "publish_at": parsed.publish_at if parsed.publish_at or not story else story.publish_at,
        **{name: getattr(parsed, name) for name in READER_FIELDS},
    }
    try:
        if dry_run:
            Story(id=0, **fields).full_clean(exclude=["slug_key"], validate_unique=False)
            saved = story
        else:
            saved = story_save(story_id=story.pk if story else None, note="imported", **fields)
            if saved is not None and parsed.first_published is not None:  # kept by a publish
                Story.objects.filter(pk=saved.pk, first_publish_at__isnull=True).update(
                    first_publish_at=parsed.first_published
                )
    except ValidationError as exc:
        return FileResult(path, Action.FAILED, _messages(exc), slug)
    if story is None:
        return FileResult(path, Action.CREATED, "draft", slug)
    changed = saved is not None and saved.version != story.version
    return FileResult(path, Action.UPDATED if changed else Action.UNCHANGED, "draft", slug)


# --- the import ----------------------------------------------------------------------------


def _arm_scheduled(ids: list[int]) -> None:
    """A message with its ETA for each written row due within the ETA horizon, as a
    save arms one (Article.save): the rows are written in bulk, with no save's signal,
    and one dated a little ahead waited for the catch-up, up to about three minutes past
    its time (a review's finding). By the database clock, as the catch-up arms them."""
    for start in range(0, len(ids), ARM_CHUNK):
        soon = list(
            Article.objects.filter(
                pk__in=ids[start : start + ARM_CHUNK],
                status=ArticleStatus.PENDING,
                publish_at__gt=Now(),
                publish_at__lte=now_plus(eta_horizon()),
            ).values_list("id", "publish_at")
        )
        if soon:
            dispatch_many(soon)


def articles_import(
    paths: Iterable[str | Path],
    *,
    dry_run: bool = False,
    chunk: int = CHUNK,
    on_result: Callable[[FileResult], None] = lambda result: None,
) -> ImportReport:
    """Import every Markdown file under `paths` (docs/import.md). A bad file is
    reported with its reason and never stops the others. With `dry_run`, every file
    is read, validated and matched as for real, and nothing is written or sent."""
    report = ImportReport()
    now = timezone.now().replace(microsecond=0)
    parsed: list[tuple[Path, ParsedFile]] = []
    drafts: list[tuple[Path, ParsedFile]] = []
    for item in found_files(paths):
        if isinstance(item, FileResult):
            _report(report, on_result, item)
            continue
        root, found = item
        try:
            result = read_file(found, root=root)
        except BadFile as exc:
            _report(report, on_result, FileResult(found, Action.FAILED, exc.reason))
            continue
        if isinstance(result, Draft):
            drafts.append((found, result.parsed))
            continue
        report.ignored_keys |= result.ignored_keys
        parsed.append((found, result))

    planned: list[_Planned] = []
    for path, result in parsed:
        try:
            article = _article(result, now=now)
        except ValidationError as exc:
            reason = _messages(exc)
            _report(report, on_result, FileResult(path, Action.FAILED, reason, result.slug))
            continue
        aliases = _aliases(path, result, article, report)
        report.notes += [f"{path}: {note}" for note in result.notes]
        planned.append(
            _Planned(path, article, dated=result.publish_at is not None, aliases=aliases)
        )

    # Two files with one slug (up to case and width), drafts or not: which one is meant
    # is not ours to guess, so neither is imported, and each names the other.
    by_key: dict[str, list[_Planned | tuple[Path, ParsedFile]]] = {}
    for p in planned:
        by_key.setdefault(p.article.slug_key, []).append(p)
    for draft in drafts:
        by_key.setdefault(key_of(normalize_slug(draft[1].slug)), []).append(draft)
    unique = []
    for group in by_key.values():
        if len(group) > 1:
            _report_same_slug(group, report, on_result)
        elif isinstance(planned_one := group[0], _Planned):
            unique.append(planned_one)
        else:
            _report_draft(*planned_one, report, on_result, dry_run=dry_run)
    unique.sort(key=lambda p: str(p.path))

    for start in range(0, len(unique), chunk):
        part = unique[start : start + chunk]
        new, changed = _plan_chunk(part, report, on_result)
        if dry_run:
            for p in new:
                _report(report, on_result, FileResult(p.path, Action.CREATED, slug=p.article.slug))
            for p in changed:
                _report(report, on_result, FileResult(p.path, Action.UPDATED, slug=p.article.slug))
            continue
        aliased = [p for p in part if p.aliases and p.article.pk is not None]
        if _write_chunk(new, changed, report, on_result, aliased=aliased):
            # After the commit: the batches find the rows. A broker that is down costs a
            # log line; the rows stay pending for the catch-up.
            dispatch_batches()
    if not dry_run:
        _arm_scheduled(report.written_ids)
    if report.counts[Action.CREATED] + report.counts[Action.UPDATED] >= ANALYZE_AFTER:
        _analyze()
    logger.debug("import_articles: %s", report.summary)
    return report
