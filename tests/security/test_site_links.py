"""Symbolic links inside SITE_ROOT are never followed when the site writes or deletes
(issue 8, item 7): each test plants the link of an attack and checks that its target is
untouched. The real database and pipeline services, in-process (test_site_builder.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from blogpublish.exceptions import SymlinkRefused
from blogpublish.site import documents
from publishing.models import ArticleStatus
from publishing.services import Outcome
from tests.integration.test_site_builder import site  # noqa: F401  (the fixture)
from tests.support.site import run_full_check

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def outside(tmp_path) -> Path:
    """A folder outside SITE_ROOT with content of its own, old enough to be swept."""
    folder = tmp_path / "outside"
    (folder / "7").mkdir(parents=True)
    (folder / "7" / "index.html").write_text("not the site's")
    (folder / "precious.txt").write_text("keep me")
    os.utime(folder / "precious.txt", (0, 0))
    return folder


def contents(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): p.read_text() for p in folder.rglob("*") if p.is_file()}


def test_publish__page_folder_a_link_to_a_live_page_is_refused_and_that_page_kept(site):  # noqa: F811
    site.add(1, slug="bar", body="The words of bar.")
    (site.root / "foo").symlink_to("bar")

    [foo] = site.add(1, slug="foo", body="The words of foo.", expect=Outcome.DEAD)

    page = (site.root / "bar" / "index.html").read_text()
    assert "The words of bar." in page and "The words of foo." not in page
    assert foo.status == ArticleStatus.DEAD
    assert "symbolic link" in foo.last_error and "foo" in foo.last_error
    assert (site.root / "foo").is_symlink()


def test_delete__a_link_in_place_of_the_page_goes_and_its_target_stays(site):  # noqa: F811
    site.add(1, slug="bar")
    [foo] = site.add(1, slug="foo")
    bar_shows = documents.page_content_hash((site.root / "bar" / "index.html").read_bytes())
    # Someone replaced foo's folder with a link to the live bar/.
    (site.root / "foo" / "index.html").unlink()
    (site.root / "foo").rmdir()
    (site.root / "foo").symlink_to(site.root / "bar")

    site.delete(foo)

    assert not os.path.lexists(site.root / "foo")
    # bar's page stays, with its content (its previous/next links may change: foo went).
    bar_page = (site.root / "bar" / "index.html").read_bytes()
    assert bar_shows is not None and documents.page_content_hash(bar_page) == bar_shows


def test_reconcile__a_link_to_an_outside_folder_stays_with_its_contents(site, outside):  # noqa: F811
    site.add(2)
    before = contents(outside)
    (site.root / "outlink").symlink_to(outside)  # named like a page no article needs
    (site.root / ".x.removed-0123456789ab").symlink_to(outside)  # and like trash

    run_full_check(site.publisher)

    assert (site.root / "outlink").is_symlink()
    assert contents(outside) == before


def test_reconcile__a_link_at_page_stops_the_pass_and_deletes_nothing_outside(site, outside):  # noqa: F811
    site.add(2)
    before = contents(outside)
    (site.root / "page").symlink_to(outside)  # 7 > the number of archive pages

    with pytest.raises(SymlinkRefused, match="page is a symbolic link"):
        run_full_check(site.publisher)

    assert contents(outside) == before


def test_staging_a_link__sweep_leaves_the_target_and_publish_refuses(site, outside):  # noqa: F811
    site.add(1)
    before = contents(outside)
    (site.root / ".staging").rmdir()
    (site.root / ".staging").symlink_to(outside)

    run_full_check(site.publisher)  # sweeps stale staged files: not through the link
    [article] = site.add(1, expect=Outcome.DEAD)

    assert contents(outside) == before
    assert ".staging is a symbolic link" in article.last_error
