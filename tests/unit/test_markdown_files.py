"""Reading and writing Markdown files with YAML front matter (publishing.markdown_files)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import PurePath

import pytest

from publishing.markdown_files import (
    BadFile,
    Draft,
    ParsedFile,
    PureSafeLoader,
    SafeLoader,
    date_from_path,
    parse,
    parse_date,
    render,
    slug_from_path,
)


def test_parse__jekyll_post_with_tags_kept_and_other_keys_ignored():
    text = (
        "---\ntitle: Hello\ndate: 2024-01-02 10:00:00 +0100\ntags: [a]\nlayout: post\n---\n"
        "\nHi *there*.\n"
    )

    parsed = parse(text)

    assert parsed.title == "Hello"
    assert parsed.slug == ""
    assert parsed.body == "Hi *there*."
    assert parsed.publish_at == datetime(2024, 1, 2, 9, 0, tzinfo=UTC)
    assert parsed.tags == ["a"]
    assert parsed.ignored_keys == {"layout"}


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
        ("content/posts/keep/index.backup.md", "indexbackup"),
    ],
)
def test_slug_from_path(path, slug):
    assert slug_from_path(PurePath(path)) == slug


@pytest.mark.parametrize(
    ("path", "slug"),
    [
        ("content/posts/hello/index.en.md", "hello"),
        ("content/posts/hello/index.en-GB.md", "hello"),
        ("content/posts/hello/index.fr.md", "hello-fr"),
        ("content/posts/olá/_index.pt-br.md", "olá-pt-br"),
    ],
)
def test_slug_from_path__a_multilingual_bundles_pages_each_their_own(path, slug):
    """A review's findings: every page of such a bundle was `indexen`, then each the
    folder's, and the bundle's pages failed as each other's duplicates. The page in the
    site's language gets the folder's name; the others add their language."""
    assert slug_from_path(PurePath(path), "en") == slug


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


# Dates as Jekyll (Ruby's Time.parse) and Hugo accept them, each with the instant it is.
LENIENT_DATES = [
    ("2024-05-01 09:30:00 +0200", datetime(2024, 5, 1, 7, 30, tzinfo=UTC)),  # Jekyll's own
    ("2024-05-01 09:30:00 -0500", datetime(2024, 5, 1, 14, 30, tzinfo=UTC)),
    ("2024-05-01T09:30:00Z", datetime(2024, 5, 1, 9, 30, tzinfo=UTC)),
    ("2024-05-01T09:30:00.123+01:00", datetime(2024, 5, 1, 8, 30, 0, 123000, tzinfo=UTC)),
    ("2024-05-01 9:30", datetime(2024, 5, 1, 9, 30, tzinfo=UTC)),
    ("2024-5-1", datetime(2024, 5, 1, tzinfo=UTC)),
    ("2024/05/01 09:30", datetime(2024, 5, 1, 9, 30, tzinfo=UTC)),
    ("May 1, 2024", datetime(2024, 5, 1, tzinfo=UTC)),
    ("1 May 2024 09:30", datetime(2024, 5, 1, 9, 30, tzinfo=UTC)),
    ("Wed, 01 May 2024 09:30:00 +0000", datetime(2024, 5, 1, 9, 30, tzinfo=UTC)),  # RFC 2822
    ("Wed, 01 May 2024 09:30:00 GMT", datetime(2024, 5, 1, 9, 30, tzinfo=UTC)),  # RFC 1123
    ("2024-05-01 09:30:00 EST", datetime(2024, 5, 1, 14, 30, tzinfo=UTC)),  # Ruby's zones
    ("2024-05-01 09:30:00 PDT", datetime(2024, 5, 1, 16, 30, tzinfo=UTC)),
    ("01 May 24 09:30 UTC", datetime(2024, 5, 1, 9, 30, tzinfo=UTC)),  # Go's RFC822
    # A post of Jekyll's own blog (tests/jekyll_corpus): Ruby takes the parts it knows.
    ("2023-01-29 18:30:22 2023 -0800", datetime(2023, 1, 30, 2, 30, 22, tzinfo=UTC)),
    # A part below the least given is its first (Time.parse), not today's.
    ("May 2024", datetime(2024, 5, 1, tzinfo=UTC)),
]


@pytest.mark.parametrize("text, instant", LENIENT_DATES)
def test_parse_date__what_jekyll_and_hugo_accept(text, instant):
    assert parse_date(text) == instant
    assert parse(f"---\ntitle: T\ndate: {text}\n---\nb").publish_at == instant


@pytest.mark.parametrize(
    "text",
    [
        "yesterday",
        "2024-13-01",
        "not a date at all",
        "2024-02-30",
        # A time it cannot read is refused, not left out for the day's midnight (a
        # review's finding: all four were 2024-05-01 00:00 UTC, without a word).
        "2024-05-01 25:00",
        "2024-05-01 24:00:00",
        "2024-05-01 09:61",
        "2024-05-01 9.30",
        "2024-05-01 09.30",  # read as 09:00:00.3 by fromisoformat and dateutil
        "2024-05-01 10.45",
    ],
)
def test_parse_date__what_neither_accepts_is_refused_with_the_value(text):
    with pytest.raises(BadFile, match="is not a date"):
        parse_date(text)


# "Now" for the parts a date leaves out: 23:30 UTC, already the next day at UTC+2.
NOW = datetime(2026, 7, 15, 23, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    "text, instant",
    [
        # What the text leaves out above its highest part is now's, as Time.parse fills
        # it (a review's finding: dateutil filled it from January 1st).
        ("09:30", datetime(2026, 7, 15, 9, 30, tzinfo=UTC)),  # today's
        ("12", datetime(2026, 7, 12, tzinfo=UTC)),  # this month's 12th, midnight
        ("7 09:30", datetime(2026, 7, 7, 9, 30, tzinfo=UTC)),
        ("May 1", datetime(2026, 5, 1, tzinfo=UTC)),  # this year's
        ("May", datetime(2026, 5, 1, tzinfo=UTC)),  # below it, the least: the 1st
        # Today in the text's zone, as Ruby takes now in it: the 16th at UTC+2.
        ("09:30 +0200", datetime(2026, 7, 16, 7, 30, tzinfo=UTC)),
        # A weekday beside other parts is ignored, as Ruby ignores it (dateutil moved
        # the day to the next Monday).
        ("Monday 09:30", datetime(2026, 7, 15, 9, 30, tzinfo=UTC)),
        ("Monday May 2024", datetime(2024, 5, 1, tzinfo=UTC)),  # not the 6th
        ("Thu Jan 2024 10:00", datetime(2024, 1, 1, 10, tzinfo=UTC)),  # not the 4th
    ],
)
def test_parse_date__what_the_text_leaves_out_is_nows(text, instant):
    assert parse_date(text, now=NOW) == instant


@pytest.mark.parametrize(
    "text, why",
    [
        # Time.parse raises "no time information": Jekyll refuses the file too (the
        # import made them days of January).
        ("Monday", "it gives no day or time"),
        ("UTC-3", "it gives a zone and no day or time"),
        ("+0200", "it gives a zone and no day or time"),
    ],
)
def test_parse_date__a_weekday_or_a_zone_alone_is_refused(text, why):
    with pytest.raises(BadFile, match=f"is not a date: {why}"):
        parse_date(text, now=NOW)


def test_parse_date__a_date_longer_than_any_is_refused_before_it_is_parsed():
    """The lenient patterns backtrack on a long run of spaces: a review's 20,000-space
    date took 19 s of a core to fail (quadratic); refused by its length first."""
    with pytest.raises(BadFile, match="longer than 100 characters"):
        parse_date("2024-05-01" + " " * 2000 + "-x")


def test_date_from_path__jekylls_fallback():
    assert date_from_path(PurePath("_posts/2024-05-01-hello.md")) == datetime(
        2024, 5, 1, tzinfo=UTC
    )
    assert date_from_path(PurePath("hello.md")) is None
    with pytest.raises(BadFile, match="not a date"):
        date_from_path(PurePath("2024-02-30-hello.md"))


def test_parse__jekyll_tags_text_is_split_at_ascii_spaces_only():
    """Jekyll splits a `tags` string with Ruby's String#split, at ASCII whitespace: a
    no-break space is part of a tag ("10\u00a0km"), as the site keeps it."""
    parsed = parse('---\ntitle: T\ntags: "10\u00a0km  python\\tweb"\n---\nb')

    assert parsed.tags == ["10\u00a0km", "python", "web"]


def test_parse__jekylls_singular_tag_and_category_are_kept_whole():
    """Jekyll keeps a singular key's text whole (Utils.value_from_singular_key) and
    splits only the plural's: `category: Release Notes` was split into two tags, and
    `tag:` was ignored (a review's finding)."""
    parsed = parse(
        "---\ntitle: T\ntags: python web\ntag: Machine Learning\ncategories: a b\n"
        "category: Release Notes\n---\nb"
    )

    assert parsed.tags == ["python", "web", "Machine Learning", "a", "b", "Release Notes"]
    assert parsed.ignored_keys == set()
    listed = parse("---\ntitle: T\ncategory: [Release Notes, News]\n---\nb")
    assert listed.tags == ["Release Notes", "News"]


@pytest.mark.parametrize(
    "author",
    [
        "author:",  # an empty line, as a theme's template leaves it
        'author: ""',
        "author: []",
        "author:\n  name:",  # Jekyll's mapping, naming no one
    ],
)
def test_parse__an_author_naming_no_one_gives_way_to_hugos_authors(author):
    """`meta.get("author", meta.get("authors"))` took an empty `author:` (None) and
    dropped Hugo's list (a review's finding); it falls through, as `description:` does."""
    parsed = parse(f"---\ntitle: T\n{author}\nauthors: [Ann Writer, Bob]\n---\nb")

    assert parsed.byline == "Ann Writer, Bob"


def test_parse__reader_keys_of_jekyll_and_hugo():
    jekyll = parse(
        "---\ntitle: T\nauthor:\n  name: Ann Writer\ndescription: Short.\nlang: en_US\n"
        "tags: python web\ncategories: [Notes, 2024]\n---\nb"
    )
    hugo = parse(
        "---\ntitle: T\nauthors: [Ann, Bob]\nsummary: From Hugo.\nlanguage: fr\n"
        'tags: "a, b"\n---\nb'
    )

    assert (jekyll.byline, jekyll.description, jekyll.language) == ("Ann Writer", "Short.", "en_US")
    assert jekyll.tags == ["python", "web", "Notes", "2024"]
    assert jekyll.ignored_keys == set()
    assert (hugo.byline, hugo.description, hugo.language, hugo.tags) == (
        "Ann, Bob",
        "From Hugo.",
        "fr",
        ["a", "b"],
    )


def test_render_then_parse__the_reader_fields_come_back():
    when = datetime(2024, 5, 1, 9, 30, tzinfo=UTC)
    fields = {
        "byline": "王小明",
        "description": "Yes: no.",
        "language": "zh-Hans",
        "tags": ["yes", "1"],
    }

    parsed = parse(render(title="T", slug="s", publish_at=when, body="b", **fields))

    assert {name: getattr(parsed, name) for name in fields} == fields


def test_read_file__the_file_names_date_when_the_front_matter_gives_none(tmp_path):
    from publishing.services.importing import read_file

    (tmp_path / "2024-05-01-hello.md").write_text("---\ntitle: T\n---\nb", encoding="utf-8")
    (tmp_path / "2024-05-01-dated.md").write_text(
        "---\ntitle: T\ndate: 2020-01-02\n---\nb", encoding="utf-8"
    )

    assert read_file(tmp_path / "2024-05-01-hello.md").publish_at == datetime(
        2024, 5, 1, tzinfo=UTC
    )
    assert read_file(tmp_path / "2024-05-01-dated.md").publish_at == datetime(
        2020, 1, 2, tzinfo=UTC
    )


def test_aliases_and_redirect_from_are_read_as_slugs_of_one_folder():
    parsed = parse(
        "---\ntitle: Moved\naliases: [/old-name/, old-two, /2019/05/deep/, "
        "'https://example.com/%E6%97%A7.html', /three/index.html]\n"
        "redirect_from: /jekyll-old/\n---\nText.\n"
    )

    assert parsed.aliases == ["old-name", "old-two", "旧", "three", "jekyll-old"]
    assert parsed.not_aliases == ["/2019/05/deep/"]
    assert "aliases" not in parsed.ignored_keys and "redirect_from" not in parsed.ignored_keys


def test_an_alias_that_is_no_address_is_named_not_a_crash():
    """`urlsplit` raises on `http://[::1` (a review's finding: the import of every file
    stopped with a traceback); it is one of the aliases the import names as not kept."""
    parsed = parse("---\ntitle: T\naliases: ['http://[::1', '//[x]/', /kept/]\n---\nb")

    assert parsed.aliases == ["kept"]
    assert parsed.not_aliases == ["http://[::1", "//[x]/"]


def test_numbers_like_times_stay_text_as_hugo_reads_them():
    """YAML 1.1 reads `12:30` as the base-60 number 750 (a review's finding: a title and
    a tag changed so); Hugo and YAML 1.2 read text. Other numbers are still numbers."""
    parsed = parse("---\ntitle: 12:30\ntags: [1:30:00, 010, 2024]\n---\nb")

    assert parsed.title == "12:30"
    assert parsed.tags == ["1:30:00", "8", "2024"]


def test_hugos_published_as_quoted_text_is_a_date():
    """Hugo reads `published: "2030-05-01T10:00:00Z"` as its publish date, quoted or
    not (a review's finding: refused as "not true or false")."""
    parsed = parse('---\ntitle: T\ndate: 2024-01-01\npublished: "2030-05-01T10:00:00Z"\n---\nb')

    assert not isinstance(parsed, Draft)
    assert parsed.publish_at == datetime(2030, 5, 1, 10, tzinfo=UTC)


def test_an_expiry_date_still_to_come_is_said_not_kept():
    """Hugo stops building a page after its expiryDate; this blog takes nothing down by
    a date, and says so rather than drop the key without a word (a review's finding)."""
    parsed = parse("---\ntitle: T\ndate: 2024-01-01\nexpiryDate: 2999-01-01\n---\nb")

    assert any("expiryDate 2999-01-01" in note and "not kept" in note for note in parsed.notes)


def test_render_writes_aliases_as_hugo_does_and_parse_reads_them_back():
    text = render(title="T", slug="now", publish_at=None, body="B.", aliases=["before", "旧"])

    assert "aliases:\n- /before/\n- /旧/\n" in text
    assert parse(text).aliases == ["before", "旧"]


@pytest.mark.parametrize(
    "front",
    [
        "draft: true",
        "draft: 1",
        "draft: 'yes'",
        "published: false",
        "published: no",
        "expiryDate: 2020-01-01",
        "ExpiryDate: 2020-01-01",  # Hugo reads keys in any case
        "unpublishdate: 2020-01-01",  # Hugo's other name for it
        "Draft: true",  # every key in any case, as Hugo reads them (a review's finding)
        "DRAFT: yes",
        "Published: false",
    ],
)
def test_what_the_blog_itself_keeps_unpublished_is_a_draft(front):
    assert isinstance(parse(f"---\ntitle: Kept\n{front}\n---\nSecret.\n"), Draft)


@pytest.mark.parametrize(
    "front",
    [
        "draft: false",
        "draft:",
        "published: true",
        "published: 2023-05-01",  # Hugo's other name for publishDate: a date
        "expiryDate: 2999-01-01",
        "",
    ],
)
def test_what_the_blog_publishes_is_an_article(front):
    assert not isinstance(parse(f"---\ntitle: Out\n{front}\n---\nText.\n"), Draft)


def test_a_yes_or_no_key_that_is_neither_is_refused():
    with pytest.raises(BadFile, match="draft: 'maybe' is not true or false"):
        parse("---\ntitle: Unsure\ndraft: maybe\n---\nText.\n")


def test_a_file_under_jekylls_drafts_folder_is_a_draft(tmp_path):
    from publishing.services.importing import read_file

    path = tmp_path / "_drafts" / "unfinished.md"
    path.parent.mkdir()
    path.write_text("---\ntitle: Unfinished\n---\nNot yet.\n", encoding="utf-8")

    assert isinstance(read_file(path), Draft)


@pytest.mark.parametrize(
    ("where", "draft"),
    [
        ("_drafts/2024/post.md", True),  # Jekyll reads _drafts/ recursively
        ("_drafts/site/_drafts/post.md", True),
        ("_posts/_drafts/post.md", True),
        ("_drafts/site/_posts/post.md", False),  # a blog kept in ~/_drafts/site/
        ("_drafts/site/_posts/2024/post.md", False),
        ("site/_posts/post.md", False),
        ("site/post.md", False),
    ],
)
def test_the_innermost_of_drafts_and_posts_on_the_files_path_decides(tmp_path, where, draft):
    """Of the folders named `_drafts` and `_posts` on a file's path, the innermost says
    whether it is a draft, wherever the import was told to start: `import_articles
    site/_drafts/2024` made drafts live when only the folder named and below counted (a
    review's finding), and `~/_drafts/site/_posts` made posts drafts when any `_drafts`
    above did."""
    from publishing.services.importing import read_file

    path = tmp_path / where
    path.parent.mkdir(parents=True)
    path.write_text("---\ntitle: Post\n---\nText.\n", encoding="utf-8")
    assert isinstance(read_file(path), Draft) is draft


@pytest.mark.parametrize(
    ("value", "noted"),
    [
        ("2020-05-01 10:00:00 MSK", True),  # not among the names the import knows
        ("2020-05-01 10:00:00 XYZ", True),
        ("2020-05-01 10:00:00 CEST", False),
        ("2020-05-01 10:00:00 PST", False),  # Ruby's ZoneOffset has it
        ("2020-05-01 10:00:00 +0200", False),
        ("2020-05-01 10:00:00", False),  # no zone: UTC, as documented
        ("May 1, 2020", False),
    ],
)
def test_a_zone_known_by_no_name_is_read_as_utc_and_said(value, noted):
    from publishing.markdown_files import parse

    parsed = parse(f"---\ntitle: T\ndate: {value}\n---\n\nText.\n")

    assert parsed.publish_at.tzinfo is not None
    assert bool(parsed.notes) is noted, parsed.notes
    if noted:
        assert parsed.publish_at.hour == 10  # as UTC
        assert "read as UTC" in parsed.notes[0] and value in parsed.notes[0]


@pytest.mark.parametrize(
    ("value", "utc", "noted"),
    [
        ("2020-05-01 10:00 pst", "2020-05-01T18:00:00+00:00", ""),  # Ruby reads any case
        ("2020-05-01 10:00 Cest", "2020-05-01T08:00:00+00:00", ""),
        ("2020-05-01 10:00 +0300 MSK", "2020-05-01T07:00:00+00:00", ""),  # date +%z %Z
        ("2020-05-01 10:00:00 +0300 (MSK)", "2020-05-01T07:00:00+00:00", ""),
        ("2020-05-01 10:00 Moscow", "2020-05-01T10:00:00+00:00", "'Moscow' left out"),
        ("2020-05-01 10:00 foo +0200", "2020-05-01T08:00:00+00:00", "'foo' left out"),
    ],
)
def test_zones_in_any_case_after_an_offset_and_what_is_left_out(value, utc, noted):
    from publishing.markdown_files import parse_date_noting

    when, note = parse_date_noting(value)

    assert when.isoformat() == utc
    assert (noted in note) if noted else note == ""


@pytest.mark.parametrize("value", ["2020-05-01 10:00 GMT+24", "2020-05-01 10:00 -2400"])
def test_an_offset_of_a_day_or_more_is_a_bad_file_not_a_crash(value):
    from publishing.markdown_files import BadFile, parse_date

    with pytest.raises(BadFile, match="out of range"):
        parse_date(value)


def test_a_date_past_the_calendar_is_quoted_as_written_not_as_a_python_object():
    """YAML reads `0001-01-01 00:00:00 +05:00` as a datetime, a year 0 in UTC (a review's:
    the message showed `datetime.datetime(1, 1, 1, 0…`)."""
    from datetime import datetime, timedelta, timezone

    from publishing.markdown_files import BadFile, parse_date

    written = datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=5)))
    with pytest.raises(BadFile, match=r"^date '0001-01-01 00:00:00\+05:00' is out of range$"):
        parse_date(written)


def test_keys_are_read_in_any_case_as_hugo_reads_them():
    found = parse(
        "---\nTitle: Hugo's way\nDate: 2019-03-04T10:00:00+01:00\nTags: [a, b]\n"
        "Slug: hugos-way\nDescription: One line.\n---\nText.\n"
    )

    assert (found.title, found.slug, found.tags) == ("Hugo's way", "hugos-way", ["a", "b"])
    assert found.publish_at == datetime(2019, 3, 4, 9, tzinfo=UTC)
    assert found.description == "One line."
    assert found.ignored_keys == set()


def test_one_key_twice_in_two_cases_is_refused():
    with pytest.raises(BadFile, match="gives 'date' and 'Date': one key in any case"):
        parse("---\ntitle: T\ndate: 2020-01-01\nDate: 2021-01-01\n---\nText.\n")


@pytest.mark.parametrize("loader", [SafeLoader, PureSafeLoader], ids=["libyaml", "pure"])
@pytest.mark.parametrize(
    ("front", "reason"),
    [
        ("title: T\ndate: 2020-01-01\ndate: 2030-01-01", "gives 'date' twice (line 4)"),
        ("title: T\ntitle: U", "gives 'title' twice (line 3)"),
        ('{"title": "T", "title": "U"}', "gives 'title' twice (line 2)"),  # JSON's way
        ("title: T\nauthor: {name: A, name: B}", "gives 'name' twice (line 3)"),
    ],
)
def test_one_key_twice_in_one_case_is_refused(loader, front, reason):
    # PyYAML took the last one without a word; Hugo refuses it (a review's finding).
    with pytest.raises(BadFile, match=re.escape(reason)):
        parse(f"---\n{front}\n---\nText.\n", loader=loader)


@pytest.mark.parametrize("loader", [SafeLoader, PureSafeLoader], ids=["libyaml", "pure"])
@pytest.mark.parametrize(
    "front",
    [
        "<<: {title: Merged, description: From the merge}\ntitle: Mine",
        "title: Mine\n<<: {title: Merged, description: From the merge}",
        "<<: [{title: A}, {title: B, description: From the merge}]\ntitle: Mine",
        "<<: {title: Merged}\n<<: {description: From the merge}\ntitle: Mine",
    ],
)
def test_a_key_set_over_a_merged_one_is_no_repeat(loader, front):
    """YAML 1.1's merge (`<<:`, no anchor needed): the mapping's own key overrides the
    merged one, as PyYAML reads it. The check of repeated keys counted the pairs
    flatten_mapping merged in and refused it (a review's finding); it looks at the pairs
    as written."""
    parsed = parse(f"---\n{front}\n---\nText.\n", loader=loader)
    assert (parsed.title, parsed.description) == ("Mine", "From the merge")
    with pytest.raises(BadFile, match=re.escape("gives 'title' twice")):
        parse(f"---\n{front}\ntitle: Again\n---\nText.\n", loader=loader)


@pytest.mark.parametrize(
    "front, when, noted",
    [
        # Hugo builds no page before its publishDate: published (and dated) then.
        ("date: 2019-03-04\npublishDate: 2031-01-01T09:00:00Z", datetime(2031, 1, 1, 9), True),
        ("date: 2019-03-04\npubdate: 2031-01-01", datetime(2031, 1, 1), True),
        ("date: 2019-03-04\npublished: 2031-01-01", datetime(2031, 1, 1), True),
        ("publishDate: 2018-06-01T08:00:00Z", datetime(2018, 6, 1, 8), False),  # no date
        # An earlier publishDate: the date, the later (nothing goes live early).
        ("date: 2031-01-01\nPublishDate: 2019-03-04", datetime(2031, 1, 1), False),
    ],
)
def test_hugos_publish_date_when_later_is_the_articles(front, when, noted):
    found = parse(f"---\ntitle: Embargoed\n{front}\n---\nText.\n")

    assert found.publish_at == when.replace(tzinfo=UTC)
    assert any("published then, as Hugo publishes it" in note for note in found.notes) is noted
    assert found.ignored_keys == set()


@pytest.mark.parametrize(
    "text, utc",
    [
        # The offset as written, as Ruby's Time.parse reads it (dateutil alone reads
        # `GMT+2` as POSIX TZ does: UTC-2). JavaScript's Date.toString() writes the third.
        ("2024-05-01 09:30:00 GMT+0200", datetime(2024, 5, 1, 7, 30)),
        ("2024-05-01 09:30 UTC-3", datetime(2024, 5, 1, 12, 30)),
        ("Wed May 01 2024 09:30:00 GMT+0200", datetime(2024, 5, 1, 7, 30)),
        ("2024-05-01 09:30:00 GMT-05:00", datetime(2024, 5, 1, 14, 30)),
        ("2024-05-01 09:30 utc+2", datetime(2024, 5, 1, 7, 30)),
        ("2024-05-01 09:30:00 GMT", datetime(2024, 5, 1, 9, 30)),
    ],
)
def test_a_named_zone_with_an_offset_is_the_offset_as_written(text, utc):
    assert parse_date(text) == utc.replace(tzinfo=UTC)


@pytest.mark.parametrize("when", ["0001-01-01T00:00:00Z", "9999-12-31", "1899-12-31 23:59:59"])
def test_first_published_outside_the_years_of_a_date_is_refused(when):
    # Stored as written, past the validators: publishing the undated draft then failed
    # over a date its writer never set (a review's finding).
    with pytest.raises(BadFile, match=r"first_published .*: The date must be in the years 1900"):
        parse(f"---\ntitle: Old\ndraft: true\nfirst_published: {when}\n---\nx\n")


def test_first_published_keeps_its_seconds_and_drops_their_fractions():
    found = parse("---\ntitle: Old\ndraft: true\nfirst_published: 2020-05-01T10:00:00.75Z\n---\n")

    assert isinstance(found, Draft)
    assert found.parsed.first_published == datetime(2020, 5, 1, 10, tzinfo=UTC)


@pytest.mark.parametrize("loader", [SafeLoader, PureSafeLoader], ids=["libyaml", "pure"])
def test_yes_no_on_and_off_are_text_as_yaml_1_2_reads_them(loader):
    # YAML 1.1 read them as booleans: `lang: no` (Norwegian) and `title: Yes` failed as
    # "must be text, not False" (a review's finding); Hugo reads YAML 1.2.
    found = parse(
        "---\ntitle: Yes\nlang: no\nauthor: On\ntags: [off, NO]\n---\nText.\n", loader=loader
    )

    assert isinstance(found, ParsedFile)
    assert (found.title, found.language, found.byline, found.tags) == (
        "Yes",
        "no",
        "On",
        ["off", "NO"],
    )
    with pytest.raises(BadFile, match="title must be text, not True"):
        parse("---\ntitle: TRUE\n---\n", loader=loader)  # YAML 1.2's own booleans stay


@pytest.mark.parametrize("loader", [SafeLoader, PureSafeLoader], ids=["libyaml", "pure"])
@pytest.mark.parametrize(
    "flag", ["draft: yes", "draft: On", "published: no", "published: OFF", "draft: True"]
)
def test_the_yes_or_no_keys_still_read_yes_no_on_and_off(loader, flag):
    assert isinstance(parse(f"---\ntitle: T\n{flag}\n---\n", loader=loader), Draft)
