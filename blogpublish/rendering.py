"""Markdown to safe HTML: `markdown` renders, `nh3` keeps only what cannot run."""

from __future__ import annotations

import markdown
import nh3

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


def render_markdown(text: str) -> str:
    html = markdown.markdown(text, extensions=EXTENSIONS, output_format="html")
    return nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes=URL_SCHEMES,
        filter_style_properties={"text-align"},
        link_rel="noopener noreferrer",
    )
