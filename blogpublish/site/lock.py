"""What keeps concurrent writers of the site apart, with no site-wide lock.

- A page directory is written or removed only under `page_guard` for its slug (and,
  for a write, its article): a transaction that, on PostgreSQL, holds advisory locks
  keyed by those names, so every host agrees; on SQLite the transaction itself is the
  lock (IMMEDIATE: it takes the database's write lock at BEGIN, and SQLite is one host).
  Under the guard the writer reads the database, then writes or removes: a removal
  never takes a page that an article needs, and two attempts of one article never
  interleave.
- The shared views (front page, archive, feed, sitemap) are written by one refresher
  at a time, which holds the refresher's lease (publishing.services.refresh); each of
  its passes reads one snapshot of the database (`snapshot`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator

from django.conf import settings
from django.db import connection, transaction

from work.db import advisory_key

# The site's bookkeeping commits without waiting for the WAL flush (one fsync less per
# attempt and per pass). A PostgreSQL crash can lose only the last few such commits,
# never one that a later synchronous commit (a claim, a completion) came after, since
# the WAL is flushed in order; what is lost is a page rename noted again by the retry,
# or a pass run again. https://www.postgresql.org/docs/current/wal-async-commit.html
# Only ever in a transaction the guard itself opens: inside a caller's transaction (a
# delete, whose webhook goes out after its commit) the setting would make the caller's
# own commit asynchronous too, and a crash could lose a delete the world was told of.
RELAXED_COMMIT = "set_config('synchronous_commit', 'off', true)"


def _relaxed(opens_transaction: bool) -> str:
    """The relaxed commit's SELECT term, when this guard's transaction is its own."""
    return RELAXED_COMMIT if opens_transaction else "1"


def _bounded(opens_transaction: bool) -> str:
    """A guard's own transaction left idle for a lease (a host paused or cut off
    between its token check and its write) is ended by the server, its locks with it:
    one stalled writer never holds a page from every other host. Its write, if it
    resumes, is then caught after the fact (blogpublish.site.publisher, issue 17)."""
    if not opens_transaction:
        return ""
    ms = int(settings.PUBLISH_LEASE_SECONDS * 1000)
    return f", set_config('idle_in_transaction_session_timeout', '{ms}', true)"


@contextlib.contextmanager
def page_guard(
    *, slugs: Iterable[str], article_id: int | None = None, article_ids: Iterable[int] = ()
) -> Iterator[None]:
    """The guard of the slugs and the article (`article_id`), or of many articles at
    once (`article_ids`: a batch's pages, all locks taken in the one statement)."""
    keys = {advisory_key("slug", slug) for slug in slugs if slug}
    ids = [*article_ids, *([] if article_id is None else [article_id])]
    keys.update(advisory_key("article", i) for i in ids)
    own = not connection.in_atomic_block
    with transaction.atomic():
        if connection.vendor == "postgresql":
            # One statement; the locks in one order everywhere, so two guards never
            # wait for each other.
            locks = "".join(", pg_advisory_xact_lock(%s)" for _ in keys)
            with connection.cursor() as cursor:
                cursor.execute(f"SELECT {_relaxed(own)}{_bounded(own)}{locks}", sorted(keys))
        yield


@contextlib.contextmanager
def snapshot() -> Iterator[None]:
    """A transaction whose reads all see one moment: a refresh's notes, counts and
    listings agree with each other although publishes commit meanwhile. SQLite's
    IMMEDIATE transaction holds the write lock, so nothing commits meanwhile there."""
    own = not connection.in_atomic_block
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                cursor.execute(f"SELECT {_relaxed(own)}")
        yield
