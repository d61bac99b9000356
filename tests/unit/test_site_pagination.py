"""Pagination numbered from the oldest: which archive pages exist, link, and change."""

from __future__ import annotations

import pytest

from blogpublish.site.pagination import (
    full_pages,
    newer_than,
    older_than_front,
    page_of,
    pages_to_write,
    sitemap_chunks,
)


@pytest.mark.parametrize(
    ("count", "pages", "chunks", "older_than_front_page"),
    [
        (0, 0, 1, None),  # an empty site still has a chunk: its front page
        (50, 1, 1, None),  # the front page shows all 50; page 1 repeats them
        (51, 1, 2, 1),
        (100, 2, 2, 1),  # the front page is page 2: "Older" opens page 1
        (120, 2, 3, 2),  # front shows 71-120; page 2 (51-100) holds 51-70
    ],
)
def test_counts_and_the_front_pages_older_link(count, pages, chunks, older_than_front_page):
    assert full_pages(count) == pages
    assert sitemap_chunks(count) == chunks
    assert older_than_front(count) == older_than_front_page


def test_pages_link_newer_towards_the_front_page():
    assert [newer_than(page, 120) for page in (1, 2)] == [2, None]  # None: the front page


@pytest.mark.parametrize(
    ("case", "kwargs", "pages"),
    [
        ("a new article, page not full", {"old_count": 120, "new_count": 121}, []),
        ("a new article fills page 3", {"old_count": 149, "new_count": 150}, [2, 3]),
        (
            "an old article republished",
            {"old_count": 120, "new_count": 120, "changed": [3]},
            [1],
        ),
        (
            "a backdated article at position 60",
            {"old_count": 160, "new_count": 161, "changed": [60], "shifted_from": 60},
            [2, 3],
        ),
        ("a change among the newest", {"old_count": 120, "new_count": 120, "changed": [110]}, []),
    ],
)
def test_pages_to_write(case, kwargs, pages):
    assert pages_to_write(**kwargs) == pages, case


def test_page_of():
    assert [page_of(p) for p in (0, 49, 50, 99, 100)] == [1, 1, 2, 2, 3]
