"""The shared views in a new look (issue 20): a deploy changes listing.html alone (a
theme's copy of it, in a template folder searched first), and a worker's refresher
rewrites the front page and every archive page in it by itself, with no publish; the
article pages, whose look did not change, are not written again.

Real processes: `celery worker` and `celery beat` subprocesses on a private
redis-server (the system `pipeline` fixture), the run's database. Beat's catch-up runs
a pass of the shared views every interval: the pass that finds the shared views built
in another look rebuilds them all (blogpublish.site.build.adopt_look). Without it, the
front page would be rewritten (every pass writes it) but not the archive: neither the
full check (done just before) nor a re-render run (none: the pages' look is the same)
rebuilds it.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
from django.template.loader import get_template

from blogpublish.models import SITE_STATE_ID
from blogpublish.models import SiteState as SiteStateRow
from blogpublish.site import look, paths
from blogpublish.storage import site_storage
from publishing.models import PublishAttempt
from publishing.services import publish_pending, shared_views_whole
from publishing.services.refresh import full_check_due
from publishing.services.rerender import RerenderOutcome, rerender_wanted, site_rerender
from publishing.services.site import site_reconcile
from tests.integration.test_batches import backlog
from tests.support.waiting import wait_for
from tests.system.conftest import record_timing, since
from tests.system.helpers import wait_all_published

pytestmark = [pytest.mark.system, pytest.mark.django_db(transaction=True)]

# Two full archive pages (page/1/, page/2/) and a front page.
ARTICLES = 110
MARK = b'<p class="theme-mark">The new listing</p>'
LISTINGS = [paths.FRONT_PAGE, paths.archive_file(1), paths.archive_file(2)]


def theme_with_new_listing(folder: Path) -> Path:
    """A theme folder whose listing.html is the app's with a mark in its main block."""
    source = Path(get_template("blogpublish/listing.html").origin.name).read_text()
    assert "{% block main %}" in source
    theme = folder / "blogpublish" / "listing.html"
    theme.parent.mkdir(parents=True)
    theme.write_text(source.replace("{% block main %}", "{% block main %}" + MARK.decode(), 1))
    return folder


def test_a_new_listing_template_rewrites_the_front_page_and_the_archive_without_a_publish(
    pipeline, settings, tmp_path
):
    prefix = f"rs-{uuid.uuid4().hex[:6]}"
    articles = backlog(prefix, ARTICLES)
    publish_pending(limit=ARTICLES, retry_in=lambda attempt: 0.0)
    wait_all_published(articles, timeout=5)
    # The site's pages in their look, as a site that has had its re-render: the catch-up
    # then sends none (a run that begins asks for a rebuild of the shared views itself).
    while site_rerender() is not RerenderOutcome.DONE:
        pass
    # Every shared view in the old look, in this process, by the full check (which then
    # is not due again for PUBLISH_RECONCILE_EVERY: its rebuild is not what the worker's
    # passes do below) and the passes that finish it.
    assert site_reconcile()
    assert shared_views_whole()
    assert not full_check_due()
    site = site_storage()
    assert all(MARK not in site.read(rel) for rel in LISTINGS)
    page_look, old_shared = look.look(), look.shared_look()
    pages = {a.slug: site.read(paths.page_file(a.slug)) for a in articles}
    attempts = PublishAttempt.objects.count()

    # The deploy: listing.html changed, nothing else (the article pages' look stays).
    theme = theme_with_new_listing(tmp_path / "theme")
    pipeline.env["BLOGPUBLISH_TEST_TEMPLATE_DIR"] = str(theme)
    settings.TEMPLATES = [{**settings.TEMPLATES[0], "DIRS": [str(theme)]}]
    assert look.shared_look() != old_shared
    assert look.look() == page_look
    started = time.monotonic()
    pipeline.worker(name="new-listing")
    pipeline.beat()
    wait_for(
        lambda: all(MARK in (site.read(rel) or b"") for rel in LISTINGS),
        timeout=60,
        what="the front page and the archive pages in the new listing",
    )
    record_timing("the shared views in a new look, no publish", since(started))
    # The pass that wrote them has committed the look they are in (or one after it has).
    wait_for(
        lambda: SiteStateRow.objects.filter(
            pk=SITE_STATE_ID, look=look.shared_look(), rebuild=False
        ).exists(),
        timeout=30,
        what="the shared views' new look in the site's state",
    )
    assert not rerender_wanted()  # the pages' look did not change
    # Nothing was published, and no article's page was written again.
    assert PublishAttempt.objects.count() == attempts
    assert {a.slug: site.read(paths.page_file(a.slug)) for a in articles} == pages
