"""Fixtures of the integration tests that several modules share."""

from __future__ import annotations

import pytest
from django.conf import settings

from blogpublish.site import StaticSitePublisher
from publishing.models import Refresher
from tests.support.site import run_full_check


@pytest.fixture
def site(worker):
    """The run's SITE_ROOT, in line with the (emptied) database before the test (earlier
    tests' rows were flushed without deletes, so their pages are orphans), and the
    shared views' refresher idle. A module whose `site` is another thing defines its own."""
    run_full_check(StaticSitePublisher())
    Refresher.objects.update_or_create(
        pk=1, defaults={"lease_expires_at": None, "wanted": False, "deferred_until": None}
    )
    return settings.SITE_ROOT
