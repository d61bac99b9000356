"""What a title or body may contain (issue 8): characters XML 1.0 can carry, and
Markdown the renderer reads in bounded time. Each attack from the issue is refused,
quickly and with a message that says what and where."""

from __future__ import annotations

import time

import pytest
from django.core.exceptions import ValidationError

from blogpublish.rendering import MarkdownTooComplexError, render_markdown
from publishing.models import Article
from publishing.text_limits import (
    MAX_BRACKET_WORK,
    MAX_EMPHASIS_RUN,
    MAX_NESTING,
    bracket_work,
    markdown_complexity_problems,
)

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
        "C1 and DEL are XML 1.0 characters: \x7f \x85 \x9f",
    ],
)
def test_what_xml_can_carry_is_accepted(body):
    assert errors(body=body) == {}


# The measurements (before): 26 s, 24 s, 9.7 s and 322 MiB, 60 s and 702 MiB
# then RecursionError. Now each is refused before rendering.
def nested_lists(levels: int) -> str:
    return "".join("    " * depth + "* item\n" for depth in range(levels))


ATTACKS = [
    pytest.param("[" * 16384, "square brackets", id="[ x 16384"),
    pytest.param("[" * 8000, "link parser", id="[ x 8000"),
    pytest.param("[a](" * 8192, "link parser", id="[a]( x 8192"),
    pytest.param("*_" * 131072, "run of 262144", id="*_ x 131072"),
    pytest.param(">" * MIB, "levels deep", id="1 MiB of >"),
    pytest.param("> " * (MIB // 2), "levels deep", id="1 MiB of > with spaces"),
    pytest.param(nested_lists(700), "levels deep", id="lists nested 700 deep"),
    pytest.param("* " * 20 + "x", "levels deep", id="* x 20 on a line"),
    # Measured before: minutes (each piece of markup rewrites the whole paragraph).
    pytest.param("`a` " * (MIB // 4), "too dense", id="1 MiB of code spans in one paragraph"),
    pytest.param("**a** " * (MIB // 6), "too dense", id="1 MiB of bold in one paragraph"),
]


@pytest.mark.parametrize(("body", "message"), ATTACKS)
def test_pathological_markdown_is_refused_at_validation_in_milliseconds(body, message):
    started = time.perf_counter()
    problems = markdown_complexity_problems(body)
    elapsed = time.perf_counter() - started

    assert message in " ".join(problems)
    assert elapsed < 0.5  # measured: 1-150 ms on the 1 MiB inputs
    if len(body.encode()) <= MIB:
        assert message in errors(body=body).get("body", "")


@pytest.mark.parametrize(("body", "message"), ATTACKS)
def test_renderer_refuses_it_too_for_rows_that_got_past_validation(body, message):
    with pytest.raises(MarkdownTooComplexError, match="Not rendered"):
        render_markdown(body)


@pytest.mark.parametrize(
    "body",
    [
        # Just inside each limit: renders, and quickly (measured in docs/site.md).
        "> " * MAX_NESTING + "deep quote",
        nested_lists(MAX_NESTING),
        "*_" * (MAX_EMPHASIS_RUN // 2) + " word",
        "[" * 900,  # unclosed: about 400,000 characters read
        "`a` " * 10_000,  # one paragraph of 40,000 characters, 20,000 marks: 0.8e9
        # Real articles: horizontal rules, links, footnotes, code with brackets.
        "Above\n\n" + "_" * 200 + "\n\n" + "* " * 40 + "\n\nBelow",
        "[a](https://en.wikipedia.org/wiki/Foo_(bar)) and ![img](x.png) [^1]\n\n[^1]: Note.",
        "```python\nx = [[1, 2], [3, [4, 5]]]\nprint(f(g(h(x))))\n```",
        "1. one\n    1. two\n        1. three\n\n> quote\n> > nested quote\n> > > and again",
    ],
)
def test_real_and_near_limit_markdown_is_accepted_and_renders_fast(body):
    assert markdown_complexity_problems(body) == []
    started = time.perf_counter()
    render_markdown(body)
    assert time.perf_counter() - started < 2


def test_bracket_work_counts_what_the_link_parser_reads():
    assert bracket_work("[text](url) plain") == len("[text") + len("](url)")
    assert bracket_work("[unclosed then text") == len("[unclosed then text")
    # A paragraph ends at a blank line: an unclosed "[" costs its own paragraph only.
    assert bracket_work("[a\n\n" + "b" * 1000) == 2
    assert bracket_work("[" * 2000) > MAX_BRACKET_WORK
