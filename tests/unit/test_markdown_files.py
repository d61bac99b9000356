"""Reading and writing Markdown files with YAML front matter (publishing.markdown_files)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import PurePath

import pytest

from publishing.markdown_files import BadFile, Draft, parse, parse_date, render, slug_from_path


def test_parse__jekyll_post_with_ignored_keys():
    text = (
        "---\ntitle: Hello\ndate: 2024-01-02 10:00:00 +0100\ntags: [a]\nlayout: post\n---\n"
        "\nHi *there*.\n"
    )

    parsed = parse(text)

    assert parsed.title == "Hello"
    assert parsed.slug == ""
    assert parsed.body == "Hi *there*."
    assert parsed.publish_at == datetime(2024, 1, 2, 9, 0, tzinfo=UTC)
    assert parsed.ignored_keys == {"tags", "layout"}


def test_parse__body_kept_as_written_after_the_separating_blank_lines():
    text = (
        "---\ntitle: T\n---\n\n    indented code\n\n<b>html</b> & `code`\n---\nnot front matter\n"
    )

    assert parse(text).body == "    indented code\n\n<b>html</b> & `code`\n---\nnot front matter"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        # YAML reads these itself
        (datetime(2024, 5, 1, 9, 30), datetime(2024, 5, 1, 9, 30, tzinfo=UTC)),
        ("2024-05-01T09:30:00+02:00", datetime(2024, 5, 1, 7, 30, tzinfo=UTC)),
        ("2024-05-01T09:30:00Z", datetime(2024, 5, 1, 9, 30, tzinfo=UTC)),
        ("2024-05-01 09:30:00", datetime(2024, 5, 1, 9, 30, tzinfo=UTC)),  # no zone: UTC
        ("2024-05-01 09:30:00 -0500", datetime(2024, 5, 1, 14, 30, tzinfo=UTC)),  # Jekyll
        ("2024-05-01", datetime(2024, 5, 1, tzinfo=UTC)),
    ],
)
def test_parse_date__formats_and_zones(value, expected):
    assert parse_date(value) == expected


def test_parse__yaml_dates_unquoted():
    parsed = parse("---\ntitle: T\ndate: 2024-05-01T09:30:00+02:00\n---\nx")
    assert parsed.publish_at == datetime(2024, 5, 1, 7, 30, tzinfo=UTC)
    assert parse("---\ntitle: T\ndate: 2024-05-01\n---\nx").publish_at == datetime(
        2024, 5, 1, tzinfo=UTC
    )


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("no front matter", "no front matter"),
        ("+++\ntitle = 'x'\n+++\nbody", "TOML front matter"),
        ("---\ntitle: [unclosed\n---\nbody", "not valid YAML at line 3"),
        ("---\n- a list\n---\nbody", "must be a mapping"),
        ("---\nslug: x\n---\nbody", "no title"),
        ("---\ntitle: '  '\n---\nbody", "no title"),
        ("---\ntitle: [a, b]\n---\nbody", "title must be text"),
        ("---\ntitle: T\ndate: yesterday\n---\nbody", "is not a date"),
        ("---\ntitle: T\nslug: {a: b}\n---\nbody", "slug must be text"),
    ],
)
def test_parse__bad_files_say_why(text, reason):
    with pytest.raises(BadFile) as caught:
        parse(text)
    assert reason in caught.value.reason


@pytest.mark.parametrize("draft", ["true", "True", "yes", "'true'"])
def test_parse__drafts(draft):
    result = parse(f"---\ntitle: T\ndraft: {draft}\n---\nx")
    assert isinstance(result, Draft)
    assert (result.parsed.title, result.parsed.body) == ("T", "x")  # kept as a draft


def test_parse__a_draft_is_held_to_the_same_rules():
    with pytest.raises(BadFile, match="no title"):
        parse("---\ndraft: true\n---\nx")


def test_parse__draft_false_is_imported():
    assert parse("---\ntitle: T\ndraft: false\n---\nx").title == "T"


@pytest.mark.parametrize(
    ("path", "slug"),
    [
        ("posts/hello-world.md", "hello-world"),
        ("_posts/2024-05-01-hello-world.markdown", "hello-world"),
        ("content/posts/my-bundle/index.md", "my-bundle"),
        ("My First Post.md", "my-first-post"),
        ("你好.md", "你好"),
    ],
)
def test_slug_from_path(path, slug):
    assert slug_from_path(PurePath(path)) == slug


@pytest.mark.parametrize(
    "title", ["Plain", "yes", "null", "Quotes: 'a' \"b\" # c", "你好，世界", "- dash", "2024"]
)
def test_render_then_parse_gives_the_same_fields(title):
    when = datetime(2031, 5, 1, 10, 30, tzinfo=UTC)
    body = "---\n\nA rule first, then *text*.\n\n    code"

    parsed = parse(render(title=title, slug="s-1", publish_at=when, body=body))

    assert (parsed.title, parsed.slug, parsed.publish_at, parsed.body) == (title, "s-1", when, body)


@pytest.mark.parametrize(
    "front",
    [
        "title: T\nf: 1" + ":59" * 200 + ".5",  # a sexagesimal float past the float range
        "title: T\n? 0b" + "1" * 20000 + "\n: 1",  # a key str() cannot print
    ],
    ids=["float-overflow", "huge-int-key"],
)
def test_parse__values_python_cannot_make_are_a_bad_file_not_a_crash(front):
    """Found by the issue 19 review: each ended the whole import with a traceback."""
    text = f"---\n{front}\n---\nBody.\n"
    try:
        parsed = parse(text)
    except BadFile as exc:
        assert len(str(exc)) < 300
    else:
        assert all(len(key) < 300 for key in parsed.ignored_keys)
