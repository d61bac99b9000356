"""Writing the site to disk: every file replaced atomically, never half-written."""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from pathlib import Path

FILE_MODE = 0o644  # readable by the web server; mkstemp would give 0600


def atomic_write(path: Path, data: str | bytes) -> None:
    """Write to a temporary file beside `path`, then `os.replace` it into place.

    Readers see the old file or the new one, never a mix; a crash leaves at most a
    stray temporary file, which the next write of the same directory ignores.
    """
    staged = stage(path, data)
    try:
        os.replace(staged, path)
    except BaseException:
        staged.unlink(missing_ok=True)
        raise


def stage(path: Path, data: str | bytes, *, within: Path | None = None) -> Path:
    """The slow half of `atomic_write`: the bytes in a synced temporary file in
    `within` (default: beside `path`; the same file system). The caller `os.replace`s
    it into place (or unlinks it), so that a lock need be held only for the rename."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    folder = within or path.parent
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, FILE_MODE)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


def write_if_changed(path: Path, data: str | bytes) -> bool:
    """`atomic_write`, unless the file already holds exactly `data`; True if written.

    Rebuilding a view that did not change then costs a read, not a write and an fsync,
    and leaves the file's mtime (which caches and rsync go by) alone.
    """
    payload = data.encode("utf-8") if isinstance(data, str) else data
    try:
        if path.read_bytes() == payload:
            return False
    except FileNotFoundError:
        pass
    atomic_write(path, payload)
    return True


def remove_tree(path: Path) -> None:
    """Remove a page directory: renamed aside first, so readers never see it half gone."""
    if not path.exists():
        return
    # A unique name: a trash left by a crash, or another thread, is never in the way.
    trash = path.with_name(f".{path.name}.removed-{uuid.uuid4().hex[:12]}")
    os.replace(path, trash)
    shutil.rmtree(trash, ignore_errors=True)
