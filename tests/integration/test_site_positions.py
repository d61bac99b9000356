"""Where a pass places the articles it lists (`build.positions_of`), against counting
each one (`selectors.position_of`), on both databases: a burst's groups take its
articles newest first (publishing.services.publish, `_claimable`), so its later groups
are listed below its first."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from blogpublish.site import build, selectors
from publishing.models import Tag
from tests.support.live_tags import listed_with_tags

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("near_top_keys", [40, 5])
def test_a_later_group_below_the_first_is_placed_as_counting_places_it(monkeypatch, near_top_keys):
    monkeypatch.setattr(build, "NEAR_TOP_KEYS", near_top_keys)
    made = listed_with_tags(*([] for _ in range(30)), slug="placed")
    total = selectors.count_listed()
    # The middle ten, with ten newer above them: a burst's second group.
    group = selectors.listed_entries(article.pk for article in made[10:20])
    counted = {pk: selectors.position_of(entry, total=total) for pk, entry in group.items()}

    with CaptureQueriesContext(connection) as queries:
        placed = build.positions_of(group, inserted=list(group), total=total)

    assert placed == counted
    assert sorted(placed.values()) == list(range(total - 20, total - 10))
    if near_top_keys >= 20:  # the keys down to the group's oldest read once
        assert len(queries) == 1, [q["sql"] for q in queries]
    else:  # more than that: the read stops past its limit, and each is counted
        assert len(queries) == 1 + len(group), [q["sql"] for q in queries]


def test_a_run_of_pages_is_read_in_one_statement_each_page_as_the_listing_has_it():
    """A pass that rewrites a run of archive pages (an import's older articles shift every
    page above them) reads the run in one statement from the nearer end, not one
    statement a page, whose offsets walked the index k²/4 entries for k pages; and each
    page holds what the listing has at its positions, newest first, for the site's pages
    and a tag's alike."""
    made = listed_with_tags(*(["common"] for _ in range(47)), slug="paged")
    tag_id = Tag.objects.get(key="common").pk
    total = selectors.count_listed()
    oldest_first = [
        entry.id
        for entry in sorted(
            selectors.listed_entries(a.pk for a in made).values(),
            key=lambda e: (e.publish_at, e.id),
        )
    ]

    def expected(page: int) -> list[int]:
        return oldest_first[5 * (page - 1) : 5 * page][::-1]

    # three runs: pages 1–3 and 5 read from the bottom, 7–9 from the top
    wanted = [1, 2, 3, 5, 7, 8, 9]
    for read in (
        lambda: selectors.entries_pages(wanted, size=5, total=total),
        lambda: selectors.tagged_pages(tag_id, wanted, size=5, total=total),
    ):
        with CaptureQueriesContext(connection) as queries:
            pages = {page: [entry.id for entry in entries] for page, entries in read()}
        assert pages == {page: expected(page) for page in wanted}
        assert len(queries) == 3, [q["sql"] for q in queries]
