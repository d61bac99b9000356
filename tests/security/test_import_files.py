"""Issue 19, findings 3 and 4: `import_articles` reads only regular files, never through a
link, never a device or a FIFO, at most FILE_MAX_BYTES each; its YAML refuses anchors
and aliases (a "billion laughs"), and no message quotes more than a short piece of a
value. Each test is bounded even without the guard it checks (it fails, it does not
eat the machine)."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from publishing import markdown_files
from publishing.markdown_files import BadFile, PureSafeLoader, SafeLoader
from publishing.models import Article
from publishing.services.importing import FILE_MAX_BYTES, read_bytes
from tests.support.import_files import post, run_import, write

LOADERS = [pytest.param(SafeLoader, id="libyaml"), pytest.param(PureSafeLoader, id="pure")]
# The longest reason parse() gives: its words plus two short quotes of a value.
MESSAGE_MAX = 400


def laughs(levels: int, copies: int = 10) -> str:
    """A front matter whose `date` stands for copies**levels strings through aliases."""
    lines = ['a0: &a0 "lol"']
    for n in range(1, levels + 1):
        refs = ", ".join([f"*a{n - 1}"] * copies)
        lines.append(f"a{n}: &a{n} [{refs}]")
    lines += ["title: Laughs", f"date: *a{levels}"]
    return "---\n" + "\n".join(lines) + "\n---\nbody\n"


# --- the YAML -----------------------------------------------------------------------


@pytest.mark.parametrize("loader", LOADERS)
def test_a_billion_laughs_is_refused_at_its_first_anchor(loader):
    # 10**5 strings: small enough to expand if the guard were gone (the test then fails
    # on the message, at a few megabytes), as refused as 10**9 with it.
    with pytest.raises(BadFile) as refused:
        markdown_files.parse(laughs(5), loader=loader)
    assert "anchors and aliases" in refused.value.reason
    assert "line 2" in refused.value.reason  # the first anchor, counted in the file
    assert len(refused.value.reason) < MESSAGE_MAX


@pytest.mark.parametrize("loader", LOADERS)
@pytest.mark.parametrize(
    "front",
    [
        "title: &t Hello\nslug: x",  # an anchor alone
        "base: &b {title: Hi}\n<<: *b",  # a merge key: an alias
        "title: *undefined",
    ],
)
def test_any_anchor_or_alias_is_refused(loader, front):
    with pytest.raises(BadFile, match="anchors and aliases"):
        markdown_files.parse(f"---\n{front}\n---\nbody\n", loader=loader)


@pytest.mark.parametrize(
    ("loader", "depth", "reason"),
    [
        (PureSafeLoader, 5000, f"nested more than {markdown_files.MAX_DEPTH} deep"),
        (SafeLoader, 5000, "exceeded maximum nesting depth"),  # libyaml's own limit: 1,000
        # With an alias to refuse, the Python composer reads it, and stops at the depth.
        (SafeLoader, 100, f"nested more than {markdown_files.MAX_DEPTH} deep"),
    ],
)
def test_deep_nesting_is_refused_with_a_reason_not_a_recursion_error(loader, depth, reason):
    deep = "[" * depth + "*a" + "]" * depth
    with pytest.raises(BadFile) as refused:
        markdown_files.parse(f"---\ntitle: Deep\ntags: {deep}\n---\nbody\n", loader=loader)
    assert refused.value.reason.endswith(reason)


@pytest.mark.parametrize(
    ("front", "reason"),
    [
        ("title: " + "9" * 5000, "a value that cannot be read"),
        ("title: 0x" + "f" * 5000, "title must be text, not a number this long"),
        ("title: T\ndate: 2024-02-30", "a value that cannot be read"),
        ("title: T\ndate: " + "x" * 100_000, "is not a date"),
        ("title: T\ndate: [" + ", ".join(["long text " * 50] * 2000) + "]", "not a list"),
        ("title: [" + "x" * 100_000 + "]", "title must be text, not a list"),
    ],
)
def test_a_message_quotes_at_most_a_short_piece_of_a_value(front, reason):
    with pytest.raises(BadFile) as refused:
        markdown_files.parse(f"---\n{front}\n---\nbody\n")
    assert reason in refused.value.reason
    assert len(refused.value.reason) < MESSAGE_MAX


# Pieces of YAML that exercise the parser's corners: anchors, aliases, tags, flow and
# block collections, quotes, dates, numbers, merge keys, directives.
YAML_PIECES = st.sampled_from(
    [
        "&a ", "*a", "&b ", "*b", "!!str ", "!!binary ", "!!python/object ", "!custom ",
        "[", "]", "{", "}", ", ", ": ", "- ", "? ", "<<: ", "|\n  ", ">\n  ", "'", '"',
        "\\", "#", "%YAML 1.1\n", "\n", "\n  ", "\t", "title", "date", "slug", "draft",
        "2024-05-01", "2024-02-30", "12:30:00", "+14:00", "9999-12-31", "0001-01-01", "1e999",
        "9" * 50, "0x1F", "true", "~", "null", ".inf", "你好", "\u202e", "\x85", "\ufeff",
        "...", "---", "lol",
    ]
)  # fmt: skip


@pytest.mark.parametrize("loader", LOADERS)
@settings(
    max_examples=400,
    deadline=None,  # time is bounded by construction (linear), not asserted here
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(pieces=st.lists(YAML_PIECES | st.text(max_size=8), max_size=60))
def test_fuzz__the_front_matter_reader_gives_a_result_or_a_short_bad_file(loader, pieces):
    text = "---\n" + "".join(pieces) + "\n---\nbody\n"
    try:
        result = markdown_files.parse(text, loader=loader)
    except BadFile as exc:
        assert exc.reason and len(exc.reason) < MESSAGE_MAX
    else:
        assert isinstance(result, markdown_files.ParsedFile | markdown_files.Draft)


# --- the files --------------------------------------------------------------------------


@pytest.fixture
def blog(tmp_path) -> Path:
    folder = tmp_path / "blog"
    write(folder, "good.md", post("Good one", slug="sec-good"))
    return folder


def failed_line(err: str, path: Path) -> str:
    lines = [line for line in err.splitlines() if line.startswith(f"failed: {path}: ")]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.django_db
def test_a_link_is_not_followed_and_the_other_files_import(blog, tmp_path):
    secret = write(tmp_path, "secret.md", post("Secret", "the server's secrets", slug="sec-link"))
    (blog / "x.md").symlink_to(secret)
    (blog / "zero.md").symlink_to("/dev/zero")
    elsewhere = write(tmp_path / "elsewhere", "in.md", post("Elsewhere", slug="sec-dir-link"))
    (blog / "linked").symlink_to(elsewhere.parent)  # a folder: not entered

    out, err, code = run_import(str(blog))

    assert code == 1
    assert "symbolic link, not followed" in failed_line(err, blog / "x.md")
    assert "symbolic link, not followed" in failed_line(err, blog / "zero.md")
    assert not Article.objects.filter(slug__in=["sec-link", "sec-dir-link"]).exists()
    assert Article.objects.filter(slug="sec-good").exists()
    assert f"skipped: {blog / 'linked'}: a link to a folder, not followed" in out
    assert out.splitlines()[-1].endswith("created 1, updated 0, unchanged 0, skipped 1, failed 2")


@pytest.mark.django_db
@pytest.mark.parametrize("swapped_for", ["a link", "a file"])
def test_a_folder_swapped_after_the_listing_is_not_followed(
    blog, tmp_path, monkeypatch, swapped_for
):
    """A folder of the tree replaced by a link between the listing and the read: the
    read opened `blog/sub/post.md` with O_NOFOLLOW, which guards only the last part, and
    read the file through the link, outside the folder named (a review's finding). Each
    folder is now opened from the one named, with O_NOFOLLOW | O_DIRECTORY."""
    from publishing.services import importing

    write(blog, "sub/deeper/post.md", post("Innocent", slug="sec-swap-inner"))
    outside = write(tmp_path / "outside" / "deeper", "post.md", post("Out", slug="sec-swap-out"))
    listed = importing._files_in

    def files_in(path: Path):
        found = listed(path)
        shutil.rmtree(blog / "sub")  # the race, won by whoever can write in blog/
        if swapped_for == "a link":
            (blog / "sub").symlink_to(outside.parent.parent)
        else:
            write(blog, "sub", "not a folder")
        return found

    monkeypatch.setattr(importing, "_files_in", files_in)

    _out, err, code = run_import(str(blog))

    assert code == 1
    assert "'sub' on its path is no longer a folder" in failed_line(
        err, blog / "sub" / "deeper" / "post.md"
    )
    assert not Article.objects.filter(slug="sec-swap-out").exists()
    assert Article.objects.filter(slug="sec-good").exists()  # the other files import


@pytest.mark.django_db
def test_a_device_named_is_refused_without_reading_it():
    _out, err, code = run_import("/dev/zero")
    assert code == 1
    assert "a character device, not a regular file" in failed_line(err, Path("/dev/zero"))


def _feed_fifo_if_opened(fifo: Path, text: str, stop: threading.Event) -> None:
    """Write `text` into the FIFO if a reader ever opens it (so that a reader that
    should not have opened it imports the text instead of hanging the test)."""
    while not stop.is_set():
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno != errno.ENXIO:  # ENXIO: no reader yet
                raise
            stop.wait(0.05)
            continue
        with contextlib.suppress(BrokenPipeError):
            os.write(fd, text.encode())
        os.close(fd)
        return


@pytest.mark.django_db
def test_a_fifo_is_refused_and_never_opened_for_reading(blog):
    fifo = blog / "pipe.md"
    os.mkfifo(fifo)
    stop = threading.Event()
    feeder = threading.Thread(
        target=_feed_fifo_if_opened, args=(fifo, post("Piped", slug="sec-fifo"), stop)
    )
    feeder.start()
    try:
        _out, err, code = run_import(str(blog))
    finally:
        stop.set()
        feeder.join()
    assert code == 1
    assert "a named pipe (FIFO), not a regular file" in failed_line(err, fifo)
    assert not Article.objects.filter(slug="sec-fifo").exists()
    assert Article.objects.filter(slug="sec-good").exists()


def test_a_file_over_the_cap_is_refused_naming_its_size(tmp_path):
    big = tmp_path / "big.md"
    with big.open("wb") as fh:
        fh.truncate(FILE_MAX_BYTES + 1)  # sparse: nothing to read but its size
    with pytest.raises(BadFile, match=f"the file is {FILE_MAX_BYTES + 1:,} bytes; at most"):
        read_bytes(big)


@pytest.mark.django_db
def test_a_billion_laughs_file_fails_alone_and_quickly_explained(blog):
    write(blog, "laughs.md", laughs(5))
    _out, err, code = run_import(str(blog))
    assert code == 1
    assert "anchors and aliases" in failed_line(err, blog / "laughs.md")
    assert Article.objects.filter(slug="sec-good").exists()


DEEP = 1100  # folders one in another: past Python's recursion limit (1,000)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


@pytest.fixture
def deep_blog(blog) -> Iterator[Path]:
    """`blog` with DEEP folders `d` one in another (2,200 bytes of path, well inside
    PATH_MAX) and a post at the bottom. Removed here, bottom up through descriptors:
    pytest's own cleanup (shutil.rmtree, recursive on Python 3.11) crashed on such a
    tree, and so would the run's temporary folder."""
    fd = os.open(blog, _DIR_FLAGS)
    try:
        for _ in range(DEEP):
            os.mkdir("d", dir_fd=fd)
            fd = _enter(fd, "d")
        with os.fdopen(os.open("deep.md", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as fh:
            fh.write(post("Deep", slug="sec-deep"))
    finally:
        os.close(fd)
    yield blog
    _remove_nested(blog, "d")


def _enter(fd: int, name: str) -> int:
    """The folder `name` in the folder `fd`, opened; `fd` closed."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=fd)
    finally:
        os.close(fd)


def _remove_nested(top: Path, name: str) -> None:
    """Remove the folders `name` one in another under `top` (and the files at the
    bottom) without recursion: down by descriptors, then up through `..`."""
    fd, depth = os.open(top, _DIR_FLAGS), 0
    while True:
        try:
            inner = os.open(name, _DIR_FLAGS, dir_fd=fd)
        except FileNotFoundError:
            break
        os.close(fd)
        fd, depth = inner, depth + 1
    for leftover in os.listdir(fd):
        os.unlink(leftover, dir_fd=fd)
    for _ in range(depth):
        fd = _enter(fd, "..")
        os.rmdir(name, dir_fd=fd)
    os.close(fd)


@pytest.mark.django_db
def test_a_folder_tree_past_the_recursion_limit_is_read_not_a_traceback(deep_blog):
    """os.walk() recurses on Python 3.11: 1,100 folders one in another raised
    RecursionError out of the import (a review's finding). The walk keeps its own list
    of folders: the post at the bottom is read."""
    out, err, code = run_import("--dry-run", str(deep_blog))

    assert code == 0, out + err
    deep = deep_blog.joinpath(*["d"] * DEEP, "deep.md")
    assert f"would create: {deep} (sec-deep)" in out
    assert f"would create: {deep_blog / 'good.md'} (sec-good)" in out
