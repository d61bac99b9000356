"""The Content-Type of each kind of file the site holds, by its name, whatever the
host's mime files say: Python 3.11's own table lacks WebP, and python:3.11-slim (the
Dockerfile's base) has no /etc/mime.types, so every image rendition (-800w.webp) was
stored in a bucket and served as application/octet-stream (a review's finding)."""

from __future__ import annotations

import mimetypes

import pytest

from blogpublish import views
from blogpublish.storage.base import content_type_of


@pytest.fixture
def bare_host(monkeypatch):
    """A host with no mime files: only Python's own table."""
    table = mimetypes.MimeTypes()  # Python's own table, and no file read
    assert table.guess_type("a.webp")[0] is None  # as on python:3.11-slim
    monkeypatch.setattr(mimetypes, "guess_type", table.guess_type)


@pytest.mark.parametrize(
    ("rel", "expected"),
    [
        ("media/ab12-800w.webp", "image/webp"),
        ("media/ab12.WEBP", "image/webp"),
        ("media/ab12.png", "image/png"),
        ("media/ab12.jpg", "image/jpeg"),
        ("media/ab12.gif", "image/gif"),
    ],
)
def test_an_images_type_by_its_name_on_a_host_without_mime_files(bare_host, rel, expected):
    assert content_type_of(rel) == expected
    assert views.content_type(rel) == expected
