"""Pagination numbered from the oldest, so publishing a new article leaves old pages alone.

The listed articles, oldest first, have positions 0 … count-1. Archive page n
(`page/<n>/index.html`, n ≥ 1) holds positions 50(n-1) … 50n-1, shown newest first,
and exists once it is full. The front page shows the newest 50 whatever the count.
A new article takes position `count`: no older page changes, and one new archive page
appears every 50 articles. The sitemap is cut the same way: `sitemap-<n>.xml` holds the
URLs of archive page n, and the one partial chunk after the last full page holds the
newest `count % 50`.
"""

from __future__ import annotations

from collections.abc import Iterable

PAGE_SIZE = 50


def full_pages(count: int) -> int:
    return count // PAGE_SIZE


def page_of(position: int) -> int:
    return position // PAGE_SIZE + 1


def sitemap_chunks(count: int) -> int:
    """How many sitemap chunks a site of `count` articles has (the last may be partial):
    at least one, as a sitemap index without any is invalid (an empty site's lists its
    front page, `documents.sitemap`)."""
    return max(1, -(-count // PAGE_SIZE))


def older_than_front(count: int) -> int | None:
    """The archive page the front page's "Older" link opens: the newest page holding an
    article the front page does not show (it may repeat some the front page shows)."""
    if count <= PAGE_SIZE:
        return None
    return page_of(count - PAGE_SIZE - 1)


def newer_than(page: int, count: int) -> int | None:
    """The page after `page` towards the newest; None for the front page."""
    return page + 1 if page < full_pages(count) else None


def older_than(page: int) -> int | None:
    return page - 1 if page > 1 else None


def pages_to_write(
    *,
    old_count: int,
    new_count: int,
    changed: Iterable[int] = (),
    shifted_from: int | None = None,
) -> list[int]:
    """The archive pages whose content changed between two counts.

    `changed`: positions (in the new order) of articles whose entry changed in place
    (republished: new title, new slug). `shifted_from`: the lowest position at which an
    article was inserted; every position above it moved up by one. The pages around a
    change of the number of full pages are rewritten too, for their "Newer" links.
    """
    old_full, new_full = full_pages(old_count), full_pages(new_count)
    pages = {page_of(position) for position in changed}
    if shifted_from is not None:
        pages.update(range(page_of(shifted_from), new_full + 1))
    if old_full != new_full:
        pages.update(range(max(1, min(old_full, new_full)), max(old_full, new_full) + 1))
    return sorted(page for page in pages if 1 <= page <= new_full)
