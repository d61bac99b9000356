"""One writer of the site at a time.

Every change to SITE_ROOT (a page write, an unpublish, a refresh, a reconcile) runs
under this lock and reads the database only after taking it, so the last writer has
seen every commit before it and no older view can land on top of a newer one.

- `fcntl.flock` on SITE_ROOT/.lock serialises the processes of one host.
- On PostgreSQL a session-level `pg_advisory_lock` serialises the hosts too, for
  workers on several machines sharing SITE_ROOT (NFS or similar). SQLite is one host
  only, so there the file lock is the whole story (docs/site.md, "The lock").
"""

from __future__ import annotations

import contextlib
import fcntl
import zlib
from collections.abc import Iterator
from pathlib import Path

from django.db import DatabaseError, connection

from blogpublish.site.paths import LOCK_FILE

# One site per database: a fixed key, the same on every host whatever its mount path.
ADVISORY_KEY = zlib.crc32(b"blogpublish.site")


@contextlib.contextmanager
def site_lock(root: Path) -> Iterator[None]:
    root.mkdir(parents=True, exist_ok=True)
    with open(root / LOCK_FILE, "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            with _advisory_lock():
                yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextlib.contextmanager
def _advisory_lock() -> Iterator[None]:
    if connection.vendor != "postgresql":
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(%s)", [ADVISORY_KEY])
    try:
        yield
    finally:
        # A connection that broke meanwhile has released the lock with its session.
        with contextlib.suppress(DatabaseError), connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [ADVISORY_KEY])
