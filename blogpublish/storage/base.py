"""The seam between the site and where it is stored (docs/site.md, "Where the site lives").

Every path is relative to the site's root ("page/3/index.html"), checked by
`blogpublish.files.parts_of`. Implementations: a local folder (`LocalStorage`) and
S3-compatible object storage (`S3SiteStorage`). Both give readers a whole document or
none: a temporary file renamed into place on disk, one PUT per object in a bucket.
"""

from __future__ import annotations

import abc
import builtins
import mimetypes
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath

from django.conf import settings

from blogpublish.exceptions import PageChanged, StorageError
from blogpublish.site import paths

HTML_TYPE = "text/html; charset=utf-8"
FEED_TYPE = "application/atom+xml"
JSON_FEED_TYPE = "application/feed+json"
XML_TYPE = "application/xml"  # the sitemap index and its chunks


def content_type_of(rel: str) -> str:
    """The Content-Type a document of the site is served with."""
    name = rel.rsplit("/", 1)[-1]
    if name == paths.FEED:
        return FEED_TYPE
    if name == paths.JSON_FEED:
        return JSON_FEED_TYPE
    if name.endswith(".xml"):
        return XML_TYPE
    if name.endswith(".html"):
        return HTML_TYPE
    # An uploaded image (media/<sha256>.png): its type by its extension.
    return type_by_extension(name)


# Types Python 3.11's own table lacks: WebP is known only from a host's /etc/mime.types,
# which python:3.11-slim (the Dockerfile's base) has none of, so every rendition of an
# upload (-800w.webp) was stored and served as application/octet-stream (a review's).
OWN_TYPES = {".webp": "image/webp"}


def type_by_extension(name: str) -> str:
    """The Content-Type of a file by its extension, whatever the host's mime files."""
    own = OWN_TYPES.get(PurePosixPath(name).suffix.lower())
    return own or mimetypes.guess_type(name)[0] or "application/octet-stream"


def cache_control_of(rel: str) -> str:
    return settings.SITE_CACHE_CONTROL


def payload(data: str | bytes) -> bytes:
    return data.encode("utf-8") if isinstance(data, str) else data


@dataclass
class Staged:
    """A page prepared outside the page guard, made live by `commit` under it."""

    rel: str
    data: bytes
    token: str = ""  # the local folder's temporary file
    # What the page was at the token check (`SiteStorage.observe`): in a bucket its
    # ETag ("" when missing), the condition of the PUT; None when not observed.
    expect: str | None = None
    # What `commit` put in place, for `take_back` (the local folder's swap.Placed; a
    # bucket's ETag of a page its PUT made where there was none).
    placed: object | None = None


class SiteStorage(abc.ABC):
    """Where the site's documents are kept. Errors: OSError on disk, StorageError (with
    the cause) from object storage; the publisher makes both a retry of the attempt."""

    #: True when every host writing the site sees the same documents without a shared
    #: file system (config: SQLite with it is one host only; blogpublish.checks).
    shared_by_hosts = False

    #: True when `commit` writes over nothing but the very document a read saw (a
    #: bucket: each PUT is conditional on the ETag its read answered with). A read
    #: made before the page guard then fences the write as well as one under it, so
    #: the re-render reads each page once, not twice (blogpublish.site.rerender).
    reads_fence_writes = False

    def late_write_seconds(self) -> float:
        """How long a write whose call gave up may still land (0: none can, a write on
        disk is done when its call returns). A folder removed for a delete or a
        withdraw is removed again by the first pass after that long
        (blogpublish.site.publisher `_remove_again`)."""
        return 0.0

    @abc.abstractmethod
    def write(
        self,
        rel: str,
        data: str | bytes,
        *,
        content_type: str | None = None,
        cache_control: str | None = None,
    ) -> None:
        """Replace the document atomically: a reader sees the old one or the new one.
        The content type and cache control default to the name's (`content_type_of`)."""

    @abc.abstractmethod
    def read(self, rel: str) -> bytes | None:
        """The document, or None when it is not there (on disk: nor a link, nor a FIFO)."""

    def holds(self, rel: str, data: str | bytes) -> bool:
        """Does the document already hold exactly `data` (as `write` would leave it)?"""
        return self.read(rel) == payload(data)

    def read_head(self, rel: str, size: int) -> bytes | None:
        """The document's first `size` bytes, or None when it is not there."""
        data = self.read(rel)
        return None if data is None else data[:size]

    def read_heads(self, rels: list[str], size: int) -> dict[str, bytes | None]:
        """`read_head` for many documents (the full check's pages), by path."""
        return {rel: self.read_head(rel, size) for rel in rels}

    def write_many(self, items: builtins.list[tuple[str, str | bytes]]) -> None:
        """`write` for many documents (rel, data), each replaced atomically as `write`
        does; the first failure raises (those before it are written). A folder makes
        them durable together (`LocalStorage`); a bucket PUTs each."""
        for rel, data in items:
            self.write(rel, data)

    def write_if_changed(self, rel: str, data: str | bytes) -> bool:
        """`write`, unless the document already holds exactly `data`; True if written.
        A rebuild that changed nothing then writes nothing."""
        data = payload(data)
        if self.holds(rel, data):
            return False
        self.write(rel, data)
        return True

    @abc.abstractmethod
    def exists(self, rel: str) -> bool: ...

    @abc.abstractmethod
    def delete(self, rel: str) -> None:
        """Remove the document if it is there."""

    @abc.abstractmethod
    def delete_tree(self, rel: str) -> None:
        """Remove a folder (an article's page directory, an archive page) and all in it."""

    @abc.abstractmethod
    def names(self, folder: str = "") -> list[str]:
        """The names directly in `folder` (documents and folders; [] when missing)."""

    @abc.abstractmethod
    def list(self, prefix: str = "") -> Iterator[str]:
        """Every document under the folder `prefix`, recursively, as paths from the root."""

    @abc.abstractmethod
    def page_dirs(self) -> dict[str, float | None]:
        """The folders at the top of the site (never a link, trash or staging), each with
        when its index.html was last put in place (seconds since the epoch, by the
        storage's clock: a file's ctime, which a rename sets and no writer can; an
        object's LastModified), or None when it is not there: what the full check
        compares with the database (blogpublish.site.full_check)."""

    def stage(self, rel: str, data: str | bytes) -> Staged:
        """The slow half of a page write, done before the page guard is taken."""
        return Staged(rel=rel, data=payload(data))

    def observe(self, staged: Staged) -> None:  # noqa: B027  (nothing to do by default)
        """Under the page guard, at the token check: note what the page is now, so that
        `commit` writes only over that (a bucket's conditional PUT)."""

    def observe_heads(self, staged: builtins.list[Staged], size: int) -> dict[str, bytes | None]:
        """Under the page guard: the staged pages' first `size` bytes as they are now
        (`read_heads`, by path), each page observed (`observe`) as it was read."""
        heads = self.read_heads([item.rel for item in staged], size)
        for item in staged:
            self.observe(item)
        return heads

    def read_observed(
        self, rels: builtins.list[str], size: int
    ) -> dict[str, tuple[bytes | None, str | None]]:
        """`read_heads`, each with what a `commit` over it is then conditional on
        (`Staged.expect`: a bucket's ETag of the bytes read; None where no condition)."""
        return {rel: (head, None) for rel, head in self.read_heads(rels, size).items()}

    def commit(self, staged: Staged) -> None:
        """Under the page guard, after the currency check: the page goes live. Raises
        PageChanged when the page is no longer what `observe` saw."""
        self.write(staged.rel, staged.data)

    def take_back(self, staged: Staged) -> bool:
        """After a `commit` whose page guard did not hold to its end (the guard's
        transaction failed: its locks may have gone before the write), under a new
        guard: the page it replaced put back, if the page there is still the one it
        wrote. True when taken back; False when there is nothing to take back (a
        bucket's PUT over a page was conditional on that very page) or a newer write
        is there."""
        return False

    def stage_many(
        self, items: Iterable[tuple[str, str | bytes]]
    ) -> builtins.list[Staged | Exception]:
        """`stage` for a batch's pages (rel, data): per item its Staged, or the error
        that kept that one from being staged (the others are staged). `items` may be a
        generator that renders each page as it is read (the re-render's)."""
        out: builtins.list[Staged | Exception] = []
        for rel, data in items:
            try:
                out.append(self.stage(rel, data))
            except (OSError, StorageError) as exc:
                out.append(exc)
        return out

    def commit_many(self, staged: builtins.list[Staged]) -> None:
        """`commit` for a batch's pages, under the page guard of them all; the first
        failure raises (the caller then publishes them one by one)."""
        for item in staged:
            self.commit(item)

    def commit_each(self, staged: builtins.list[Staged]) -> builtins.list[Staged]:
        """`commit_many`, except that a page that is no longer what was read is not an
        error: those pages are returned, not written. Any other failure raises."""
        changed = []
        for item in staged:
            try:
                self.commit(item)
            except PageChanged:
                changed.append(item)
        return changed

    def discard(self, staged: Staged) -> None:  # noqa: B027  (nothing to do by default)
        """After `commit`, or instead of it: whatever `stage` left is gone."""

    def discard_many(self, staged: Iterable[Staged]) -> None:
        """`discard` for a batch's pages."""
        for item in staged:
            self.discard(item)

    def sweep(self, *, older_than: float) -> None:  # noqa: B027  (nothing to do by default)
        """Leftovers of crashes (half-removed folders, staged pages older than the
        timestamp `older_than`): the full check clears them."""
