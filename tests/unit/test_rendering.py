"""Markdown to safe HTML, and the plain excerpts of listings and the feed."""

from __future__ import annotations

import os
import re

import pytest

from blogpublish.nesting import MAX_DEPTH
from blogpublish.rendering import (
    MarkdownTooLargeError,
    plain_excerpt,
    render_markdown,
    render_markdown_and_excerpt,
    to_html,
)
from publishing.validators import BODY_MAX_BYTES


@pytest.mark.parametrize(
    ("markdown", "forbidden"),
    [
        # A script, inline or as a block, with its content.
        ("Hi <script>alert(1)</script>", ["<script", "alert"]),
        ("<script>\nalert(1)\n</script>", ["<script", "alert"]),
        # Event handlers on any tag.
        ('<img src="x.png" onerror="alert(1)">', ["onerror", "alert"]),
        ('<a href="/" onclick="alert(1)">x</a>', ["onclick", "alert"]),
        # javascript: URLs, as Markdown, raw HTML, or disguised.
        ("[x](javascript:alert(1))", ["javascript", "alert"]),
        ('<a href="JaVaScRiPt:alert(1)">x</a>', ["javascript", "alert"]),
        ("![x](javascript:alert(1))", ["javascript", "alert"]),
        # Frames, styles that can load things, forms.
        ('<iframe src="https://evil.example"></iframe>', ["<iframe"]),
        ("<style>body{background:url(x)}</style>", ["<style", "background"]),
        # Forms go; an <input> is only ever a disabled checkbox (a task list's box),
        # which can be neither typed into nor sent.
        (
            '<form action="/x"><input name="a" value="v" type="text"></form>',
            ["<form", "name=", "text"],
        ),
    ],
)
def test_render_markdown__removes_what_can_run(markdown, forbidden):
    html = render_markdown(markdown).lower()
    for text in forbidden:
        assert text not in html


def test_render_markdown__tables_fenced_code_and_footnotes():
    html = render_markdown(
        "| a | b |\n|---|--:|\n| 1 | 2 |\n\n```python\nx = 1 < 2\n```\n\nClaim.[^n]\n\n[^n]: Note."
    )
    assert "<table>" in html and '<td style="text-align:right">2</td>' in html
    assert '<pre><code class="language-python">x = 1 &lt; 2\n</code></pre>' in html
    # The reference and the note link to each other by id.
    assert '<sup class="footnote-ref"><a href="#fn-n" id="fnref-n"' in html
    assert '<section class="footnotes">' in html and '<li id="fn-n">' in html
    assert '<a href="#fnref-n" class="footnote-backref"' in html and "Note." in html


def test_render_markdown__github_extensions():
    html = render_markdown("- [x] done\n- [ ] to do\n\n~~gone~~ www.example.com")
    # nh3 writes the attributes it sets in no fixed order.
    done, to_do = re.findall(r"<li><input ([^>]*)> (?:done|to do)</li>", html)
    assert sorted(done.split()) == [
        'aria-label="task"',
        'checked=""',
        'disabled=""',
        'type="checkbox"',
    ]
    assert sorted(to_do.split()) == ['aria-label="task"', 'disabled=""', 'type="checkbox"']
    assert "<del>gone</del>" in html
    assert '<a href="http://www.example.com" rel="noopener noreferrer">www.example.com</a>' in html


def test_render_markdown__html_nested_past_the_limit_is_flattened_keeping_its_text():
    deep = "<div>" * (MAX_DEPTH + 10) + "inside" + "</div>" * (MAX_DEPTH + 10)
    html = render_markdown(deep)
    assert html.count("<div>") == MAX_DEPTH and html.count("</div>") == MAX_DEPTH
    assert "inside" in html
    quotes = render_markdown("> " * 1000 + "deep")
    assert quotes.count("<blockquote>") == MAX_DEPTH and "deep" in quotes


def test_render_markdown__over_the_size_limit_is_refused():
    with pytest.raises(MarkdownTooLargeError, match="at most 1,048,576"):
        render_markdown("a" * (BODY_MAX_BYTES + 1))


def test_render_markdown__frees_what_cmark_allocates():
    """cmarkgfm's own wrappers leak the document and the HTML (about 1 MB per render of
    an 18 KB text); rendering.to_html frees both. 60 renders of 100 kB would leak
    hundreds of MB."""
    text = "# Title\n\nSome *text* with [a link](https://example.com) and `code`.\n\n" * 1500
    to_html(text)  # the first allocations of the process: not counted
    before = resident_bytes()
    for _ in range(60):
        to_html(text)
    assert resident_bytes() - before < 30 * 2**20


def resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_render_markdown__keeps_safe_links_and_unicode():
    html = render_markdown("你好 [世界](https://example.com/世界) 🌏")
    # CommonMark writes a link's address percent-encoded: the same address.
    href = "https://example.com/%E4%B8%96%E7%95%8C"
    assert f'<a href="{href}" rel="noopener noreferrer">世界</a>' in html
    assert "你好" in html and "🌏" in html


def test_plain_excerpt__prose_only_cut_at_a_word():
    text = (
        "# Title\n\n```\ncode()\n```\n\nSome **bold** & <script>x()</script> text.[^1] "
        + "word " * 100
        + "\n\n[^1]: A note."
    )
    excerpt = plain_excerpt(text, limit=60)
    assert excerpt.startswith("Some bold & text. word")
    assert excerpt.endswith("word…") and len(excerpt) <= 61
    assert "<" not in excerpt and "x()" not in excerpt


def test_plain_excerpt__short_text_is_whole():
    assert plain_excerpt("Just *this*.") == "Just this."


@pytest.mark.parametrize(
    "text",
    [
        "# Title\n\nSome *Markdown* text. " * 40,
        "> quoted\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```\ncode\n```\n\n"
        "Prose[^1].\n\n[^1]: a note",
        "<script>x</script>" + "[" * 500,
        "",
    ],
)
def test_render_markdown_and_excerpt__the_same_as_each_alone(text):
    assert render_markdown_and_excerpt(text) == (render_markdown(text), plain_excerpt(text))
