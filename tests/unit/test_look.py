"""The look's fingerprint (issue 20, item 3): a real template changed (a theme's copy of
base.html, its stylesheet edited), a CSS file of the site's static folder, a setting a
page shows; and the mark every page carries. The shared views' look beside it: what
changes one, the other or both."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.template.loader import get_template

from blogpublish.site import documents, look
from blogpublish.site.selectors import LiveVersion, Neighbours


def use_theme(settings, folder: Path) -> None:
    """A template folder searched before the app's (a theme): a changed setting, so
    the template engines and the look are made anew (as in a new process)."""
    settings.TEMPLATES = [{**settings.TEMPLATES[0], "DIRS": [str(folder)]}]


def test_a_theme_that_overrides_base_html_changes_the_look_and_only_when_it_differs(
    tmp_path, settings
):
    before = look.look()
    base = Path(get_template("blogpublish/base.html").origin.name).read_text()
    copy = tmp_path / "same" / "blogpublish" / "base.html"
    copy.parent.mkdir(parents=True)
    copy.write_text(base)
    use_theme(settings, tmp_path / "same")
    assert look.look() == before  # the same text: the same look
    theme = tmp_path / "theme" / "blogpublish" / "base.html"
    theme.parent.mkdir(parents=True)
    theme.write_text(base.replace("--accent: #0b5cad;", "--accent: #b3261e;"))
    use_theme(settings, tmp_path / "theme")
    assert look.look() != before


def override(settings, folder: Path, name: str, edit) -> None:
    """A theme folder with the app's template `name` edited by `edit`, searched first."""
    source = Path(get_template(f"blogpublish/{name}").origin.name).read_text()
    theme = folder / "blogpublish" / name
    theme.parent.mkdir(parents=True)
    theme.write_text(edit(source))
    use_theme(settings, folder)


@pytest.mark.parametrize(
    ("name", "page", "shared"),
    [
        # Every page extends base.html: both looks.
        ("base.html", True, True),
        ("article.html", True, False),
        ("listing.html", False, True),
        ("tag.html", False, True),
        ("404.html", False, True),
        ("sitemap.xml", False, True),
        ("sitemap_index.xml", False, True),
    ],
)
def test_a_template_changes_the_look_of_the_documents_made_of_it(
    tmp_path, settings, name, page, shared
):
    before = look.look(), look.shared_look()
    override(settings, tmp_path, name, lambda source: source + "\n")
    assert (look.look() != before[0], look.shared_look() != before[1]) == (page, shared)


@pytest.mark.parametrize(
    ("name", "value", "page"),
    [
        ("SITE_TITLE", "Another title", True),
        ("SITE_LANGUAGE", "zh-Hans", True),
        ("TIME_ZONE", "Asia/Shanghai", True),
        ("FEED_FULL_CONTENT", False, False),
    ],
)
def test_a_setting_the_shared_views_show_changes_their_look(settings, name, value, page):
    before = look.look(), look.shared_look()
    setattr(settings, name, value)
    assert look.shared_look() != before[1]
    assert (look.look() != before[0]) == page


def test_a_css_file_of_the_site_static_folder_changes_the_look(tmp_path, settings):
    before = look.look()
    static = tmp_path / "static"
    css = static / "blogpublish" / "site" / "theme.css"
    css.parent.mkdir(parents=True)
    css.write_text("body { color: #111; }\n")
    settings.STATICFILES_DIRS = [str(static)]  # a changed setting forgets the look
    with_css = look.look()
    assert with_css != before
    css.write_text("body { color: #222; }\n")
    look.look.cache_clear()
    assert look.look() not in (before, with_css)
    assert "blogpublish/site/theme.css" in look.look_parts()["static"]


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("SITE_TITLE", "Another title"),
        ("SITE_URL", "https://blog.example.org/news"),
        ("TIME_ZONE", "Asia/Shanghai"),
        ("LANGUAGE_CODE", "zh-hans"),
    ],
)
def test_a_setting_a_page_shows_changes_the_look(settings, name, value):
    before = look.look()
    setattr(settings, name, value)
    assert look.look() != before


def test_a_setting_no_page_shows_leaves_the_look(settings):
    before = look.look()
    settings.PUBLISH_MAX_ATTEMPTS = 9
    assert look.look() == before


def test_the_page_carries_its_look_within_the_bytes_the_checks_read(settings):
    settings.SITE_TITLE = "标题 with a long title " * 3
    from django.utils import timezone

    # (With its neighbours given, and no image: no database.)
    page = documents.article_page(
        LiveVersion(1, "你好", "你好，世界", "Body.", timezone.now(), "0" * 64),
        around=Neighbours(older=None, newer=None),
    ).encode()
    head = page[: documents.CONTENT_MARK_WITHIN]
    assert look.page_look(head) == look.look()
    assert documents.page_content_hash(head) is not None
    assert look.page_look(b"<html>") is None and look.page_look(None) is None
