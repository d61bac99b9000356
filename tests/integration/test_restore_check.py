"""`restore_check` names what is wrong with an installation (docs/operations.md,
"Backups"): a page that is not its live version, an image an article names that is
gone, and a site restored empty until `--repair` rebuilds it."""

from __future__ import annotations

import io
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from django.db.models import F
from django.utils import timezone
from PIL import Image

from blogpublish.desk import images
from blogpublish.site import paths
from publishing.models import Article, ArticleStatus, Refresher
from tests.support.site import stale_page
from tests.support.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def published(make_article, **fields) -> Article:
    article = make_article(**fields)

    def live() -> bool:
        article.refresh_from_db()
        return article.status == ArticleStatus.PUBLISHED

    wait_for(live, timeout=45, what=f"{article.slug} published")
    return article


def check() -> str:
    err = io.StringIO()
    with pytest.raises(CommandError, match="problems"):
        call_command("restore_check", stdout=io.StringIO(), stderr=err)
    return err.getvalue()


def test_restore_check__a_whole_site_passes_a_stale_page_and_a_lost_image_do_not(
    worker, make_article
):
    png = io.BytesIO()
    Image.new("RGB", (2, 2), (0, 90, 200)).save(png, "PNG")
    image = images.store(png.getvalue(), name="blue.png", content_type="image/png")
    article = published(make_article, slug="checked", title="检查", body=image.markdown)
    call_command("restore_check", "--repair", stdout=(out := io.StringIO()))
    assert "the installation is whole" in out.getvalue()

    root = Path(settings.SITE_ROOT)
    (root / paths.page_file(article.slug)).write_text("<p>an old page</p>")
    kept = (root / image.path).read_bytes()
    (root / image.path).unlink()

    problems = check()
    assert (
        f"article {article.pk}: its page {paths.page_file('checked')} is not its live" in problems
    )
    assert "(its content mark differs: None instead of " in problems  # and says how
    assert f"the image {image.path} is named by an article and missing" in problems

    # The page without a mark is written again (its repair left it: a review's finding).
    (root / image.path).write_bytes(kept)  # what a repair cannot make
    call_command("restore_check", "--repair", stdout=(out := io.StringIO()))
    assert "the installation is whole" in out.getvalue()
    assert "检查" in (root / paths.page_file(article.slug)).read_text()


def test_restore_check__repair_writes_a_page_damaged_below_its_head(worker, make_article):
    """A page whose first bytes (its marks) are right and whose text below is not: the
    full check reads only the head, and --repair left it while naming it (a review's
    finding)."""
    article = published(make_article, slug="cut-below", title="Cut", body="Whole text. " * 200)
    page = Path(settings.SITE_ROOT) / paths.page_file(article.slug)
    whole = page.read_text()
    page.write_text(whole[:700] + "<p>damaged</p>")

    assert "its marks agree; the text differs" in check()

    call_command("restore_check", "--repair", stdout=(out := io.StringIO()))
    assert "1 page(s) written again whole" in out.getvalue()
    assert "the installation is whole" in out.getvalue()
    assert page.read_text() == whole


def test_restore_check__repair_writes_the_pages_of_a_site_restored_empty(worker, make_article):
    article = published(make_article, slug="restored-empty", title="Restored")
    call_command("restore_check", "--repair", stdout=io.StringIO())
    page = Path(settings.SITE_ROOT) / paths.page_file(article.slug)
    page.unlink()

    assert f"its page {paths.page_file('restored-empty')} is missing" in check()

    call_command("restore_check", "--repair", stdout=io.StringIO())
    assert "Restored" in page.read_text()


def test_restore_check__the_shared_views_and_the_pages_no_article_needs_are_checked(
    worker, make_article
):
    """Review of issue 23: only the article pages were compared; a stale or missing
    front page, feed, sitemap chunk, tag or author page, and the page of an article
    the database no longer has (a bucket restored over, a site folder from after the
    dump: a withdrawn story still public) all passed as 'the installation is whole'."""
    published(make_article, slug="first", title="First", tags=["zebra"], byline="Ann Lee")
    call_command("restore_check", "--repair", stdout=io.StringIO())
    root = Path(settings.SITE_ROOT)
    front = (root / paths.FRONT_PAGE).read_bytes()
    published(make_article, slug="second", title="Second")
    call_command("restore_check", "--repair", stdout=io.StringIO())

    (root / paths.FRONT_PAGE).write_bytes(front)  # the front page before `second`
    (root / paths.JSON_FEED).write_text("{}")
    (root / paths.sitemap_chunk_name(1)).unlink()
    (root / paths.tag_dir("zebra") / paths.FRONT_PAGE).unlink()
    (root / paths.tag_dir("ann-lee", "author") / paths.FEED).write_text("<feed/>")
    (root / "withdrawn" / "index.html").parent.mkdir()
    (root / "withdrawn" / "index.html").write_text(stale_page("<p>a story taken down</p>"))

    problems = check()
    assert f"{paths.FRONT_PAGE} is not as the database has it" in problems
    assert f"{paths.JSON_FEED} is not as the database has it" in problems
    assert f"{paths.sitemap_chunk_name(1)} is missing" in problems
    assert f"{paths.tag_dir('zebra')}/{paths.FRONT_PAGE} is missing" in problems
    assert f"{paths.tag_dir('ann-lee', 'author')}/{paths.FEED} is not as" in problems
    assert "withdrawn/ is served and no article has it" in problems

    call_command("restore_check", "--repair", stdout=(out := io.StringIO()))
    assert "the installation is whole" in out.getvalue()
    assert not (root / "withdrawn").exists()


def test_restore_check__repair_says_when_a_lease_of_the_restored_database_held_it_off(
    worker, make_article, settings
):
    """Review of issue 23: a dump taken during a pass of the shared views and restored
    within its lease carries a lease no process will let go. `--repair` waited a
    lease, then listed every page of the empty site as missing and said nothing of
    why. The full check's reading holds no lease of the refresher's: the page is
    written again all the same; the feed, which only a pass writes, waits for it."""
    article = published(make_article, slug="leased-away", title="Leased")
    call_command("restore_check", "--repair", stdout=io.StringIO())
    (Path(settings.SITE_ROOT) / paths.page_file(article.slug)).unlink()
    (Path(settings.SITE_ROOT) / "feed.xml").unlink()
    settings.PUBLISH_REFRESH_LEASE_SECONDS = 0.5  # how long --repair waits for it
    # a new token: a pass of the session's worker ending now does not let it go
    Refresher.objects.update(
        lease_expires_at=timezone.now() + timedelta(seconds=600), passes=F("passes") + 1
    )
    try:
        err = io.StringIO()
        with pytest.raises(CommandError, match="problems"):
            call_command("restore_check", "--repair", stdout=io.StringIO(), stderr=err)
        assert "the refresher's lease is held until" in err.getvalue()
        assert "the shared document feed.xml is missing" in err.getvalue()
        assert "is missing" not in err.getvalue().replace("feed.xml is missing", "")
        assert (Path(settings.SITE_ROOT) / paths.page_file(article.slug)).exists()
    finally:
        Refresher.objects.update(lease_expires_at=None)
