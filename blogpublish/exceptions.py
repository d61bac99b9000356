"""Errors of the blog itself (the site on disk, the view that serves it)."""

from __future__ import annotations

from pathlib import Path


class BlogpublishError(Exception):
    """The blog failed."""

    def __init__(self, message: str | None = None):
        super().__init__(message or self.__doc__)


class SymlinkRefused(BlogpublishError):
    """A symbolic link inside SITE_ROOT where the site needs a directory of its own: the
    site never writes or deletes through a link. Remove the link (docs/site.md)."""

    def __init__(self, message: str | None = None, *, path: Path | None = None):
        if message is None and path is not None:
            message = (
                f"{path} is a symbolic link; the site never writes or deletes through a "
                "link inside SITE_ROOT. Remove the link (docs/site.md, 'Links in SITE_ROOT')."
            )
        super().__init__(message)
        self.path = path


class StorageError(BlogpublishError):
    """The site's object storage could not be reached, or refused the request."""


class StorageUnreachable(StorageError):
    """The site's object storage did not answer in time, or could not be reached: a
    request for the same page would wait as long. `rels`: the pages of a batch's commit
    it did not answer for (the others were written): their articles fail, each with its
    error named, and only the rest are written again one at a time."""

    def __init__(self, message: str, rel: str = "") -> None:
        super().__init__(message)
        self.rels: list[str] = [rel] if rel else []


class PageChanged(StorageError):
    """The page changed between the writer's token check and its write: another writer
    came first (or, AWS's 409, is writing it now). The write was not made (a bucket's
    conditional PUT refused it); the caller judges the page again."""
