"""Staging a batch's pages from a generator (the re-render renders each page as its
writer thread asks for it; blogpublish.files.stage_many) and removing them together."""

from __future__ import annotations

import os

import pytest

from blogpublish import files
from blogpublish.site import paths


class Failed(Exception):
    pass


def staging(root) -> list[str]:
    folder = root / paths.STAGING_DIR
    return sorted(os.listdir(folder)) if folder.exists() else []


def test_stage_many__a_generator_staged_in_order_synced_and_discarded_together(tmp_path):
    asked = []

    def pages():
        for n in range(5):
            asked.append(n)
            yield f"p{n}.html", f"<p>{n}</p>"

    tokens = files.stage_many(tmp_path, paths.STAGING_DIR, pages())

    assert asked == [0, 1, 2, 3, 4]
    assert all(isinstance(token, str) and f"p{n}.html" in token for n, token in enumerate(tokens))
    for n, token in enumerate(tokens):
        assert (tmp_path / paths.STAGING_DIR / token).read_text() == f"<p>{n}</p>"
    files.discard_many(tmp_path, paths.STAGING_DIR, [*tokens, "already-gone"])
    assert staging(tmp_path) == []


def test_stage_many__a_generator_that_fails_leaves_nothing_staged(tmp_path):
    """A page whose rendering raises what ends the chunk (a time limit) ends the
    staging too: what was written for the pages before it is removed."""

    def pages():
        yield "a.html", "<p>a</p>"
        yield "b.html", "<p>b</p>"
        raise Failed

    with pytest.raises(Failed):
        files.stage_many(tmp_path, paths.STAGING_DIR, pages())

    assert staging(tmp_path) == []
