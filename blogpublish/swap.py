"""A page put in place so that it can be taken back (issue 17, "no stale page survives").

A writer checks its token under the page guard, then renames its page into place. A
process paused between the two (a stopped VM, a dropped database session: the guard's
locks are gone) renames anyway when it resumes, over a newer page. So the rename is an
exchange (Linux `renameat2(RENAME_EXCHANGE)`): the page it replaces moves to the staged
file's name instead of being unlinked, and `swap_out` puts it back, the same file
(inode, mtime), when the writer finds, under a guard of its own, that its write was not
covered by a guard that held to the end. Only if the page there is still the one it put:
a newer write is never taken back.

Where the file system cannot exchange (EINVAL), the page is renamed over as before and
cannot be taken back; the full check then finds it by its content hash (docs/design.md).
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
from dataclasses import dataclass

RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2
_CANNOT = (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP)


@dataclass(frozen=True)
class Placed:
    """The file a swap put at the page's name, and whether the page it replaced (or
    its absence) is kept at the staged name."""

    inode: int
    restorable: bool
    had_page: bool = True


@functools.cache
def _renameat2():
    try:
        return getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    except OSError:
        return None


def _rename2(src_fd: int, src: str, dst_fd: int, dst: str, flags: int) -> None:
    call = _renameat2()
    if call is None:
        raise OSError(errno.ENOSYS, "renameat2 is missing")
    if call(src_fd, os.fsencode(src), dst_fd, os.fsencode(dst), flags) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), dst)


def swap_in(src_fd: int, staged: str, dst_fd: int, name: str) -> Placed:
    """The staged file at `name`; what was there takes the staged name."""
    inode = os.stat(staged, dir_fd=src_fd, follow_symlinks=False).st_ino
    for flags in (RENAME_EXCHANGE, RENAME_NOREPLACE, RENAME_EXCHANGE):
        try:
            _rename2(src_fd, staged, dst_fd, name, flags)
            return Placed(inode, restorable=True, had_page=flags == RENAME_EXCHANGE)
        except OSError as exc:
            if exc.errno in _CANNOT:
                break
            # ENOENT: no page yet (exchange needs two); EEXIST: one appeared meanwhile.
            if exc.errno not in (errno.ENOENT, errno.EEXIST):
                raise
    os.replace(staged, name, src_dir_fd=src_fd, dst_dir_fd=dst_fd)
    return Placed(inode, restorable=False)


def swap_out(src_fd: int, staged: str, dst_fd: int, name: str, placed: Placed) -> bool:
    """Take back a `swap_in`: the page it replaced back at `name` (or, when there was
    none, its page removed), only if the file at `name` is still the one it put. Call
    it under the page guard. True when taken back."""
    if not placed.restorable:
        return False
    try:
        if os.stat(name, dir_fd=dst_fd, follow_symlinks=False).st_ino != placed.inode:
            return False
    except FileNotFoundError:
        return False
    if not placed.had_page:
        os.unlink(name, dir_fd=dst_fd)
    else:
        try:
            _rename2(src_fd, staged, dst_fd, name, RENAME_EXCHANGE)
        except FileNotFoundError:  # the page it replaced was swept from staging since
            return False
    os.fsync(dst_fd)
    return True
