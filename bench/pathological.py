"""Markdown that makes renderers slow: the corpus of `bench/run.py render` and of
tests/security/test_render_growth.py.

    .venv/bin/python bench/run.py render [--quick]

Each shape is a function of a size in characters that returns about that many: cmark's
own pathological cases (cmark-gfm's test/pathological_tests.py: nested and mismatched
emphasis, brackets, block quotes, lists, backticks, unclosed links and comments, tables,
link reference definitions), the shapes of both reviews of the old renderer (unclosed
fences, abbreviation definitions, short code-span paragraphs, `<div markdown="1">`
nested, the denylist's brackets, emphasis runs, quotes and lists), raw HTML nested
deep (what the sanitiser's tree builder pays for), and a long run of every ASCII
punctuation mark. The benchmark renders each at the 1 MiB size limit with the site's
renderer and prints the slowest; a measurement, not a test.
"""

from __future__ import annotations

import string
import time
from collections.abc import Callable

Shape = Callable[[int], str]


def repeat(unit: str) -> Shape:
    return lambda size: unit * max(1, size // len(unit))


def nest(opening: str, middle: str, closing: str) -> Shape:
    def make(size: int) -> str:
        count = max(1, (size - len(middle)) // (len(opening) + len(closing)))
        return opening * count + middle + closing * count

    return make


def staircase(step: Callable[[int], str]) -> Shape:
    """Lines that grow one step each (deeper lists, longer backtick runs): the text is
    the square of the number of lines, so the lines are counted to fit `size`."""

    def make(size: int) -> str:
        parts, total, n = [], 0, 0
        while total + len(step(n)) <= size:
            parts.append(step(n))
            total += len(parts[-1])
            n += 1
        return "".join(parts)

    return make


def numbered(template: str, tail: str = "") -> Shape:
    """`template` with a running number, then `tail` (definitions, then their uses)."""

    def make(size: int) -> str:
        parts, total, n = [], len(tail), 0
        while total + len(template.format(n=n)) <= size:
            parts.append(template.format(n=n))
            total += len(parts[-1])
            n += 1
        return "".join(parts) + tail

    return make


def abbreviations(size: int) -> str:
    """python-markdown's abbreviations (4,900 took it 12.8 s): definitions, then text."""
    definitions = numbered("*[AB{n}]: Abbreviation {n}\n")(size // 2)
    return definitions + "\n" + repeat("AB1 AB2 AB3 text ")(size // 2)


def references(size: int) -> str:
    """cmark's "many references": definitions, then as many uses of an undefined one."""
    return numbered("[{n}]: u\n")(size // 2) + "\n" + repeat("[0] ")(size // 2)


SHAPES: dict[str, Shape] = {
    # cmark-gfm test/pathological_tests.py
    "nested strong emph": nest("*a **a ", "b", " a** a*"),
    "emph closers, no openers": repeat("a_ "),
    "emph openers, no closers": repeat("_a "),
    "link closers, no openers": repeat("a]"),
    "link openers, no closers": repeat("[a"),
    "mismatched openers and closers": repeat("*a_ "),
    "openers and closers multiple of 3": lambda size: "a**b" + repeat("c* ")(size - 4),
    "link openers and emph closers": repeat("[ a_"),
    "pattern [ (]( repeated": repeat("[ (]("),
    "pattern ![[]() repeated": repeat("![[]()"),
    "nested brackets": nest("[", "a", "]"),
    "nested block quotes": lambda size: repeat("> ")(size - 1) + "a",
    "deeply nested lists": staircase(lambda n: "  " * n + "* a\n"),
    "U+0000 in input": repeat("abc\u0000de\u0000"),
    "backticks": staircase(lambda n: "e" + "`" * (n + 1)),
    "unclosed links A": repeat("[a](<b"),
    "unclosed links B": repeat("[a](b"),
    "unclosed <!--": lambda size: "</" + repeat("<!--")(size - 2),
    "tables": repeat("aaa\rbbb\n-\v\n"),
    "many references": references,
    "many link reference definitions": numbered("[x{n}]: /url\n\n[x0]\n\n"),
    # the reviews of python-markdown (issue 8, issue 20)
    "unclosed fences ~~~": repeat("~~~a\n"),
    "unclosed fences ```": repeat("```a\n"),
    "abbreviation definitions": abbreviations,
    "short code-span paragraphs": repeat("`a`\n\n"),
    "code spans in one paragraph": repeat("`a` "),
    "bold in one paragraph": repeat("**a** "),
    '<div markdown="1"> nested': nest('<div markdown="1">\n', "a\n", "</div>\n"),
    "[ x n": repeat("["),
    "[a]( x n": repeat("[a]("),
    "*_ x n": repeat("*_"),
    "> x n": repeat(">"),
    "lists nested by indentation": staircase(lambda n: "    " * n + "* item\n"),
    "* x n on a line": repeat("* "),
    # raw HTML the sanitiser's tree builder reads (blogpublish.nesting)
    "<div> nested": repeat("<div>"),
    "<b> nested, then paragraphs": lambda size: (
        numbered('<b title="{n}">')(size // 2) + repeat("\n\np")(size - size // 2)
    ),
    "<table><td> nested": repeat("<table><td>"),
    "<p><b> unclosed": repeat("<p><b>x"),
    "<!-- unclosed comments": repeat("<!--"),
    "<a unclosed tags": repeat('<a b="'),
    # <script>/<style> never closed: each is text, the rest read again after it (a
    # review's: a search of the rest at each opening, a minute at 1 MiB)
    "<script> unclosed in prose": repeat("a <script> "),
    "<style> unclosed, lines": repeat("<style>\n"),
    "<style>s, one closer at the end": lambda size: repeat("a <style> ")(size - 8) + "</style>",
    "<script> with false closers": repeat("<script></scripts>"),
    # every ASCII punctuation mark, in one run
    **{f"run of {mark}": repeat(mark) for mark in string.punctuation},
    "every punctuation mark, cycled": repeat(string.punctuation),
    # characters html5ever appends to a text node one at a time (blogpublish.nesting)
    "run of no-break spaces": repeat("\u00a0"),
    "French guillemets and no-break spaces": repeat("\u00ab\u00a0oui\u00a0\u00bb "),
    "run of U+0080-U+00BF": repeat("".join(map(chr, range(0x80, 0xC0)))),
}


def render_times(render: Callable[[str], object], size: int, runs: int) -> list[tuple[float, str]]:
    """(best of `runs` seconds, shape name) for every shape at `size`, slowest first."""
    return sorted(
        ((best_of(render, make(size), runs), name) for name, make in SHAPES.items()),
        reverse=True,
    )


# --- the renderers compared (docs/site.md, "Rendering"; docs/performance.md) ------------


def renderers() -> dict[str, Callable[[str], str]]:
    """Markdown → HTML, before sanitising, for each candidate; and the site's renderer
    (cmark-gfm, bounded nesting, nh3) as it publishes."""
    import markdown
    import mistune
    from markdown_it import MarkdownIt

    from blogpublish.rendering import render_markdown, to_html

    python_markdown = markdown.Markdown(extensions=["extra", "sane_lists"], output_format="html")
    markdown_it = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    plugins = ["table", "strikethrough", "footnotes", "task_lists", "url"]
    return {
        "python-markdown 'extra' (before)": lambda text: python_markdown.reset().convert(text),
        "markdown-it-py (commonmark + tables)": markdown_it.render,
        "mistune 3 (GFM plugins)": mistune.create_markdown(escape=False, plugins=plugins),
        "cmark-gfm (cmarkgfm)": to_html,
        "the site: cmark-gfm + nesting + nh3": render_markdown,
    }


def real_post(size: int = 8192) -> str:
    """About `size` characters of real-looking Markdown: the Hugo corpus's posts (prose,
    lists, a table, code, links, footnotes, raw HTML), end to end."""
    from pathlib import Path

    from publishing.markdown_files import parse

    corpus = Path(__file__).resolve().parents[1] / "tests" / "hugo_corpus" / "content"
    bodies = [parse(path.read_text(encoding="utf-8")).body for path in sorted(corpus.rglob("*.md"))]
    text, n = "", 0
    while len(text) < size:
        # Footnote labels made unique per copy, so each copy's notes are its own.
        text += bodies[n % len(bodies)].replace("[^", f"[^{n}-") + "\n\n"
        n += 1
    return text


def best_of(
    render: Callable[[str], object],
    text: str,
    runs: int,
    clock: Callable[[], float] = time.perf_counter,
) -> float:
    """The least of `runs` times to render `text`, in seconds of `clock` (wall time by
    default; tests/security/test_render_growth.py counts the thread's CPU time)."""
    best = float("inf")
    for _ in range(runs):
        started = clock()
        render(text)
        best = min(best, clock() - started)
    return best
