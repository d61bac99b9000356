"""The site in a local folder (or a shared file system mounted on every host):
blogpublish.files, which writes through a synced temporary file and a rename and never
follows a link inside the folder."""

from __future__ import annotations

import builtins
import contextlib
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

from blogpublish import files, swap
from blogpublish.site import paths
from blogpublish.storage.base import SiteStorage, Staged, payload


class LocalStorage(SiteStorage):
    """Content type and cache control are the web server's (by the file's name); the
    folder keeps only the bytes."""

    def __init__(self, root: Path):
        self.root = Path(root)

    def __str__(self) -> str:
        return str(self.root)

    def write(self, rel, data, *, content_type=None, cache_control=None) -> None:
        files.atomic_write(self.root, rel, data)

    def write_many(self, items: builtins.list[tuple[str, str | bytes]]) -> None:
        files.write_many(self.root, items)

    def read(self, rel: str) -> bytes | None:
        return files.read_bytes(self.root, rel)

    def read_head(self, rel: str, size: int) -> bytes | None:
        return files.read_bytes(self.root, rel, size)

    def write_if_changed(self, rel: str, data: str | bytes) -> bool:
        return files.write_if_changed(self.root, rel, data)

    def exists(self, rel: str) -> bool:
        mode = files.entry_mode(self.root, rel)
        return mode is not None and stat.S_ISREG(mode)

    def delete(self, rel: str) -> None:
        files.unlink(self.root, rel)

    def delete_tree(self, rel: str) -> None:
        files.remove_tree(self.root, rel)

    def names(self, folder: str = "") -> list[str]:
        return files.list_names(self.root, folder)

    def list(self, prefix: str = "") -> Iterator[str]:
        """Regular files only, never through a link, dot-names (staging, temporary
        files, trash) left out."""
        try:
            with files.open_dir(self.root, *files.parts_of(prefix)) as dir_fd:
                yield from filter(files.holdable, _walk(dir_fd, prefix.strip("/")))
        except FileNotFoundError:
            return

    def page_dirs(self) -> dict[str, float | None]:
        self.root.mkdir(parents=True, exist_ok=True)
        found: dict[str, float | None] = {}
        # lstat only (follow_symlinks=False): a link is neither a page directory nor
        # trash, whatever it points to, so it is left alone and never deleted through.
        with os.scandir(self.root) as entries:
            for entry in entries:
                if not entry.is_dir(follow_symlinks=False) or entry.name.startswith("."):
                    continue
                if not files.holdable(entry.name):  # another tool's (a\b): left alone
                    continue
                page = files.entry_stat(self.root, f"{entry.name}/{paths.FRONT_PAGE}")
                is_page = page is not None and stat.S_ISREG(page.st_mode)
                # ctime: the rename (or exchange) that put the page in place sets it.
                found[entry.name] = page.st_ctime if page is not None and is_page else None
        return found

    # Pages are renamed into place from a staging folder on the same file system, so the
    # guard is held for a rename, not for writing and syncing the file.
    def stage(self, rel: str, data: str | bytes) -> Staged:
        name = rel.rsplit("/", 1)[-1]
        token = files.stage(self.root, paths.STAGING_DIR, name, payload(data))
        return Staged(rel=rel, data=b"", token=token)

    def commit(self, staged: Staged) -> None:
        """Swapped into place (blogpublish.swap): the page it replaces keeps the staged
        name until `discard`, so that `take_back` can restore it."""
        staged.placed = files.move_staged(self.root, paths.STAGING_DIR, staged.token, staged.rel)

    def stage_many(
        self, items: Iterable[tuple[str, str | bytes]]
    ) -> builtins.list[Staged | Exception]:
        """The batch's temporary files written (by a thread of their own, while `items`
        is read), then flushed to disk in ONE call (`files.stage_many`) instead of an
        fsync each."""
        rels: builtins.list[str] = []

        def named() -> Iterator[tuple[str, bytes]]:
            for rel, data in items:
                rels.append(rel)
                yield rel.rsplit("/", 1)[-1], payload(data)

        tokens = files.stage_many(self.root, paths.STAGING_DIR, named())
        return [
            token if isinstance(token, Exception) else Staged(rel=rel, data=b"", token=token)
            for rel, token in zip(rels, tokens, strict=True)
        ]

    def commit_many(self, staged: builtins.list[Staged]) -> None:
        moves = [(item.token, item.rel) for item in staged]
        for item, placed in zip(
            staged, files.move_many(self.root, paths.STAGING_DIR, moves), strict=True
        ):
            item.placed = placed

    def commit_each(self, staged: builtins.list[Staged]) -> builtins.list[Staged]:
        """`commit_many`: a rename is not conditional, so no page is returned."""
        self.commit_many(staged)
        return []

    def take_back(self, staged: Staged) -> bool:
        if not isinstance(staged.placed, swap.Placed):  # None: nothing was put in place
            return False
        return files.take_back(
            self.root, paths.STAGING_DIR, staged.token, staged.rel, staged.placed
        )

    def discard(self, staged: Staged) -> None:
        files.discard_staged(self.root, paths.STAGING_DIR, staged.token)

    def discard_many(self, staged: Iterable[Staged]) -> None:
        files.discard_many(self.root, paths.STAGING_DIR, [item.token for item in staged])

    def sweep(self, *, older_than: float) -> None:
        """Folders a removal renamed aside and a crash left, and staged pages older
        than any attempt can be."""
        for entry in os.scandir(self.root):
            if entry.is_dir(follow_symlinks=False) and paths.is_trash(entry.name):
                files.remove_tree(self.root, entry.name, aside=False)
        try:
            with files.open_dir(self.root, paths.STAGING_DIR) as staging:
                for name in os.listdir(staging):
                    with contextlib.suppress(FileNotFoundError, IsADirectoryError):
                        if os.lstat(name, dir_fd=staging).st_mtime < older_than:
                            os.unlink(name, dir_fd=staging)
        except FileNotFoundError:
            pass


def _walk(dir_fd: int, here: str) -> Iterator[str]:
    for name in sorted(os.listdir(dir_fd)):
        if name.startswith("."):
            continue
        rel = f"{here}/{name}" if here else name
        mode = os.lstat(name, dir_fd=dir_fd).st_mode
        if stat.S_ISREG(mode):
            yield rel
        elif stat.S_ISDIR(mode):
            try:
                child = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
            except OSError:
                continue
            try:
                yield from _walk(child, rel)
            finally:
                os.close(child)
