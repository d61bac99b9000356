"""Markdown to safe HTML, and the plain excerpts of listings and the feed."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from blogpublish.nesting import MAX_DEPTH
from blogpublish.rendering import (
    MarkdownTooLargeError,
    excerpt_source,
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
    checked = '<input type="checkbox" checked="" disabled="" aria-label="task">'
    assert f"<li>{checked} done</li>" in html
    assert '<li><input type="checkbox" disabled="" aria-label="task"> to do</li>' in html
    assert "<del>gone</del>" in html
    assert '<a href="http://www.example.com" rel="noopener noreferrer">www.example.com</a>' in html


@pytest.mark.parametrize("tag", ["<script>", "<style>", "<SCRIPT type=module>", "<style\n"])
@pytest.mark.parametrize(
    "later",
    [
        "",
        # What is no end tag of it (a review's): another name, one in a comment, in an
        # attribute's value, in a code span.
        "\n\nFiles in </scripts> and </style-guide>.",
        "\n\n<!-- </script> </style> -->",
        '\n\n<a title="</script></style>">x</a>',
        "\n\n`</script></style>`",
    ],
)
def test_render_markdown__a_tag_that_runs_never_closed_is_text_and_the_rest_stays(tag, later):
    """nh3 drops <script> and <style> with their content: one never closed took the rest
    of the article with it (a review's: the page kept its first words)."""
    html = render_markdown(f"The {tag} tag, written in prose.{later}\n\nThe next *paragraph*.")

    assert "The next <em>paragraph</em>." in html
    assert "&lt;" + tag[1:].split()[0].rstrip(">") in html
    assert "<script" not in html.lower() and "<style" not in html.lower()


def test_render_markdown__a_tag_in_an_unclosed_tags_attribute_stays_text():
    html = render_markdown('The <script title="<b>bold</b>"> tag.\n\nNext.')

    assert "<b>" not in html and "<p>Next.</p>" in html


def test_render_markdown__a_closed_script_still_goes_with_its_content():
    html = render_markdown("Before <script>alert(1)</script> after.\n\nMore.")

    assert html == "<p>Before  after.</p>\n<p>More.</p>\n"


def test_render_markdown__an_input_keeps_its_title_and_is_checked_only_if_checked():
    html = render_markdown('<input title="not checked yet" lang="fr"> <input checked>')

    assert '<input type="checkbox" disabled="" aria-label="task" lang="fr" ' in html
    assert 'title="not checked yet">' in html
    assert '<input type="checkbox" checked="" disabled="" aria-label="task">' in html


def test_render_markdown__the_same_in_every_process():
    """nh3 writes the attributes it sets (an <input>'s) in an order that changes from one
    process to the next: pages rendered by two workers, or by a worker and the full
    check, differed byte for byte (a review's: four orders in six processes)."""
    body = "'- [ ] one\\n- [x] two\\n\\n<input name=a value=b>'"
    code = (
        "from blogpublish.rendering import render_markdown, render_markdown_absolute; "
        f"print(render_markdown({body})); "  # the page's, and the feeds' (a review's)
        f"print(render_markdown_absolute({body}, base_url='https://e.com/a/'))"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"}
    runs = [
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
        ).stdout
        for _ in range(8)
    ]
    assert len(set(runs)) == 1, runs
    assert runs[0].count('<input type="checkbox"') == 6


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


@pytest.mark.parametrize(
    ("tail", "kept"),
    [
        ("🇫🇷 France", ""),  # a flag's two letters: neither kept alone
        ("🇫🇷🇩🇪", "🇫🇷"),  # two flags: the whole first one
        ("e\u0301té", ""),  # an accent stays on its letter
        ("👨\u200d👩\u200d👧 family", ""),  # an emoji sequence, joined
        ("👍🏽 yes", ""),  # a skin tone
        ("☕\ufe0f cup", ""),  # a variation selector
        ("\u1100\u1161\u11a8 hangul", ""),  # a syllable written as its three jamo
        ("क्षि text", ""),  # a conjunct with its vowel sign
    ],
)
def test_plain_excerpt__never_cuts_inside_a_character_a_reader_sees(tail, kept):
    """Text without a space to cut at is cut at the limit, but never inside a character
    a reader sees (a grapheme cluster): "🇫🇷" was cut to a lone "🇫", an accent dropped
    from its letter (a review's finding)."""
    head = "x" * (60 - len(kept) - 1) if kept else "x" * 59
    excerpt = plain_excerpt(head + tail, limit=60)

    assert excerpt == head + kept + "…"


def test_plain_excerpt__keeps_no_break_spaces_and_cuts_at_a_space_that_breaks():
    """An excerpt is one line, but "Bonjour&nbsp;!" keeps its no-break space (the
    excerpt is a description and a feed's summary) and is never cut there."""
    assert (
        plain_excerpt("Bonjour&nbsp;! Il fait 10\u202fkm.") == "Bonjour\u00a0! Il fait 10\u202fkm."
    )
    excerpt = plain_excerpt("Un mot " + "de\u00a0plus " * 20, limit=40)
    assert excerpt.endswith("de\u00a0plus…"), excerpt


def test_plain_excerpt__a_cut_at_a_space_never_splits_a_character_either():
    """U+0600 (a prepended mark, UAX #29 GB9b) is one character a reader sees with what
    follows it, a "." or a space: the cut at the space and the trimmed "." left it to
    join the "…" (a review's finding)."""
    import regex

    excerpt = plain_excerpt("w" * 230 + " y\u0600. " + "z" * 100)

    assert regex.findall(r"\X", excerpt)[-2:] == ["y", "…"]


def test_plain_excerpt__text_whose_characters_all_end_in_a_space_is_cut_at_the_limit():
    """Each "\u0600 " is one character a reader sees, ending in a space: backing off to
    the start of each left nothing but the "…" (a review's finding)."""
    excerpt = plain_excerpt("\u0600 " * 2000, limit=60)

    assert len(excerpt) == 61 and excerpt.endswith(" …")


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


HEAD = 2000
# Past the head: prose enough that every definition below is cut off from it.
FILLER = ("Filler words, one sentence after another. " * 20 + "\n\n") * 6


def excerpt_of(body: str) -> str:
    return plain_excerpt(excerpt_source(body, HEAD))


@pytest.mark.parametrize(
    ("start", "end", "shown"),
    [
        # A footnote and a reference link, defined at the end: the marker goes, the
        # link shows its text (as the page's own excerpt, of the whole body).
        (
            "Edge cases.[^1] Read [the guide][g].",
            '[g]: https://example.com/guide "The guide"\n\n[^1]: A note.',
            "Edge cases. Read the guide.",
        ),
        # Labels match ignoring case and runs of spaces; collapsed and shortcut forms.
        (
            "See [The  Guide][] and [Other].",
            "[the guide]: /g\n[other]: /o",
            "See The Guide and Other.",
        ),
        # Defined nowhere: as the page shows it.
        (
            "Edge cases.[^9] Read [the guide][nope].",
            "[g]: /g",
            "Edge cases.[^9] Read [the guide][nope].",
        ),
        # An indented head (a code block) and a head that ends in an open fence: the
        # definitions still resolve.
        ("    code()\n\nEdge cases.[^1]", "[^1]: A note.", "Edge cases."),
    ],
)
def test_excerpt_source__definitions_past_the_head_resolve(start, end, shown):
    body = f"{start}\n\n{FILLER}\n\n{end}\n"
    assert len(body) > HEAD and end.splitlines()[0] not in body[:HEAD]

    excerpt = excerpt_of(body)

    assert excerpt.startswith(shown + " Filler"), excerpt
    assert excerpt == render_markdown_and_excerpt(body)[1]  # the page's description


def test_excerpt_source__a_head_ending_in_an_open_fence():
    body = "Edge cases.[^1] Read [the guide][g].\n\n```\n" + "code\n" * 1000 + "```\n\n"
    body += "[g]: /g\n\n[^1]: A note.\n"

    assert excerpt_of(body) == "Edge cases. Read the guide."


@pytest.mark.parametrize(
    ("opening", "closing"), [("```", "```"), ("~~~~", "~~~~"), ("```python", "```")]
)
def test_excerpt_source__a_definition_inside_a_code_block_is_code(opening, closing):
    """A post that shows reference syntax in a code block past the head: the page's
    own excerpt keeps the head's brackets as written, and so must the front page's (a
    review: the stub made "[x]" a link and dropped "[^n]")."""
    body = f"Intro text with [x] and [^n] in it.\n\n{FILLER}\n\n"
    body += f"{opening}\n[x]: http://e.example\n[^n]: note\n{closing}\n"

    excerpt = excerpt_of(body)

    assert excerpt.startswith("Intro text with [x] and [^n] in it."), excerpt
    assert excerpt == render_markdown_and_excerpt(body)[1]


def test_excerpt_source__without_labels_or_past_nothing_is_the_head():
    plain = "Prose [inline](/x) only. " * 200
    assert excerpt_source(plain, HEAD) == plain[:HEAD]
    short = "Edge cases.[^1]\n\n[^1]: A note."
    assert excerpt_source(short, HEAD) == short


@pytest.mark.parametrize(
    "body",
    [
        # As many labels as a head holds, each defined (a stub each, no more).
        "".join(f"[^{n}] " for n in range(400))
        + "\n\n"
        + "x" * 1_000_000
        + "\n\n"
        + "".join(f"[^{n}]: {'note ' * 500}\n\n" for n in range(400)),
        # Lines of labels, and of long labels never closed, on 1 MiB.
        "[a]\n" * 262_144,
        ("[a" + "b" * 997 + "\n") * 1049,
        # 1 MiB of definitions, none of them the head's.
        "[x] " + "y " * 1000 + "\n\n" + "[z]: /z\n" * 131_000,
    ],
)
def test_excerpt_source__bounded_by_the_head(body):
    started = time.perf_counter()
    source = excerpt_source(body, HEAD)
    took = time.perf_counter() - started

    assert len(source) < 4 * HEAD  # the head and a short stub per label in it
    assert took < 2.0  # one pass of a regular expression (0.3 s at most, measured)
    plain_excerpt(source)  # renders the bounded source only


def test_render_markdown__an_id_of_the_pages_own_is_dropped_the_others_kept():
    """`<main id="content">` is the skip link's target: a heading of the article with
    that id took it, and made the page invalid HTML (a review's finding)."""
    html = render_markdown(
        '<h2 id="content">Contents</h2>\n\n<h3 id="related-heading">See also</h3>\n\n'
        '<h3 id="content-2">Kept</h3>\n\nA note.[^1]\n\n[^1]: The note.'
    )

    assert 'id="content"' not in html and 'id="related-heading"' not in html
    assert 'id="content-2"' in html and 'id="fn-1"' in html and 'href="#fn-1"' in html


@pytest.mark.parametrize(
    ("text", "link"),
    [
        # the sanitiser took its address: no href, so no rel (the Nu checker's error)
        ("[x](javascript:alert(1))", "<a>x</a>"),
        # a title that reads like an address, with and without one
        ('<a title=" href=">x</a>', '<a title=" href=">x</a>'),
        (
            '<a title=" href=&quot;y" href="javascript:1">x</a>',
            '<a title=" href=&quot;y">x</a>',
        ),
        (
            '<a title="a > b href=" href="https://example.com/">x</a>',
            '<a title="a &gt; b href=" href="https://example.com/" rel="noopener noreferrer">x</a>',
        ),
    ],
)
def test_a_link_carries_rel_only_with_an_address_whatever_its_title_says(text, link):
    """A review's: the lookahead for ` href=` read inside attribute values, so a link of
    no address whose title held ` href=` kept its rel."""
    assert link in render_markdown(text)
