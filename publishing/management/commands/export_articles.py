"""Every article as a Markdown file with YAML front matter (docs/import.md).

    python manage.py export_articles DIR [--prune]

One `<slug>.md` per article in DIR (made if missing), in the format `import_articles`
reads: `title`, `slug`, `date` (publish_at, UTC), then the body as stored; and one per
draft on no page (a story never published, or withdrawn; not in the trash), with
`draft: true`. Importing the folder into an empty database gives the same articles and
drafts. An article whose draft holds changes not published yet is written as readers
see it, and named on stderr: its draft's text is in no file. The Markdown files
directly in DIR (as the import tells them: `.md`, `.markdown`, in any case) that this
run did not write (an earlier export's, of articles deleted or moved since) are named
on stderr, and removed with `--prune`: importing the folder would bring them back;
but not one whose slug an article or draft has by then (saved while the export ran).
DIR's subfolders are not looked in. The articles and drafts are read in one snapshot
(work.db.read_snapshot), so a story published meanwhile is in a file.

Each file is written to `.<slug>.md.tmp` beside it, created new (`O_CREAT | O_EXCL |
O_NOFOLLOW`: never through a link, never into a file already there), then renamed into
place, which replaces a link at `<slug>.md` itself, never the file it points to. Every
name is relative to one descriptor of DIR, so nothing is written outside it. DIR
itself may be a link: that is the operator's choice.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from django.conf import settings
from django.core.management.base import CommandError
from django.db.models import F, QuerySet

from publishing.markdown_files import is_markdown_name, render
from publishing.models import (
    CONTENT_FIELDS,
    DRAFT_FIELDS,
    Article,
    FormerAddress,
    Story,
    StoryState,
)
from work.commands import DatabaseCommand
from work.db import read_snapshot

FILE_MODE = 0o644
# The articles with unpublished draft changes named by slug, at most (then how many more).
UNPUBLISHED_SHOWN = 20
# The files of an earlier export named, at most (then how many more).
STALE_SHOWN = 5
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _create_new(dir_fd: int, name: str) -> int:
    """`name` in the folder, created new. Something already there (a temporary file a
    stopped export left, or a link planted to redirect the write) is unlinked, which
    removes a link, not its target, and the creation tried once more."""
    try:
        return os.open(name, _CREATE_FLAGS, FILE_MODE, dir_fd=dir_fd)
    except FileExistsError:
        os.unlink(name, dir_fd=dir_fd)
        return os.open(name, _CREATE_FLAGS, FILE_MODE, dir_fd=dir_fd)


def write_file(dir_fd: int, name: str, text: str) -> None:
    """Replace `name` in the folder with `text`, through a new temporary file and a
    rename: a reader sees the old file or the new one, and no link is followed."""
    tmp = f".{name}.tmp"
    fd = _create_new(dir_fd, tmp)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(text.encode("utf-8"))
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise


def _refuse_inside_site_root(folder: Path) -> None:
    """A DIR inside a local SITE_ROOT is refused: the site serves that folder to anyone,
    and the export holds every draft's text (a review's finding: `export_articles
    $SITE_ROOT/backup` made /backup/<slug>.md readable). The same test as
    config/checks.py's for a SQLite file there: the paths resolved, links followed."""
    site_root = settings.SITE_ROOT
    if not isinstance(site_root, Path):  # s3://…: nothing local is served
        return
    try:
        inside = folder.resolve().is_relative_to(site_root.resolve())
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop (Python < 3.13)
        raise CommandError(f"cannot resolve {folder}: {exc}") from exc
    if inside:
        raise CommandError(
            f"export_articles: {folder} is inside SITE_ROOT ({str(site_root)!r}), which is"
            " served as the site: anyone could read every draft's text there. Write the"
            " export elsewhere."
        )


def _drafts() -> QuerySet[Story]:
    """The stories exported as drafts: a draft with no Article (the same id), never
    published or withdrawn, not in the trash."""
    return (
        Story.objects.filter(state=StoryState.DRAFT, trashed_at__isnull=True)
        .exclude(pk__in=Article.objects.values("pk"))
        .exclude(slug="")
    )


def _listed(names: list[str]) -> str:
    """The first STALE_SHOWN names, then how many more."""
    more = f" and {len(names) - STALE_SHOWN} more" if len(names) > STALE_SHOWN else ""
    return ", ".join(names[:STALE_SHOWN]) + more


def _not_alive(names: list[str]) -> tuple[list[str], list[str]]:
    """`names` split into those that no article, and no draft the export writes (`_drafts`),
    has as its slug now, which --prune may remove, and the others: a story saved after
    the export's snapshot is in no file of this run, and its earlier copy is all the
    folder holds of it. Only the name the export writes, `<slug>.md`: another case or
    extension of it (`Hello.md`, `hello.markdown`) is no file a later export writes,
    and kept it stayed for good, each naming the other as a duplicate to the import (a
    review of the mend)."""
    stems = {name: name[: -len(".md")] for name in names if name.endswith(".md")}
    wanted = set(stems.values())
    slugs = {
        slug
        for model_slugs in (
            Article.objects.values_list("slug", flat=True),
            _drafts().values_list("slug", flat=True),
        )
        for slug in model_slugs.iterator()
        if slug in wanted
    }
    return (
        [name for name in names if stems.get(name) not in slugs],
        [name for name in names if stems.get(name) in slugs],
    )


class Command(DatabaseCommand):
    help = "Write every article, and every draft, to DIR as Markdown with YAML front matter."

    def add_arguments(self, parser) -> None:
        parser.add_argument("dir", metavar="DIR", help="the folder to write (made if missing)")
        parser.add_argument(
            "--prune",
            action="store_true",
            help="remove the Markdown files directly in DIR that this export did not write",
        )

    def handle(self, *args, dir: str, prune: bool = False, **options) -> None:
        if not dir.strip():
            # Path("") is ".": an unset variable in `export_articles "$DIR"` wrote every
            # article into the working directory (a review's finding).
            raise CommandError("export_articles: DIR is empty; name the folder to write.")
        folder = Path(dir)
        _refuse_inside_site_root(folder)
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CommandError(f"cannot make {folder}: {exc.strerror or exc}") from exc
        try:
            dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            raise CommandError(f"cannot open {folder}: {exc.strerror or exc}") from exc
        names: set[str] = set()
        try:
            # Both reads in one snapshot: a story published (or withdrawn) between the
            # articles' read and the drafts' was in neither, so in no file, and --prune
            # then removed its earlier copy (a review's finding).
            with read_snapshot():
                articles, drafts = self._export(folder, dir_fd, names)
            self.stdout.write(
                f"export_articles: {articles} article(s) and {drafts} draft(s) written to {folder}"
            )
            self._not_written(folder, dir_fd, names, prune=prune)
        finally:
            os.close(dir_fd)
        self._unpublished_changes()

    def _not_written(self, folder: Path, dir_fd: int, names: set[str], *, prune: bool) -> None:
        """The Markdown files directly in DIR (`is_markdown_name`, the import's own
        test: `old.markdown` and `Older.MD` were left out, and the import read them)
        that this run did not write: an earlier export's, of articles deleted or moved
        since, which an import of the folder would bring back (a review's finding: a
        nightly export into one folder kept them without a word). Named on stderr;
        removed with --prune (unlinked: a link goes, not what it points to). Nothing
        else in DIR is touched, and its subfolders are not looked in."""
        try:
            with os.scandir(dir_fd) as entries:
                stale = sorted(
                    entry.name
                    for entry in entries
                    if is_markdown_name(entry.name)
                    and entry.name not in names
                    and not entry.is_dir(follow_symlinks=False)
                )
        except OSError as exc:
            raise CommandError(f"cannot list {folder}: {exc.strerror or exc}") from exc
        if not stale:
            return
        if not prune:
            self.stderr.write(
                f"export_articles: {len(stale)} Markdown file(s) in {folder} are not of this"
                f" export (articles deleted or moved since an earlier one?), and an import of"
                f" the folder would bring them back: {_listed(stale)}. --prune removes them."
            )
            return
        stale, alive = _not_alive(stale)
        if alive:
            self.stderr.write(
                f"export_articles: {len(alive)} Markdown file(s) not of this export kept in"
                f" {folder}: an article or draft of that slug exists now (saved during the"
                f" export?); the next export writes it: {_listed(alive)}."
            )
        if not stale:
            return
        for name in stale:
            try:
                os.unlink(name, dir_fd=dir_fd)
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise CommandError(f"cannot remove {folder / name}: {exc.strerror or exc}") from exc
        self.stderr.write(
            f"export_articles: {len(stale)} Markdown file(s) not of this export removed from"
            f" {folder}: {_listed(stale)}."
        )

    def _unpublished_changes(self) -> None:
        """Name the articles whose story holds changes not published yet: the export
        writes an article's live version, and its draft's text is in no file (a review's
        finding: an export taken for a move would leave it behind without a word)."""
        edited = list(
            Story.objects.filter(
                pk__in=Article.objects.values("pk"),
                version__gt=F("published_version"),
                trashed_at__isnull=True,
            )
            .order_by("slug")
            .values_list("slug", flat=True)
        )
        if not edited:
            return
        shown = ", ".join(edited[:UNPUBLISHED_SHOWN])
        left = len(edited) - UNPUBLISHED_SHOWN
        more = f" and {left} more" if left > 0 else ""
        self.stderr.write(
            f"export_articles: {len(edited)} article(s) have draft changes not published,"
            f" which the export leaves out (it writes what readers see): {shown}{more}."
            " Publish or discard them first to export them."
        )

    def _export(self, folder: Path, dir_fd: int, names: set[str]) -> tuple[int, int]:
        articles = Article.objects.order_by("id").values("id", *CONTENT_FIELDS)
        drafts = (
            _drafts().order_by("id").values(*DRAFT_FIELDS, first_published=F("first_publish_at"))
        )
        return self._write(folder, dir_fd, articles, names), self._write(
            folder, dir_fd, drafts, names, draft=True
        )

    def _write(
        self, folder: Path, dir_fd: int, rows, names: set[str], *, draft: bool = False
    ) -> int:
        written = 0
        # Its former addresses (docs/site.md): what its file lists as `aliases`.
        aliases: dict[int, list[str]] = {}
        if not draft:
            for article_id, alias in FormerAddress.objects.order_by("slug").values_list(
                "article_id", "slug"
            ):
                aliases.setdefault(article_id, []).append(alias)
        for row in rows.iterator(chunk_size=500):
            slug = row["slug"]
            article_id = row.pop("id", None)
            text = render(**row, draft=draft, aliases=aliases.get(article_id))
            name = f"{slug}.md"
            if "/" in slug or "\x00" in slug or slug.startswith("."):
                # The database's checks refuse such a slug; a name is never a path.
                raise CommandError(f"cannot write {folder / name}: not a plain file name")
            try:
                write_file(dir_fd, name, text)
            except OSError as exc:
                raise CommandError(f"cannot write {folder / name}: {exc.strerror or exc}") from exc
            names.add(name)
            written += 1
        return written
