"""Markdown to safe HTML, and the plain excerpts of listings and the feed."""

from __future__ import annotations

import pytest

from blogpublish.rendering import plain_excerpt, render_markdown


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
        ('<form action="/x"><input name="a"></form>', ["<form", "<input"]),
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
    assert '<sup id="fnref:n"><a class="footnote-ref" href="#fn:n"' in html
    assert '<li id="fn:n">' in html and "Note." in html


def test_render_markdown__keeps_safe_links_and_unicode():
    html = render_markdown("你好 [世界](https://example.com/世界) 🌏")
    assert '<a href="https://example.com/世界" rel="noopener noreferrer">世界</a>' in html
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
