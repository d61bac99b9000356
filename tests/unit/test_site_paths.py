"""Where pages live on disk (raw UTF-8) and how they are addressed (percent-encoded)."""

from __future__ import annotations

from pathlib import Path

import pytest

from blogpublish.site import paths
from publishing.validators import is_reserved_slug


@pytest.mark.parametrize("slug", ["", ".", "..", "../etc", "a/b", "/abs", "a\\b", "a\x00"])
def test_page_dir__never_leaves_the_site_root(tmp_path, slug):
    with pytest.raises(ValueError, match="would leave SITE_ROOT"):
        paths.page_dir(tmp_path, slug)


def test_page_dir__a_link_is_not_resolved_to_its_target(tmp_path):
    (tmp_path / "bar").mkdir()
    (tmp_path / "foo").symlink_to("bar")  # publishing foo once overwrote bar's page
    assert paths.page_dir(tmp_path, "foo") == tmp_path / "foo"


def test_page_path__unicode_slug_is_a_raw_utf8_directory(tmp_path):
    assert paths.page_path(tmp_path, "你好") == tmp_path.resolve() / "你好" / "index.html"


def test_addresses__percent_encoded_and_under_site_url(settings):
    settings.SITE_URL = "https://example.com/blog"
    assert paths.article_href("你好") == "/blog/%E4%BD%A0%E5%A5%BD/"
    assert paths.article_url("你好") == "https://example.com/blog/%E4%BD%A0%E5%A5%BD/"
    assert paths.archive_href(None) == "/blog/"
    assert paths.archive_href(3) == "/blog/page/3/"


def test_article_dir_names__not_the_sites_own_nor_dot_files():
    assert paths.is_article_dir_name("hello")
    assert paths.is_article_dir_name("你好")
    for own in ("page", ".staging", ".x.removed-1a2b"):
        assert not paths.is_article_dir_name(own)
    assert paths.is_trash(".x.removed-1a2b") and not paths.is_trash("x")


@pytest.mark.parametrize(
    "name",
    [
        paths.FRONT_PAGE,
        paths.FEED,
        paths.SITEMAP,
        paths.ROBOTS,
        paths.sitemap_chunk_name(9),
        paths.ARCHIVE_DIR,
        paths.STAGING_DIR,
        ".lock",
        ".site-state.json",
    ],
)
def test_every_name_the_site_writes_is_a_reserved_slug(name):
    assert is_reserved_slug(name)
    assert not paths.is_article_dir_name(name)


def test_sitemap_chunk_names_round_trip():
    name = paths.sitemap_chunk_name(12)
    assert name == "sitemap-12.xml"
    assert int(paths.SITEMAP_CHUNK_RE.match(name)[1]) == 12
    assert not paths.SITEMAP_CHUNK_RE.match("sitemap.xml")
    assert Path(name).suffix == ".xml"
