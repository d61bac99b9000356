"""Markdown to safe HTML: `markdown` renders, `nh3` keeps only what cannot run.

Input over the limits of publishing.text_limits (nesting, runs of emphasis marks,
unclosed brackets: python-markdown's slow paths) is refused before rendering, in
linear time, so no article can hold a worker for minutes. Validation refuses it too;
this is the net under rows that got past validation.
"""

from __future__ import annotations

import threading
from functools import lru_cache
from html import unescape

import markdown
import nh3

from publishing.exceptions import PermanentPublishError
from publishing.text_limits import markdown_complexity_problems

EXTENSIONS = ["extra", "sane_lists"]  # extra: tables, fenced code, footnotes, abbr, …

ALLOWED_TAGS = set(nh3.ALLOWED_TAGS)
ALLOWED_ATTRIBUTES = {
    **{tag: set(attrs) for tag, attrs in nh3.ALLOWED_ATTRIBUTES.items()},
    # Footnotes link by id; fenced code carries its language as a class.
    "*": {"lang", "title"},
    "a": {"href", "hreflang", "title", "id", "class"},
    "sup": {"id", "class"},
    "li": {"id", "class"},
    "div": {"class"},
    "code": {"class"},
    "pre": {"class"},
    "h1": {"id"},
    "h2": {"id"},
    "h3": {"id"},
    "h4": {"id"},
    "h5": {"id"},
    "h6": {"id"},
    "th": {"align", "style", "colspan", "rowspan"},
    "td": {"align", "style", "colspan", "rowspan"},
}
URL_SCHEMES = {"http", "https", "mailto"}


class MarkdownTooComplexError(PermanentPublishError):
    """The Markdown is over the renderer's limits; edit the article."""


def check_complexity(text: str) -> None:
    problems = markdown_complexity_problems(text)
    if problems:
        raise MarkdownTooComplexError("Not rendered: " + " ".join(problems))


_renderers = threading.local()


def _to_html(text: str) -> str:
    """`markdown.markdown(text, …)` through one renderer per thread: building a
    `Markdown` with its extensions costs more than converting a short article
    (docs/performance.md, "Import → published"). `reset()` clears what the last text
    left (footnotes, abbreviations, references), also after a conversion that raised."""
    renderer = getattr(_renderers, "renderer", None)
    if renderer is None:
        renderer = _renderers.renderer = markdown.Markdown(
            extensions=EXTENSIONS, output_format="html"
        )
    return renderer.reset().convert(text)


def render_markdown(text: str) -> str:
    check_complexity(text)
    html = _to_html(text)
    return nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes=URL_SCHEMES,
        filter_style_properties={"text-align"},
        link_rel="noopener noreferrer",
    )


EXCERPT_CHARS = 240
EXCERPT_SKIPS = {"script", "style", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "sup", "table"}


@lru_cache(maxsize=1024)
def plain_excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """The start of a Markdown text as plain text, cut at a word: for the front page and
    the feed. Cached, since the same 50 articles are summarised at every refresh.
    Raises MarkdownTooComplexError, as render_markdown does."""
    check_complexity(text)
    html = _to_html(text)
    # Prose only: headings, code and footnotes would read as noise in a summary.
    prose = nh3.clean(html, tags=set(), attributes={}, clean_content_tags=EXCERPT_SKIPS)
    plain = " ".join(unescape(prose).split())
    if len(plain) <= limit:
        return plain
    cut = plain[:limit]
    if " " in cut[limit // 2 :]:
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:.-–—") + "…"
