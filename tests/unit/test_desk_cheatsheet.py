"""The Markdown help beside the editor says what the renderer really does: every
example is rendered with the site's renderer (blogpublish.rendering)."""

from __future__ import annotations

import pytest

from blogpublish.desk.cheatsheet import REMOVED, SUPPORTED
from blogpublish.rendering import render_markdown


@pytest.mark.parametrize("example", SUPPORTED, ids=lambda e: e.what)
def test_supported_example_renders_as_the_sheet_says(example):
    assert example.fragment in render_markdown(example.markdown)


@pytest.mark.parametrize("example", REMOVED, ids=lambda e: e.what)
def test_removed_example_is_removed(example):
    assert example.fragment.lower() in example.markdown.lower()  # the example has it
    assert example.fragment.lower() not in render_markdown(example.markdown).lower()


def test_images_from_the_sites_media_folder_are_kept():
    src = "/media/" + "a" * 64 + ".png"
    assert render_markdown(f"![A cat]({src})") == f'<p><img src="{src}" alt="A cat"></p>\n'


@pytest.mark.parametrize(
    "src", ["javascript:alert(1)", "data:image/svg+xml;base64,PHN2Zz4=", "vbscript:x"]
)
def test_image_sources_that_could_run_are_dropped(src):
    html = render_markdown(f'<img src="{src}" alt="x">')
    assert "src=" not in html
