"""blogpublish.files: a page's rename is on disk before the database says it is live
(issue 17, finding 5): the directory holding a renamed page is synced, not only the
page's bytes, and a new page folder's entry in its parent too.

These record the sync calls the writes make (os.fsync, the file system flush); what a
power loss keeps cannot be shown in a test, which calls are made can."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from blogpublish import files


@pytest.fixture
def synced(monkeypatch) -> list[str]:
    """The kinds ("dir", "file") of what each os.fsync call synced, and "fs" per flush."""
    calls: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        calls.append("dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real_fsync(fd)

    monkeypatch.setattr(files.os, "fsync", fsync)
    return calls


def test_atomic_write__syncs_the_file_then_its_directory(tmp_path: Path, synced):
    (tmp_path / "slug").mkdir()

    files.atomic_write(tmp_path, "slug/index.html", "<p>new</p>")

    assert synced == ["file", "dir"]
    assert (tmp_path / "slug" / "index.html").read_text() == "<p>new</p>"


def test_atomic_write__a_new_folder_is_synced_in_its_parent(tmp_path: Path, synced):
    files.atomic_write(tmp_path, "新しい/index.html", "<p>new</p>")

    assert synced == ["dir", "file", "dir"]  # the parent of the new folder, the file, its folder


def test_move_staged__syncs_the_target_directory(tmp_path: Path, synced):
    staged = files.stage(tmp_path, ".staging", "index.html", "<p>page</p>")
    (tmp_path / "slug").mkdir()
    synced.clear()

    files.move_staged(tmp_path, ".staging", staged, "slug/index.html")

    assert synced == ["dir"]
    assert (tmp_path / "slug" / "index.html").read_text() == "<p>page</p>"


def test_move_many__the_renames_are_flushed_once(tmp_path: Path, synced, monkeypatch):
    flushes: list[int] = []
    monkeypatch.setattr(files, "_syncfs", lambda fd: flushes.append(fd) or True)
    moves = []
    for slug in ("a", "b", "c"):
        (tmp_path / slug).mkdir()
        moves.append((files.stage(tmp_path, ".staging", "index.html", slug), f"{slug}/index.html"))
    synced.clear()

    files.move_many(tmp_path, ".staging", moves)

    assert len(flushes) == 1 and synced == []
    assert [(tmp_path / s / "index.html").read_text() for s in "abc"] == ["a", "b", "c"]


def test_move_many__without_a_file_system_flush_each_directory_is_synced(
    tmp_path: Path, synced, monkeypatch
):
    monkeypatch.setattr(files, "_syncfs", lambda fd: False)
    moves = []
    for slug in ("a", "b"):
        (tmp_path / slug).mkdir()
        moves.append((files.stage(tmp_path, ".staging", "index.html", slug), f"{slug}/index.html"))
    synced.clear()

    files.move_many(tmp_path, ".staging", moves)

    assert synced == ["dir", "dir"]


def test_move_many__a_new_folder_is_made_durable_by_the_one_flush(
    tmp_path: Path, synced, monkeypatch
):
    # With a file system flush after the renames, a new page folder needs no fsync of
    # its parent: the flush makes the folder and the rename into it durable together.
    flushes: list[int] = []
    monkeypatch.setattr(files, "_has_syncfs", lambda: True)
    monkeypatch.setattr(files, "_syncfs", lambda fd: flushes.append(fd) or True)
    moves = [(files.stage(tmp_path, ".staging", "index.html", s), f"{s}/index.html") for s in "ab"]
    synced.clear()

    files.move_many(tmp_path, ".staging", moves)

    assert len(flushes) == 1 and synced == []
    assert [(tmp_path / s / "index.html").read_text() for s in "ab"] == ["a", "b"]


def test_move_many__without_a_flush_a_new_folder_is_synced_in_its_parent(
    tmp_path: Path, synced, monkeypatch
):
    monkeypatch.setattr(files, "_has_syncfs", lambda: False)
    monkeypatch.setattr(files, "_syncfs", lambda fd: False)
    moves = [(files.stage(tmp_path, ".staging", "index.html", "a"), "a/index.html")]
    synced.clear()

    files.move_many(tmp_path, ".staging", moves)

    assert synced == ["dir", "dir"]  # the new folder's parent, then the folder after the rename


def test_write_many__every_file_flushed_once_before_the_renames_once_after(
    tmp_path: Path, synced, monkeypatch
):
    """A pass's tag documents (build.TagDocuments): two flushes of the file system in
    all, the first before any file is renamed into place (each is whole on disk, as
    atomic_write's fsync makes it), the second after the renames and the new folders."""
    events: list[str] = []
    real_replace = os.replace
    monkeypatch.setattr(files, "_has_syncfs", lambda: True)
    monkeypatch.setattr(files, "_syncfs", lambda fd: events.append("flush") or True)
    monkeypatch.setattr(
        files.os, "replace", lambda *a, **k: events.append("rename") or real_replace(*a, **k)
    )
    (tmp_path / "tag" / "old").mkdir(parents=True)
    (tmp_path / "tag" / "old" / "index.html").write_text("before")
    items = [
        ("tag/old/index.html", "<p>old, new</p>"),
        ("tag/old/feed.xml", b"<feed/>"),
        ("tag/新しい/page/1/index.html", "<p>new</p>"),
    ]

    files.write_many(tmp_path, items)

    assert events == ["flush", "rename", "rename", "rename", "flush"] and synced == []
    assert [(tmp_path / rel).read_bytes() for rel, _ in items] == [
        b"<p>old, new</p>",
        b"<feed/>",
        b"<p>new</p>",
    ]
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]


def test_write_many__a_failed_rename_leaves_each_file_whole_and_no_temporary_file(
    tmp_path: Path, monkeypatch
):
    monkeypatch.setattr(files, "_has_syncfs", lambda: True)
    monkeypatch.setattr(files, "_syncfs", lambda fd: True)
    real_replace = os.replace
    renames: list[str] = []

    def replace(*args, **kwargs):
        renames.append(args[1])
        if len(renames) == 2:
            raise OSError(28, "No space left on device")
        real_replace(*args, **kwargs)

    monkeypatch.setattr(files.os, "replace", replace)
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "index.html").write_text("old b")

    with pytest.raises(OSError, match="No space"):
        files.write_many(tmp_path, [(f"{s}/index.html", f"new {s}") for s in "abc"])

    assert (tmp_path / "a" / "index.html").read_text() == "new a"  # renamed before
    assert (tmp_path / "b" / "index.html").read_text() == "old b"  # the old one, whole
    assert not (tmp_path / "c" / "index.html").exists()
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]


def test_write_many__without_a_file_system_flush_each_file_is_written_as_atomic_write(
    tmp_path: Path, synced, monkeypatch
):
    monkeypatch.setattr(files, "_has_syncfs", lambda: False)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()

    files.write_many(tmp_path, [("a/index.html", "a"), ("b/index.html", "b")])

    assert synced == ["file", "dir", "file", "dir"]
    assert [(tmp_path / s / "index.html").read_text() for s in "ab"] == ["a", "b"]
