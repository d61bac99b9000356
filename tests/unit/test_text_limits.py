"""What a title or body may contain (issue 8): characters XML 1.0 can carry, refused
with a message that says what and where; and Markdown of any shape up to the size limit
(issue 20: the renderer is linear, so the shapes python-markdown was slow on are no
longer refused)."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from blogpublish.rendering import MarkdownTooLargeError, render_markdown
from publishing.models import Article
from publishing.text_limits import validate_markdown_limits

pytestmark = pytest.mark.django_db

MIB = 2**20


def errors(**fields) -> dict[str, str]:
    article = Article(**({"title": "A title", "slug": "a-slug", "body": "Body."} | fields))
    try:
        article.full_clean()
    except ValidationError as exc:
        return {field: " ".join(messages) for field, messages in exc.message_dict.items()}
    return {}


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        # The body: accepted, published, then every refresh failed.
        ({"body": "Hello\x01 world"}, "body", "U+0001 at position 6"),
        ({"body": "NUL\x00"}, "body", "U+0000 at position 4"),
        ({"body": "vertical\x0btab"}, "body", "U+000B at position 9"),
        # Non-characters XML refuses: the feed was written but not well-formed.
        ({"body": "a\ufffe"}, "body", "U+FFFE at position 2"),
        ({"title": "Title \uffff"}, "title", "U+FFFF at position 7"),
        ({"title": "Title \ufffe"}, "title", "U+FFFE at position 7"),
        # A lone surrogate (a JSON "\ud800" escape gives one).
        ({"body": "x\ud800y"}, "body", "U+D800 at position 2"),
    ],
)
def test_characters_xml_cannot_carry_are_refused_naming_them(fields, field, message):
    assert message in errors(**fields).get(field, "")


@pytest.mark.parametrize(
    "body",
    [
        "Tabs\tand\nnewlines\r\nare text.",
        "Emoji 🌏 and CJK 你好, private use \ue000, U+FFFD \ufffd, and 𝄞.",
        "No-break\u00a0space, soft\u00adhyphen, zero\u200bwidth, \ufdcf and \ufdf0.",
    ],
)
def test_what_xml_can_carry_is_accepted(body):
    assert errors(body=body) == {}


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        # XML 1.0 characters a web page may not hold (the Nu checker's "forbidden code
        # point"): Windows-1252 text read as Latin-1 has C1 controls for ’ “ ” … (a
        # review's finding: one such body made the front page invalid).
        ({"body": "It\x92s"}, "body", "U+0092 a control character at position 3"),
        ({"body": "DEL\x7f"}, "body", "U+007F a control character at position 4"),
        ({"body": "a \ufdd0 b"}, "body", "U+FDD0 a noncharacter at position 3"),
        ({"body": "astral \U0001fffe"}, "body", "U+1FFFE a noncharacter at position 8"),
        ({"title": "Hello \ufdd0 world"}, "title", "U+FDD0 a noncharacter at position 7"),
        ({"description": "One \U0010ffff"}, "description", "U+10FFFF a noncharacter at position 5"),
        ({"byline": "B\ufdd0b"}, "byline", "U+FDD0 a noncharacter at position 2"),
        ({"tags": ["t\ufdd0g"]}, "tags", "U+FDD0 a noncharacter at position 2"),
    ],
)
def test_what_a_web_page_may_not_hold_is_refused_naming_it(fields, field, message):
    found = errors(**fields).get(field, "")
    assert message in found, found
    assert "a web page may not hold" in found


# Shapes python-markdown read in quadratic time, which the old denylist refused (issue 8)
# or missed (issue 20's review): now accepted or refused by their size alone. That they
# render in linear time is tests/unit/test_render_growth.py's job, and how long the
# worst takes at 1 MiB is bench/run.py render's (docs/performance.md).
def nested_lists(levels: int) -> str:
    return "".join("    " * depth + "* item\n" for depth in range(levels))


SHAPES = [
    pytest.param("[" * 16384, id="[ x 16384"),
    pytest.param("[a](" * 8192, id="[a]( x 8192"),
    pytest.param("*_" * 131072, id="*_ x 131072"),
    pytest.param("> " * (MIB // 2), id="1 MiB of > with spaces"),
    pytest.param(nested_lists(700), id="lists nested 700 deep"),
    pytest.param("`a` " * (MIB // 4), id="1 MiB of code spans in one paragraph"),
    pytest.param("~~~a\n" * (MIB // 5), id="1 MiB of unclosed fences"),
    pytest.param("`a`\n\n" * (MIB // 5), id="1 MiB of short code-span paragraphs"),
    pytest.param('<div markdown="1">\n' * 2000 + "a\n" + "</div>\n" * 2000, id="div nested 2000"),
]


@pytest.mark.parametrize("body", SHAPES)
def test_markdown_is_accepted_whatever_its_shape_up_to_the_size_limit(body):
    assert errors(body=body) == {}


@pytest.mark.parametrize("body", ["a" * (MIB + 1), "> " * (MIB // 2 + 1), "你" * (MIB // 3 + 1)])
def test_markdown_over_the_size_limit_is_refused_by_its_size(body):
    assert "the limit is 1,048,576 bytes" in errors(body=body).get("body", "")
    with pytest.raises(MarkdownTooLargeError, match="Not rendered"):
        render_markdown(body)


def test_the_name_migration_0009_imports_is_kept_and_accepts_everything():
    assert validate_markdown_limits("[" * 16384) is None


def _xml_char(code: int) -> bool:
    """XML 1.0 (Fifth Edition) §2.2's Char production, as written there."""
    return code in (0x9, 0xA, 0xD) or any(
        low <= code <= high for low, high in ((0x20, 0xD7FF), (0xE000, 0xFFFD), (0x10000, 0x10FFFF))
    )


def _html_parse_error(code: int) -> bool:
    """The HTML standard's control and noncharacter input stream errors beyond XML's:
    DEL and the C1 controls, U+FDD0-U+FDEF and every plane's last two code points."""
    return 0x7F <= code <= 0x9F or 0xFDD0 <= code <= 0xFDEF or code & 0xFFFE == 0xFFFE


def test_the_character_patterns_match_their_definitions_at_every_code_point():
    """The patterns are written as negated classes of what is allowed, for speed
    (text_limits); each must still match exactly the code points its definition names."""
    from publishing.text_limits import HTML_ILLEGAL_RE, PAGE_ILLEGAL_RE, XML_ILLEGAL_RE

    expected: dict[str, list[int]] = {"xml": [], "html": [], "page": []}
    found: dict[str, list[int]] = {"xml": [], "html": [], "page": []}
    patterns = {"xml": XML_ILLEGAL_RE, "html": HTML_ILLEGAL_RE, "page": PAGE_ILLEGAL_RE}
    for code in range(0x110000):
        xml_bad, html_bad = not _xml_char(code), _html_parse_error(code)
        for name, bad in (("xml", xml_bad), ("html", html_bad), ("page", xml_bad or html_bad)):
            if bad:
                expected[name].append(code)
            if patterns[name].fullmatch(chr(code)):
                found[name].append(code)
    assert found == expected
    assert len(expected["html"]) == 33 + 32 + 34  # DEL and C1, U+FDD0-U+FDEF, 17 planes' two
