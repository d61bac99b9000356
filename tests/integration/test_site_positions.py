"""Where a pass places the articles it lists (`build.positions_of`), against counting
each one (`selectors.position_of`), on both databases: a burst's groups take its
articles newest first (publishing.services.publish, `_claimable`), so its later groups
are listed below its first."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from blogpublish.site import build, selectors
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
