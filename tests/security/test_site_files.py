"""blogpublish.files: the site's writes and deletes never go through a symbolic link
(issue 8, item 7). Each test plants a link to a folder or file outside the site."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from blogpublish import files
from blogpublish.exceptions import SymlinkRefused


@pytest.fixture
def root(tmp_path) -> Path:
    root = tmp_path / "site"
    root.mkdir()
    return root


@pytest.fixture
def outside(tmp_path) -> Path:
    folder = tmp_path / "outside"
    (folder / "1").mkdir(parents=True)
    (folder / "1" / "index.html").write_text("outside")
    (folder / "file").write_text("outside")
    return folder


def test_atomic_write__a_link_to_a_folder_on_the_way_is_refused(root, outside):
    (root / "page").symlink_to(outside)

    with pytest.raises(SymlinkRefused, match="page is a symbolic link"):
        files.atomic_write(root, "page/1/index.html", "the site's")

    assert (outside / "1" / "index.html").read_text() == "outside"
    assert sorted(os.listdir(outside / "1")) == ["index.html"]  # no temporary file either


def test_atomic_write__a_link_where_the_file_goes_is_replaced_not_written_through(root, outside):
    (root / "feed.xml").symlink_to(outside / "file")

    assert files.write_if_changed(root, "feed.xml", "outside")  # not read through either

    assert not (root / "feed.xml").is_symlink()
    assert (root / "feed.xml").read_text() == "outside"
    assert (outside / "file").read_text() == "outside"


def test_stage_and_move__a_link_at_the_staging_or_page_folder_is_refused(root, outside):
    (root / "foo").symlink_to(outside / "1")
    staged = files.stage(root, ".staging", "index.html", "foo's page")

    with pytest.raises(SymlinkRefused, match="foo is a symbolic link"):
        files.move_staged(root, ".staging", staged, "foo/index.html")
    files.discard_staged(root, ".staging", staged)

    assert (outside / "1" / "index.html").read_text() == "outside"
    assert os.listdir(root / ".staging") == []
    (root / ".staging").rmdir()
    (root / ".staging").symlink_to(outside)
    with pytest.raises(SymlinkRefused, match=r"\.staging is a symbolic link"):
        files.stage(root, ".staging", "index.html", "foo's page")
    assert sorted(os.listdir(outside)) == ["1", "file"]


def test_remove_tree__a_link_is_unlinked_and_its_target_kept(root, outside):
    (root / "foo").symlink_to(outside)

    files.remove_tree(root, "foo")

    assert not os.path.lexists(root / "foo")
    assert sorted(os.listdir(outside)) == ["1", "file"]
    assert os.listdir(root) == []


def test_remove_tree__links_inside_the_folder_are_not_followed(root, outside):
    (root / "foo").mkdir()
    (root / "foo" / "index.html").write_text("foo")
    (root / "foo" / "in").symlink_to(outside)

    files.remove_tree(root, "foo")

    assert os.listdir(root) == []
    assert (outside / "1" / "index.html").read_text() == "outside"


def test_read_bytes__never_through_a_link_nor_from_a_fifo(root, outside):
    (root / "link").symlink_to(outside / "file")
    os.mkfifo(root / "fifo")

    assert files.read_bytes(root, "link") is None
    assert files.read_bytes(root, "fifo") is None  # and it did not hang


@pytest.mark.parametrize("rel", ["../x", "a/../../x", "/etc/passwd", "a\\..\\x", "a\x00"])
def test_paths__nothing_that_could_leave_the_root(root, rel):
    with pytest.raises(ValueError, match="not a path inside SITE_ROOT"):
        files.atomic_write(root, rel, "x")
