"""Markdown to safe HTML: cmark-gfm renders, `nh3` keeps only what cannot run.

CommonMark with GitHub's extensions (tables, strikethrough, autolinks, task lists,
footnotes) through cmark-gfm, the C renderer behind GitHub and PyPI's READMEs, which is
linear by construction and fuzzed with pathological inputs of its own (why this one and
not markdown-it-py or mistune: docs/site.md, "Rendering"). No shape of Markdown is slow,
so nothing is refused for its shape; only a body over the size limit is refused here, as
the net under rows that got past validation. Preview, publish, the excerpts of the
front page and the feed all render through `to_html` below.
"""

from __future__ import annotations

import bisect
import ctypes
import re
from functools import lru_cache
from html import unescape
from typing import Any

import nh3
import regex
from cmarkgfm import _cmark
from cmarkgfm.cmark import Options

from blogpublish.nesting import bounded_nesting
from publishing.exceptions import PermanentPublishError
from publishing.text_limits import (
    PAGE_ILLEGAL_RE,
    amplification_problem,
    one_line,
    strip_page_illegal,
)
from publishing.validators import BODY_MAX_BYTES

# UNSAFE: raw HTML reaches nh3, which removes what can run (as it always has); cmark
# alone would replace every raw tag with a comment. The GFM "tagfilter" extension is
# left out for the same reason: nh3 drops <script> and <style> with their content (one
# never closed is written as text: blogpublish.nesting.bounded_nesting).
OPTIONS = (
    Options.CMARK_OPT_UNSAFE
    | Options.CMARK_OPT_FOOTNOTES
    # style="text-align: …" rather than align="…": what the site's policy (and its
    # Content-Security-Policy's style-src-attr, blogpublish.csp) has always allowed.
    | Options.CMARK_OPT_TABLE_PREFER_STYLE_ATTRIBUTES
    # Invalid UTF-8 (a lone surrogate passed through below) becomes U+FFFD.
    | Options.CMARK_OPT_VALIDATE_UTF8
)
EXTENSIONS = ("table", "strikethrough", "autolink", "tasklist")

ALLOWED_TAGS = set(nh3.ALLOWED_TAGS) | {"section", "input"}
ALLOWED_ATTRIBUTES = {
    **{tag: set(attrs) for tag, attrs in nh3.ALLOWED_ATTRIBUTES.items()},
    # Footnotes link by id; fenced code carries its language as a class.
    "*": {"lang", "title"},
    "a": {"href", "hreflang", "title", "id", "class"},
    "sup": {"id", "class"},
    "li": {"id", "class"},
    "div": {"class"},
    "section": {"class"},  # cmark-gfm's footnotes: <section class="footnotes">
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
    # A task list's box: `checked` is kept, and every <input> is made a disabled
    # checkbox (SET_ATTRIBUTES), so none can be typed into or sent anywhere; named
    # "task" for screen readers, which say its state (a form field needs a name: axe).
    "input": {"checked"},
}
SET_ATTRIBUTES = {"input": {"type": "checkbox", "disabled": "", "aria-label": "task"}}
URL_SCHEMES = {"http", "https", "mailto"}


class MarkdownTooLargeError(PermanentPublishError):
    """The Markdown is over the size limit; edit the article."""


def check_size(text: str) -> None:
    """Refuse a body over the size limit, or whose tables or footnotes would make HTML
    many times its size (validation refuses them first; this is for rows written past
    validation). Any other shape of Markdown under the limit renders in time and size
    linear in its size."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > BODY_MAX_BYTES:
        raise MarkdownTooLargeError(
            f"Not rendered: the text is {size:,} bytes; at most {BODY_MAX_BYTES:,} are allowed."
        )
    problem = amplification_problem(text)
    if problem:
        raise MarkdownTooLargeError(f"Not rendered: {problem}.")


# --- cmark-gfm, called so that it frees what it allocates --------------------------------
#
# cmarkgfm's own wrappers (markdown_to_html_with_extensions and the rest) never free the
# document tree nor the HTML buffer: measured, about 1 MB lost per render of an 18 KB
# text, so a worker would grow by gigabytes in a day. The binding does not declare
# cmark_node_free nor free(), but its shared library exports cmark_node_free, and the
# HTML buffer comes from cmark's default allocator, which is the C library's calloc,
# so the C library's free() releases it. tests/unit/test_rendering.py holds this.
_lib, _ffi = _cmark.lib, _cmark.ffi
_shared = ctypes.CDLL(_cmark.__file__)  # already loaded: the same library, not a copy
_node_free = _shared.cmark_node_free
_node_free.argtypes, _node_free.restype = [ctypes.c_void_p], None
_free = ctypes.CDLL(None).free
_free.argtypes, _free.restype = [ctypes.c_void_p], None
_lib.cmark_gfm_core_extensions_ensure_registered()
_EXTENSIONS = [_lib.cmark_find_syntax_extension(name.encode()) for name in EXTENSIONS]


def cmark_version() -> str:
    """The version of the cmark-gfm library the binding runs (part of the site's look)."""
    return _ffi.string(_lib.cmark_version_string()).decode()


def _address(pointer) -> int:
    return int(_ffi.cast("uintptr_t", pointer))


def to_html(text: str) -> str:
    """`text` as cmark-gfm's HTML, before sanitising. Linear in the length of `text`."""
    # surrogatepass: a lone surrogate goes through as invalid UTF-8 that VALIDATE_UTF8
    # turns into U+FFFD, instead of an encoding error.
    data = text.encode("utf-8", "surrogatepass")
    parser = _lib.cmark_parser_new(OPTIONS)
    try:
        for extension in _EXTENSIONS:
            _lib.cmark_parser_attach_syntax_extension(parser, extension)
        _lib.cmark_parser_feed(parser, data, len(data))
        root = _lib.cmark_parser_finish(parser)
        try:
            extensions = _lib.cmark_parser_get_syntax_extensions(parser)
            html = _lib.cmark_render_html(root, OPTIONS, extensions)
            try:
                # "replace": cmark writes the character references &#xFFFE; and
                # &#xFFFF; as the lone bytes FE and FF (utf8proc's markers): U+FFFD.
                return _ffi.string(html).decode("utf-8", "replace")
            finally:
                _free(_address(html))
        finally:
            _node_free(_address(root))
    finally:
        _lib.cmark_parser_free(parser)


def sanitise(html: str) -> str:
    """What cannot run taken out of `html`: the site's one policy. The nesting is
    bounded first, so that nh3 reads any HTML in linear time (blogpublish.nesting)."""
    return _clean(bounded_nesting(html))


def _bounded(text: str) -> str:
    """Markdown as cmark-gfm's HTML with its nesting bounded: what the page's HTML and
    the plain excerpt are both made from."""
    check_size(text)
    return bounded_nesting(to_html(text))


# The site's policy.
_POLICY: dict[str, Any] = {
    "tags": ALLOWED_TAGS,
    "attributes": ALLOWED_ATTRIBUTES,
    "set_tag_attribute_values": SET_ATTRIBUTES,
    "url_schemes": URL_SCHEMES,
    "filter_style_properties": {"text-align"},
    "link_rel": "noopener noreferrer",
}
# Built once (nh3.clean builds its sanitiser from its arguments at every call: about
# 40 % of a short page's cleaning, measured).
_CLEANER = nh3.Cleaner(**_POLICY)


def _clean(bounded: str, cleaner: nh3.Cleaner = _CLEANER) -> str:
    """The sanitiser's HTML, and what it leaves to mend (the page's and the feeds')."""
    html = _without_page_illegal(cleaner.clean(bounded))
    return _inputs_in_order(_without_page_ids(_without_stray_rel(html)))


# A tag as the sanitiser writes one: html5ever escapes "<" and ">" in attribute values.
_A_TAG = re.compile(r"<[^>]*>")


def _without_page_illegal(html: str) -> str:
    """The sanitiser's HTML without what a page may not hold (PAGE_ILLEGAL_RE), which it
    writes out from a character reference as the character itself. In a tag each is
    U+FFFD, never nothing: `href="java&#127;script:…"` is a relative address to the
    sanitiser (no scheme it knows), and the page's strip of such characters afterwards
    made it `javascript:…` (a review's finding; `<h2 id="con&#127;tent">` became the
    page's own id the same way). In text, escaped, each is taken out as the page's
    strip would. Sanitising again instead took 14x as long on a long body (a review's)."""
    if not PAGE_ILLEGAL_RE.search(html):
        return html
    marked = _A_TAG.sub(lambda tag: PAGE_ILLEGAL_RE.sub("\ufffd", tag[0]), html)
    return strip_page_illegal(marked)


# Every <input> nh3 leaves: SET_ATTRIBUTES's, `checked` or not, and the policy's `lang`
# and `title` (every element's). nh3 writes the ones it sets in an order that changes
# from one process to the next (a hash map's), so a page rendered by one worker differed
# byte for byte from the same page rendered by another, and by the full check or
# restore_check (a review's finding): written again here in one order.
_INPUT = re.compile(r"<input( [^>]*)?>")
_ATTRIBUTE = re.compile(r'([^\s=]+)(?:="([^"]*)")?')
_INPUT_ORDER = ("type", "checked", "disabled", "aria-label", "lang", "title")


def _inputs_in_order(html: str) -> str:
    if "<input" not in html:
        return html

    def in_order(match: re.Match[str]) -> str:
        found = {a[1]: a[2] or "" for a in _ATTRIBUTE.finditer(match.group(1) or "")}
        attributes = "".join(f' {name}="{found[name]}"' for name in _INPUT_ORDER if name in found)
        return f"<input{attributes}>"

    return _INPUT.sub(in_order, html)


# The ids the page's own templates give (the skip link's target, the related articles'
# heading): an element of the body with one of them took the skip link and made the
# page invalid HTML (a duplicate id; a review's finding). Footnotes' and headings' other
# ids are kept: links inside the article use them.
PAGE_IDS = ("content", "related-heading")
_PAGE_ID = re.compile(r' id="(?:{})"'.format("|".join(map(re.escape, PAGE_IDS))))


def _without_page_ids(html: str) -> str:
    return _PAGE_ID.sub("", html) if ' id="' in html else html


# A link the sanitiser took the address of (`javascript:`…) keeps the `rel` it adds to
# every link, which HTML allows only with an `href` (the Nu checker's error). A link's
# start tag as the sanitiser writes it: each attribute name="value", a quote in a value
# escaped (&quot;), so a value is read whole: a lookahead for ` href=` in the tag read
# into one (a review's: `<a title=" href=">` kept its rel).
_LINK_START = re.compile(r'<a((?: [^\s"\'>/=]+="[^"]*")*)>')
_ATTRIBUTE = re.compile(r' ([^\s"\'>/=]+)="([^"]*)"')
_LINK_REL = ("rel", "noopener noreferrer")


def _without_stray_rel(html: str) -> str:
    return _LINK_START.sub(_link_without_stray_rel, html) if "<a " in html else html


def _link_without_stray_rel(link: re.Match[str]) -> str:
    attributes = _ATTRIBUTE.findall(link[1])
    if _LINK_REL not in attributes or any(name == "href" for name, _ in attributes):
        return link[0]
    kept = "".join(f' {name}="{value}"' for name, value in attributes if (name, value) != _LINK_REL)
    return f"<a{kept}>"


def render_markdown(text: str) -> str:
    return _clean(_bounded(text))


def render_markdown_absolute(text: str, *, base_url: str) -> str:
    """`render_markdown(text)` with every relative address of a link or an image (`href`,
    `src`: `/blog/media/…`, `#fn-1`, `other/`) resolved against `base_url`, the page's
    own absolute address, as a browser on that page resolves it; absolute addresses are
    kept as they are. For the feeds, which are read away from the page: a feed reader or
    an RSS-to-email service has no base to resolve them against (JSON Feed has none, and
    the Atom feed sets no xml:base). The sanitiser does it (ammonia's "rewrite with
    base", nh3 >= 0.3.6) in the one parse that sanitises, so nothing parses the HTML
    again; the policy is the site's, built anew for each base (at a cache miss only:
    blogpublish.site.documents keeps the result). The policy keeps no `srcset`, so
    `href` and `src` are every address a reader follows."""
    cleaner = nh3.Cleaner(**_POLICY, url_relative=("rewrite_with_base", base_url))
    return _clean(_bounded(text), cleaner)


EXCERPT_CHARS = 240
EXCERPT_SKIPS = {
    *("script", "style", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "sup", "table"),
    "section",  # the footnotes
}


# A bracketed label that may be a reference (`[^1]`, `[text][label]`, `[label][]`,
# `[label]`): any one not opening an inline link `[text](…)`. Labels: at most 999
# characters, no unescaped bracket (CommonMark 4.7), on one line (here).
_LABEL = r"(\^?)((?:\\.|[^\[\]\\\n]){1,999})"
_REFERENCE = re.compile(rf"\[{_LABEL}\](?!\()")
# A link reference definition or a footnote definition: its label, at a line's start.
_DEFINITION = re.compile(rf"^ {{0,3}}\[{_LABEL}\]:", re.MULTILINE)


def _label_key(match: re.Match) -> tuple[str, str]:
    """(`^` or "", the label) as CommonMark matches labels: case-folded, its runs of
    white space one space."""
    return match[1], " ".join(match[2].split()).casefold()


def may_refer_on(text: str, chars: int) -> bool:
    """Whether a body that begins with `text` may define, past its first `chars`
    characters, a reference they use: it is that long, and they have a label."""
    return len(text) >= chars and _REFERENCE.search(text, 0, chars) is not None


# A fenced code block's opening or closing line (CommonMark: three or more backticks or
# tildes, indented at most three spaces).
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$", re.MULTILINE)


def _fenced_spans(text: str) -> list[tuple[int, int]]:
    """Where the top-level fenced code blocks of `text` are, as (start, end) offsets: a
    definition written inside one is code, not a definition (a review's finding). One
    pass; a fence left open runs to the end, as CommonMark has it."""
    spans, opened = [], None
    for match in _FENCE.finditer(text):
        fence = match[1]
        if opened is None:
            if fence[0] == "`" and "`" in match[2]:
                continue  # an info string with a backtick: not a fence (CommonMark)
            opened = (match.start(), fence[0], len(fence))
        elif fence[0] == opened[1] and len(fence) >= opened[2] and not match[2].strip():
            spans.append((opened[0], match.end()))
            opened = None
    if opened is not None:
        spans.append((opened[0], len(text)))
    return spans


def _inside(spans: list[tuple[int, int]], at: int) -> bool:
    """Is offset `at` inside one of `spans` (in order, not overlapping)?"""
    i = bisect.bisect_right(spans, (at, float("inf"))) - 1
    return i >= 0 and spans[i][0] <= at < spans[i][1]


def excerpt_source(body: str, chars: int) -> str:
    """What an excerpt of `body` is rendered from: its first `chars` characters, with
    a definition for each label they use that the rest of the body defines. Reference
    links and footnotes are mostly defined at the end: cut off from their definitions,
    `[the guide][g]` and `edge cases.[^1]` showed as written. Each definition is a stub
    (`[g]: #`, `[^1]: .`): an excerpt shows a link's text, never its address, and
    neither a footnote's marker nor its text (EXCERPT_SKIPS), so the stubs make it the
    text the page's own excerpt shows, and their size is bounded by the head's: at most
    one per label in it. They go first (a definition cannot interrupt a paragraph, and
    the head may end inside one or in an open code fence), each closed by a blank line,
    then a comment, which ends a footnote's block before the head (an indented head
    would continue it). Reading the rest is one pass of a regular expression over the
    text, only when the head has a label and the body goes on; nothing more is rendered
    than the head."""
    head = body[:chars]
    if len(body) <= chars:
        return head
    wanted = {key for match in _REFERENCE.finditer(head) if (key := _label_key(match))[1]}
    if not wanted:
        return head
    stubs, rest = [], body.rfind("\n", 0, chars) + 1  # from the line the cut is in
    fenced = _fenced_spans(body)
    for match in _DEFINITION.finditer(body, rest):
        key = _label_key(match)
        if key in wanted and not _inside(fenced, match.start()):
            wanted.discard(key)
            stubs.append(f"[^{match[2]}]: ." if key[0] else f"[{match[2]}]: #")
            if not wanted:
                break
    if not stubs:
        return head
    return "\n\n".join(stubs) + "\n\n<!-- -->\n\n" + head


@lru_cache(maxsize=1024)
def plain_excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """The start of a Markdown text as plain text, cut at a word: for the front page and
    the feed. Cached, since the same 50 articles are summarised at every refresh.
    Raises MarkdownTooLargeError, as render_markdown does."""
    return _excerpt(_bounded(text), limit)


def render_markdown_and_excerpt(text: str, limit: int = EXCERPT_CHARS) -> tuple[str, str]:
    """`render_markdown(text)` and `plain_excerpt(text, limit)` from one parse (an
    article page without a description shows both)."""
    bounded = _bounded(text)
    return _clean(bounded), _excerpt(bounded, limit)


# Text only, without the elements whose text is not prose.
_PROSE = nh3.Cleaner(tags=set(), attributes={}, clean_content_tags=EXCERPT_SKIPS)


# The bidirectional embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069):
# a page's paragraphs end them; joined into one line of text, one paragraph's would
# run over the rest of the excerpt (a review's finding).
_BIDI_CONTROLS = dict.fromkeys([*range(0x202A, 0x202F), *range(0x2066, 0x206A)])


def _excerpt(bounded: str, limit: int) -> str:
    # Prose only: headings, code and footnotes would read as noise in a summary.
    prose = _PROSE.clean(bounded)
    plain = one_line(unescape(prose).translate(_BIDI_CONTROLS))
    if len(plain) <= limit:
        return plain
    cut = plain[: _character_start(plain, limit)]
    if " " in cut[limit // 2 :]:
        cut = cut.rsplit(" ", 1)[0]
    # The space cut at and the punctuation trimmed may belong to a character a reader
    # sees with what is before them (after a prepended mark such as U+0600, UAX #29
    # GB9b): back to the start of that character, until the end is one.
    while (end := _character_start(plain, len(cut := cut.rstrip(_TRIMMED)))) != len(cut):
        cut = plain[:end]
    if len(cut) < limit // 2:  # text whose every character ends in a space: cut hard
        cut = plain[: _character_start(plain, limit)]
    return cut + "…"


# What an excerpt's cut does not end with: spaces (no-break ones too) and punctuation.
_TRIMMED = " \u00a0\u2007\u202f,;:.-–—"


# A character a reader sees: an extended grapheme cluster (Unicode's UAX #29), as the
# regex module reads it.
_GRAPHEME = regex.compile(r"\X")


def _character_start(text: str, index: int) -> int:
    """`index`, or the start of the character a reader sees that it falls inside, so a
    cut there splits none: an accent from its letter, a flag's two letters, an emoji
    sequence's parts, a Hangul syllable's jamo (a review's finding: "🇫🇷" cut to a lone
    "🇫"). Text without a space to cut at (Chinese, a long word) is cut so. Reads the
    text's clusters up to the one holding `index`, not the rest."""
    if index >= len(text):
        return index
    for cluster in _GRAPHEME.finditer(text):
        if cluster.end() > index:
            return cluster.start()
    return index
