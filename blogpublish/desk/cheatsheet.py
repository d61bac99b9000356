"""The Markdown cheat sheet next to the editor, as data: tests/unit/test_desk_cheatsheet.py
renders every example with the site's renderer and checks it gives what the sheet says,
so the sheet stays true to blogpublish.rendering."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Example:
    what: str
    markdown: str
    # A fragment the rendered HTML contains (kept), or must not contain (removed).
    fragment: str


SUPPORTED = [
    Example("Heading", "## A heading", "<h2>"),
    Example("Emphasis", "*italic*, **bold**", "<strong>bold</strong>"),
    Example("Link", "[text](https://example.com)", '<a href="https://example.com"'),
    Example("Image (use Add image)", "![alt text](/media/….png)", "<img"),
    Example("List", "- one\n- two", "<li>one</li>"),
    Example("Numbered list", "1. first\n2. second", "<ol>"),
    Example("Quote", "> quoted", "<blockquote>"),
    Example("Inline code", "`code`", "<code>code</code>"),
    Example("Fenced code", "```python\nprint(1)\n```", '<code class="language-python">'),
    Example("Table", "| a | b |\n|---|---|\n| 1 | 2 |", "<table>"),
    Example("Footnote", "Text.[^1]\n\n[^1]: The note.", 'class="footnotes"'),
    Example("Strikethrough", "~~gone~~", "<del>gone</del>"),
    Example("Task list", "- [x] done\n- [ ] to do", 'checked=""'),
    Example("Link from an address", "https://example.com", '<a href="https://example.com"'),
    Example("Abbreviation (HTML)", '<abbr title="HyperText Markup Language">HTML</abbr>', "<abbr"),
    Example("Rule", "---", "<hr>"),
]

REMOVED = [
    Example("Scripts, with their content", "<script>alert(1)</script>", "<script"),
    Example("Styles, with their content", "<style>p{}</style>", "<style"),
    Example("Event handlers (onclick=…)", '<a href="/" onclick="x()">a</a>', "onclick"),
    Example("javascript: and data: links", "[a](javascript:alert(1))", "javascript:"),
    Example("Frames, objects, forms", '<iframe src="https://example.com"></iframe>', "<iframe"),
    Example("Form fields (any <input> is a disabled checkbox)", '<input name="q">', "name="),
    Example("style attributes (but text-align in tables)", '<p style="color:red">a</p>', "style="),
]
