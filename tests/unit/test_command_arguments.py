"""Management commands refuse arguments that cannot be meant, before touching anything."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("limit", ["100000000000000000000", "1000001", "0"])
def test_publish_pending__a_limit_out_of_range_is_refused(limit):
    # 100000000000000000000 was an IntegrityError's traceback (a review's finding)
    with pytest.raises(CommandError, match="--limit must be from 1 to 1,000,000"):
        call_command("publish_pending", "--limit", limit)


@pytest.mark.parametrize("folder", ["", "  "])
def test_export_articles__an_empty_folder_is_refused_and_nothing_written(
    folder, make_article, tmp_path, monkeypatch
):
    # Path("") is ".": every article was written into the working directory
    make_article(slug="kept-in-the-database")
    monkeypatch.chdir(tmp_path)

    with pytest.raises(CommandError, match="DIR is empty"):
        call_command("export_articles", folder)

    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("where", ["site", "site/backup", "link/backup"])
def test_export_articles__a_folder_inside_site_root_is_refused_and_nothing_written(
    where, make_article, tmp_path, settings
):
    # The site serves SITE_ROOT to anyone: `export_articles $SITE_ROOT/backup` made every
    # draft's text readable at /backup/<slug>.md (a review's finding); through a link too.
    make_article(slug="kept-in-the-database")
    settings.SITE_ROOT = tmp_path / "site"
    settings.SITE_ROOT.mkdir()
    (tmp_path / "link").symlink_to(settings.SITE_ROOT)

    with pytest.raises(CommandError, match=r"is inside SITE_ROOT .*, which is served as the site"):
        call_command("export_articles", str(tmp_path / where))

    assert list(settings.SITE_ROOT.iterdir()) == []


def test_export_articles__a_folder_beside_site_root_is_written(make_article, tmp_path, settings):
    make_article(slug="beside-the-site")
    settings.SITE_ROOT = tmp_path / "site"

    call_command("export_articles", str(tmp_path / "site-backup"), stdout=io.StringIO())

    assert [p.name for p in (tmp_path / "site-backup").iterdir()] == ["beside-the-site.md"]
