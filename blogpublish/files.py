"""Writing the site to disk: every file replaced atomically, never half-written."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

FILE_MODE = 0o644  # readable by the web server; mkstemp would give 0600


def atomic_write(path: Path, data: str | bytes) -> None:
    """Write to a temporary file beside `path`, then `os.replace` it into place.

    Readers see the old file or the new one, never a mix; a crash leaves at most a
    stray temporary file, which the next write of the same directory ignores.
    """
    payload = data.encode("utf-8") if isinstance(data, str) else data
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def remove_tree(path: Path) -> None:
    """Remove a page directory: renamed aside first, so readers never see it half gone."""
    if not path.exists():
        return
    trash = path.with_name(f".{path.name}.removed-{os.getpid()}")
    os.replace(path, trash)
    shutil.rmtree(trash, ignore_errors=True)
