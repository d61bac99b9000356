"""The shared views' writes, each checked against the refresher's token (work.lease.Fence).

A pass of the refresher writes the front page, archive pages, feed and sitemap from one
snapshot of the database. A pass that stalled past its lease (a paused host, a long
GC) must not write its older snapshot over a newer pass's documents, so every write,
rename or removal of a shared document is checked against the pass's token just
before it and again just after it:

- before: a pass whose lease ran out or was taken writes nothing more (`Overtaken`);
- after: if a newer pass took the lease meanwhile (the write may have landed over the
  newer pass's document), the pass stops with `Overtaken(wrote=True)`, and the caller
  asks for a full rebuild: a rebuild rewrites every shared document that differs from
  the database, so the end state is exact whichever write came last.

Reading is not fenced: it changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterator

from blogpublish.storage import SiteStorage
from blogpublish.storage.base import payload
from work.lease import Fence


class FencedSite:
    """The writes of `SiteStorage` that the shared views use, fenced by `fence`."""

    def __init__(self, site: SiteStorage, fence: Fence):
        self.site = site
        self.fence = fence

    def write(self, rel: str, data: str | bytes) -> None:
        self.fence.before(f"writing {rel}")
        self.site.write(rel, data)
        self.fence.after(f"writing {rel}")

    def write_many(self, items: list[tuple[str, str | bytes]]) -> None:
        what = f"writing {len(items)} documents ({items[0][0]}, …)" if items else "writing"
        self.fence.before(what)
        self.site.write_many(items)
        self.fence.after(what)

    def holds(self, rel: str, data: str | bytes) -> bool:
        return self.site.holds(rel, data)

    def write_if_changed(self, rel: str, data: str | bytes) -> bool:
        data = payload(data)
        if self.site.holds(rel, data):
            return False
        self.write(rel, data)
        return True

    def delete(self, rel: str) -> None:
        self.fence.before(f"removing {rel}")
        self.site.delete(rel)
        self.fence.after(f"removing {rel}")

    def delete_tree(self, rel: str) -> None:
        self.fence.before(f"removing {rel}/")
        self.site.delete_tree(rel)
        self.fence.after(f"removing {rel}/")

    def read(self, rel: str) -> bytes | None:
        return self.site.read(rel)

    def exists(self, rel: str) -> bool:
        return self.site.exists(rel)

    def names(self, folder: str = "") -> list[str]:
        return self.site.names(folder)

    def list(self, prefix: str = "") -> Iterator[str]:
        return self.site.list(prefix)
