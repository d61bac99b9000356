"""Writing the site to disk: every file replaced atomically, never half-written, and
never through a symbolic link.

Every function takes the site's root and a path relative to it ("page/3/index.html").
The directories below the root are opened one at a time with `O_NOFOLLOW`, and each
operation is made relative to the directory it opened (`dir_fd`), so a link inside
SITE_ROOT, there before or made meanwhile, is never followed:

- a link where the site needs a directory (an article's folder, `page/`, `.staging/`)
  raises `SymlinkRefused`, naming it; nothing is written or deleted through it;
- a link where the site writes a file is replaced by the file (a rename replaces the
  link itself, never its target), and is never read through;
- a link being removed is unlinked; what it points to is untouched.

SITE_ROOT itself may be a link: that is the operator's setting, not content of the site.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import os
import shutil
import stat
import uuid
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from blogpublish import swap
from blogpublish.exceptions import SymlinkRefused

FILE_MODE = 0o644  # readable by the web server, whatever the umask
DIR_MODE = 0o755
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a FIFO planted in the site must not hang the reader; files ignore it.
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def parts_of(rel: str) -> list[str]:
    """The components of a path relative to the site's root; nothing that could leave it."""
    parts = [part for part in rel.split("/") if part]
    if rel.startswith("/") or any(
        part in (".", "..") or "\x00" in part or "\\" in part for part in parts
    ):
        raise ValueError(f"{rel!r} is not a path inside SITE_ROOT")
    return parts


def holdable(rel: str) -> bool:
    """Could the site hold a document or folder at `rel`: components, none empty, that
    `parts_of` takes. A name another tool put in SITE_ROOT (`a\\b` from Windows, a key
    `prefix//x` or with `..` in a bucket) is none: listings leave it out, or one such
    name made every full check, pass and delete around it fail for good (a review's
    finding), and a deleted article's page stayed online."""
    try:
        return "/".join(parts_of(rel)) == rel != ""
    except ValueError:
        return False


def _is_link(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(name, dir_fd=dir_fd).st_mode)
    except FileNotFoundError:
        return False


@contextlib.contextmanager
def open_dir(
    root: Path, *parts: str, create: bool = False, flushed_later: bool = False
) -> Iterator[int]:
    """A descriptor of the directory root/parts…, each component opened without
    following a link (`SymlinkRefused` names one); made where missing if `create`, each
    new entry made durable by an fsync of its parent, unless `flushed_later`: the
    caller flushes the whole file system (`syncfs`) before anything relies on it."""
    if create:
        root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        here = root
        for part in parts:
            here = here / part
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, DIR_MODE, dir_fd=fd)
                    # The new directory's entry is durable only once its parent is.
                    if not flushed_later:
                        os.fsync(fd)
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                # Linux says ELOOP for a link to anything; ENOTDIR on some systems.
                if exc.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(fd, part):
                    raise SymlinkRefused(path=here) from exc
                raise
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def is_dir_at(dir_fd: int, name: str) -> bool:
    """Is `name` in the directory a directory itself (a link to one is not)?"""
    try:
        return stat.S_ISDIR(os.lstat(name, dir_fd=dir_fd).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return False


def open_regular_file(dir_fd: int, name: str) -> int | None:
    """A descriptor for reading `name` in the directory, or None when it is missing, a
    link (not followed), or not a regular file (a directory, a FIFO, a device)."""
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    os.set_blocking(fd, True)
    return fd


def _payload(data: str | bytes) -> bytes:
    return data.encode("utf-8") if isinstance(data, str) else data


def _write_temp(dir_fd: int, name: str, payload: bytes, *, sync: bool = True) -> str:
    """A temporary file for `name` in the directory, synced unless `sync` is False (the
    caller syncs many at once: `stage_many`); returns its name."""
    tmp = f".{name}.{uuid.uuid4().hex[:12]}.tmp"
    fd = os.open(tmp, _CREATE_FLAGS, FILE_MODE, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fchmod(fh.fileno(), FILE_MODE)
            if sync:
                os.fsync(fh.fileno())
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
    return tmp


def atomic_write(root: Path, rel: str, data: str | bytes) -> None:
    """Write root/rel through a temporary file beside it and `os.replace`.

    Readers see the old file or the new one, never a mix; a crash leaves at most a
    stray temporary file (a dot-file, never served, never listed).
    """
    *folder, name = parts_of(rel)
    with open_dir(root, *folder, create=True) as dir_fd:
        tmp = _write_temp(dir_fd, name, _payload(data))
        try:
            os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp, dir_fd=dir_fd)
            raise
        os.fsync(dir_fd)  # the rename itself on disk, not only the file's bytes


def write_many(root: Path, items: list[tuple[str, str | bytes]]) -> None:
    """`atomic_write` for many files (rel, data), with two flushes of the file system
    (`syncfs`) in all instead of an fsync of each file and of its folder: every file
    written to a temporary file beside its target, ONE flush, each renamed into place,
    ONE flush for the renames (and the folders made). Each file is replaced whole, as
    `atomic_write` does; the first failure raises (the files renamed before it are in
    place) and the temporary files not renamed are removed. Without `syncfs`,
    `atomic_write` each."""
    if not _has_syncfs():
        for rel, data in items:
            atomic_write(root, rel, data)
        return
    by_folder: dict[tuple[str, ...], list[tuple[str, bytes]]] = {}
    for rel, data in items:
        *parts, name = parts_of(rel)
        by_folder.setdefault(tuple(parts), []).append((name, _payload(data)))
    staged: list[tuple[tuple[str, ...], str, str]] = []  # (folder, temporary, name)
    try:
        for folder, named in by_folder.items():
            with open_dir(root, *folder, create=True, flushed_later=True) as dir_fd:
                for name, payload in named:
                    staged.append((folder, _write_temp(dir_fd, name, payload, sync=False), name))
        with open_dir(root) as root_fd:
            _syncfs(root_fd)  # every file's bytes on disk before any rename
            while staged:
                folder, tmp, name = staged[0]
                with open_dir(root, *folder) as dir_fd:
                    os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
                staged.pop(0)
            _syncfs(root_fd)  # the renames and the new folders
    finally:
        for folder, tmp, _name in staged:
            with contextlib.suppress(OSError, SymlinkRefused), open_dir(root, *folder) as dir_fd:
                os.unlink(tmp, dir_fd=dir_fd)


def read_bytes(root: Path, rel: str, limit: int = -1) -> bytes | None:
    """The content of root/rel (its first `limit` bytes, given one), or None when it
    is missing, a link or not a file."""
    *folder, name = parts_of(rel)
    try:
        with open_dir(root, *folder) as dir_fd:
            fd = open_regular_file(dir_fd, name)
    except FileNotFoundError:
        return None
    if fd is None:
        return None
    with os.fdopen(fd, "rb") as fh:
        return fh.read(limit)


def write_if_changed(root: Path, rel: str, data: str | bytes) -> bool:
    """`atomic_write`, unless the file already holds exactly `data`; True if written.

    Rebuilding a view that did not change then costs a read, not a write and an fsync,
    and leaves the file's mtime (which caches and rsync go by) alone.
    """
    payload = _payload(data)
    if read_bytes(root, rel) == payload:
        return False
    atomic_write(root, rel, payload)
    return True


def stage(root: Path, folder: str, name: str, data: str | bytes) -> str:
    """The slow half of a write: the bytes in a synced temporary file in root/folder
    (the same file system), for `move_staged` to rename into place, so that a lock
    need be held only for the rename. Returns the temporary file's name."""
    with open_dir(root, *parts_of(folder), create=True) as dir_fd:
        return _write_temp(dir_fd, name, _payload(data))


def move_staged(root: Path, folder: str, staged: str, rel: str) -> swap.Placed:
    """Put a file `stage` wrote at root/rel, making its directory if missing; the file
    it replaces takes the staged name, so `take_back` can restore it (swap.swap_in)."""
    *target, name = parts_of(rel)
    with (
        open_dir(root, *parts_of(folder)) as src_fd,
        open_dir(root, *target, create=True) as dst_fd,
    ):
        placed = swap.swap_in(src_fd, staged, dst_fd, name)
        # The rename on disk: without it a power loss can bring back the old page while
        # the database says the new one is live (the staging folder loses its entry in
        # the same journal commit on one file system).
        os.fsync(dst_fd)
    return placed


def move_many(root: Path, folder: str, moves: list[tuple[str, str]]) -> list[swap.Placed]:
    """`move_staged` for many (staged, rel) pairs, the staging folder opened once; the
    first failure raises (the moves before it are done). The renames are then made
    durable together: one flush of the file system, or an fsync of each directory."""
    placed = []
    # A new page's folder needs no fsync of its own when the flush below is `syncfs`:
    # that one flush makes the folder and the rename into it durable together (an
    # fsync per new folder was a wait for the disk per new article).
    flushed_later = _has_syncfs()
    with open_dir(root, *parts_of(folder)) as src_fd:
        try:
            for staged, rel in moves:
                *target, name = parts_of(rel)
                with open_dir(root, *target, create=True, flushed_later=flushed_later) as dst_fd:
                    placed.append(swap.swap_in(src_fd, staged, dst_fd, name))
        finally:
            _sync_dirs(root, src_fd, {tuple(parts_of(rel)[:-1]) for _, rel in moves})
    return placed


def take_back(root: Path, folder: str, staged: str, rel: str, placed: swap.Placed) -> bool:
    """Undo a `move_staged` whose write was not covered by its guard (swap.swap_out)."""
    *target, name = parts_of(rel)
    with open_dir(root, *parts_of(folder)) as src_fd, open_dir(root, *target) as dst_fd:
        return swap.swap_out(src_fd, staged, dst_fd, name, placed)


def _sync_dirs(root: Path, any_fd: int, folders: set[tuple[str, ...]]) -> None:
    """The renames into `folders` made durable: `syncfs` once, else an fsync each."""
    if _syncfs(any_fd):
        return
    for folder in sorted(folders):
        with contextlib.suppress(FileNotFoundError), open_dir(root, *folder) as fd:
            os.fsync(fd)


def _has_syncfs() -> bool:
    return getattr(_libc(), "syncfs", None) is not None


def _syncfs(dir_fd: int) -> bool:
    """Flush the whole file system holding the directory in one call (Linux `syncfs`):
    one wait for the disk for a batch of files instead of one `fsync` each. False
    where the call is missing; the caller then syncs each file."""
    syncfs = getattr(_libc(), "syncfs", None)
    if syncfs is None:
        return False
    if syncfs(dir_fd) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"syncfs: {os.strerror(err)}")
    return True


@functools.cache
def _libc():
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:  # no C library to load (not Linux): per-file fsync
        return None


def stage_many(
    root: Path, folder: str, items: Iterable[tuple[str, bytes | str]]
) -> list[str | OSError]:
    """`stage` for many files (name, data) at once: every file written, then ONE flush
    of the file system (`syncfs`) instead of an `fsync` per file, so each staged file
    is on disk before `move_staged` renames it, as `stage` makes it. Returns, per item,
    the temporary file's name, or the OSError that kept that one item from being
    staged (the others are staged).

    The files are written by a thread of their own while `items` is read, so a
    generator that renders each page when asked for it (the re-render's) renders the
    next page while the last is written: the writes wait for the disk, not the GIL.
    If `items` raises, what was staged is removed and the error goes on."""
    with (
        open_dir(root, *parts_of(folder), create=True) as dir_fd,
        ThreadPoolExecutor(max_workers=1, thread_name_prefix="stage") as writer,
    ):
        pending = []
        try:
            for name, data in items:
                pending.append(writer.submit(_write_temp, dir_fd, name, _payload(data), sync=False))
        except BaseException:
            for done in pending:
                with contextlib.suppress(OSError):
                    os.unlink(done.result(), dir_fd=dir_fd)
            raise
        results: list[str | OSError] = []
        for done in pending:
            try:
                results.append(done.result())
            except OSError as exc:
                results.append(exc)
        staged = [r for r in results if isinstance(r, str)]
        if staged and not _syncfs(dir_fd):
            for tmp in staged:
                fd = os.open(tmp, _READ_FLAGS, dir_fd=dir_fd)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
    return results


def discard_staged(root: Path, folder: str, staged: str) -> None:
    discard_many(root, folder, [staged])


def discard_many(root: Path, folder: str, names: Iterable[str]) -> None:
    """The staged files (or the pages their exchange replaced) removed, the staging
    folder opened once."""
    with (
        contextlib.suppress(FileNotFoundError, SymlinkRefused),
        open_dir(root, *parts_of(folder)) as dir_fd,
    ):
        for name in names:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name, dir_fd=dir_fd)


def list_names(root: Path, rel: str = "") -> list[str]:
    """The names in the directory root/rel ([] when it is missing)."""
    try:
        with open_dir(root, *parts_of(rel)) as dir_fd:
            return [name for name in os.listdir(dir_fd) if holdable(name)]
    except FileNotFoundError:
        return []


def entry_mode(root: Path, rel: str) -> int | None:
    """`st_mode` of root/rel itself (a link is a link), or None when it is missing."""
    found = entry_stat(root, rel)
    return None if found is None else found.st_mode


def entry_stat(root: Path, rel: str) -> os.stat_result | None:
    """`lstat` of root/rel itself (a link is a link), or None when it is missing."""
    *folder, name = parts_of(rel)
    try:
        with open_dir(root, *folder) as dir_fd:
            return os.lstat(name, dir_fd=dir_fd)
    except FileNotFoundError:
        return None


def unlink(root: Path, rel: str) -> None:
    """Remove the file (or link: never its target) root/rel, if it is there."""
    *folder, name = parts_of(rel)
    with contextlib.suppress(FileNotFoundError), open_dir(root, *folder) as dir_fd:
        os.unlink(name, dir_fd=dir_fd)


def remove_tree(root: Path, rel: str, *, aside: bool = True) -> None:
    """Remove a directory: renamed aside first (`aside`), so readers never see it half
    gone. A link there is unlinked itself: what it points to is never touched; a file
    that is neither is left alone."""
    *folder, name = parts_of(rel)
    try:
        with open_dir(root, *folder) as dir_fd:
            mode = os.lstat(name, dir_fd=dir_fd).st_mode
            if stat.S_ISLNK(mode):
                os.unlink(name, dir_fd=dir_fd)
            elif stat.S_ISDIR(mode):
                if aside:
                    # A unique name: a trash left by a crash, or another thread, is never
                    # in the way.
                    trash = f".{name}.removed-{uuid.uuid4().hex[:12]}"
                    os.rename(name, trash, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
                    name = trash
                # Relative to the open directory, with dir_fd: rmtree opens every level
                # with O_NOFOLLOW and refuses a link at the top (a swap after the lstat).
                shutil.rmtree(name, ignore_errors=True, dir_fd=dir_fd)
    except FileNotFoundError:
        return
