"""HTML nested no deeper than the sanitiser reads in linear time.

nh3 (ammonia on html5ever) builds the whole tree before it cleans it, and an HTML tree
builder pays for every new element in proportion to the depth of the open elements
(the "has an element in scope" checks of the HTML standard), so its time grows with the
square of the nesting: 40,000 nested blockquotes ("> " × 40,000, 80 kB of Markdown)
take 110 s, 40,000 raw `<div>` 67 s (measured, docs/site.md "Rendering"). Browsers cap
the depth for the same reason; so does this module, before nh3 reads the HTML:

- what it passes on is tokenised by html5ever exactly as it was here: tags matched by
  the HTML standard's own grammar (attributes, quotes), every other "<" escaped as
  "&lt;", comments and other "<!…>", "<?…>" dropped (nh3 drops them too), <script> and
  <style> dropped with their content (as nh3 drops them), and the tags that would switch
  the tokeniser to raw text (<textarea>, <title>, <xmp>, …; nh3 removes them, keeping
  their text) dropped;
- it is well-formed: an end tag closes what is open above its element, and an end tag
  whose element is not open is dropped; so the parser's stack is never deeper than the
  elements open here, plus what it adds itself (a table's <tbody> and <tr>);
- a long text is cut into nodes of about TEXT_RUN characters (`_split`);
- past MAX_DEPTH open elements (or MAX_FORMATTING open <b>, <em>, <a>, …, which the
  parser re-opens in every new paragraph), a start tag is dropped and its text stays.

What a reader could see differ from nh3 alone, on raw HTML only: misnested inline tags
end at the first end tag (`<b>a <i>b</b> c</i>`: " c" is not italic, where the parser
re-opens the <i>); a stray `</p>` makes no empty paragraph; a <textarea>'s or <title>'s
content is sanitised as HTML instead of shown as text.

Markdown alone never comes near (lists 16 deep are about 35), nor does a real article's
HTML. Linear: one regular-expression match and O(1) work per tag, amortised.
"""

from __future__ import annotations

import re

MAX_DEPTH = 64
MAX_FORMATTING = 16
TEXT_RUN = 4096  # characters in one text node, at most, before the next cut (_CUT_BEFORE)

_WS = r"\t\n\f\r "
# The text before each "<", then one token: a comment, a bogus comment (<!…>, <?…>,
# </ not followed by a letter), a start or end tag (HTML Living Standard §13.2.5, "Tag
# open state" onwards: a name up to whitespace, "/" or ">"; attribute names, then values
# double-quoted, single-quoted or unquoted; stray "/" and quotes where the standard reads
# them), a "<" that starts a tag with no ">" (the parser reads the rest of the text as
# that tag, "eof-in-tag", and keeps none of it), or a lone "<" (text); or the end of the
# text. Atomic groups and possessive quantifiers keep each match linear.
_TOKENS = re.compile(
    rf"""
    ([^<]*+)
    (?:
        (<!--(?:>|->|.*?(?:-->|--!>)|.*))
      | (<(?:[!?]|/(?![A-Za-z]))[^>]*+>?)
      | (<(/?)([A-Za-z][^{_WS}/>]*+)
            (?>
                [{_WS}/]
              | [^{_WS}/>][^{_WS}/>=]*+
                (?>[{_WS}]*+=[{_WS}]*+(?>"[^"]*+"|'[^']*+'|[^{_WS}>]++)?)?
            )*+
            >)
      | (<(?=/?[A-Za-z]))
      | (<)
      | \Z
    )
    """,
    re.VERBOSE | re.DOTALL,
)
VOID = frozenset(
    {
        *("area", "base", "basefont", "bgsound", "br", "col", "embed", "frame", "hr"),
        *("image", "img", "input", "keygen", "link", "meta", "param", "source", "track"),
        "wbr",
    }
)
# Dropped with their content: nh3 drops these with their content too.
DROPPED_WITH_CONTENT = frozenset({"script", "style"})
# Their content is raw text to the parser; nh3 removes the tags and keeps the text.
RAW_TEXT = frozenset(
    {"iframe", "noembed", "noframes", "noscript", "plaintext", "textarea", "title", "xmp"}
)
# Closed by the parser when an ancestor closes ("generate implied end tags"): an end tag
# is not written for them, which would make an empty <p> of a </p> the parser met alone.
IMPLIED_END = frozenset({"dd", "dt", "li", "optgroup", "option", "p", "rb", "rp", "rt", "rtc"})
FORMATTING = frozenset(
    {"a", "b", "big", "code", "em", "font", "i", "nobr", "s", "small", "strike", "strong"}
    | {"tt", "u"}
)


def _ascii_lower(name: str) -> str:
    return name.encode("utf-8", "surrogatepass").lower().decode("utf-8", "surrogatepass")


# Where a long text is cut: before a "&", or a character from U+0080 to U+00BF (a
# no-break space, «, », ©, °, …): html5ever takes each of these as one more append to
# its text node, at a cost that grows with the node.
_CUT_BEFORE = re.compile("[&\u0080-\u00bf]")


_NOT_SPACE = re.compile(f"[^{_WS}]")


def _split(text: str) -> str:
    """`text` with an empty comment before a "&" or a character of U+0080–U+00BF every
    TEXT_RUN characters or so: the parser appends each to its text node, at a cost that
    grows with the node (1 MiB of "&" renders as 5 MB of "&amp;": 16 s; 512 Ki no-break
    spaces took 4.3 s in nh3, 13.5 s for a page, its excerpt and feed entry), and a
    comment starts a new node. nh3 drops comments, so the output is the same text.

    The first node holds more than spaces: in a table the parser keeps a text of spaces
    alone in the table and moves any other text out in front of it, so a first node of
    spaces alone would have stayed behind, and "dit «oui»" been shown "dit«oui»" (a
    review's finding). Every later node begins with the character cut before."""
    first = _NOT_SPACE.search(text)
    if first is None:
        return text
    pieces, start, at = [], 0, max(TEXT_RUN, first.end())
    while cut := _CUT_BEFORE.search(text, at):
        pieces.append(text[start : cut.start()])
        start = cut.start()
        at = start + TEXT_RUN
    pieces.append(text[start:])
    return "<!---->".join(pieces)


def _lower(name: str) -> str:
    # A tag's name is most often lower case already (str.islower: no upper-case letter,
    # so no ASCII one either, and the name begins with an ASCII letter).
    return name if name.islower() else _ascii_lower(name)


# Which alternative of _TOKENS matched (`Match.lastindex`: the last group that closed).
_TEXT_ONLY, _COMMENT, _BOGUS, _TAG, _UNFINISHED, _LT = 1, 2, 3, 4, 7, 8


def bounded_nesting(html: str) -> str:
    """`html` as the parser will read it, well-formed and at most MAX_DEPTH deep.

    What is kept is copied from `html` in runs, from `kept` up to the next change
    (a token dropped, escaped or split, an end tag written): most HTML, cmark-gfm's
    own above all, needs no change, and then nothing is copied token by token.

    A <script> or <style> is dropped with its content up to its end tag; one whose end
    tag never comes (`the <script> tag` written in prose) is written as text instead,
    and the rest read again after it, where it took the rest of the article with it
    (a review's finding). That happens once a name at most (no end tag of that name
    comes after the first: every later one is text at once), so it stays linear."""
    out: list[str] = []
    kept = 0  # html[kept:] is not written yet
    stack: list[str] = []
    open_count: dict[str, int] = {}
    formatting = 0
    skipping = ""  # in a <script> or <style>: dropped up to its end tag
    skipped_from = (0, 0)  # the span of the tag that began it
    unclosed: set[str] = set()  # names whose end tag never comes
    position = 0
    while True:
        for match in _TOKENS.finditer(html, position):
            which = match.lastindex or _TEXT_ONLY  # group 1 always takes part: never None
            if which == _UNFINISHED and not skipping:
                # And stop: every later "<" would be read up to the end again. The text
                # before it goes too, as it always has here.
                out.append(html[kept : match.start()])
                return "".join(out)
            if skipping:
                if which == _UNFINISHED:
                    break  # the end: its end tag never came
                if which == _TAG and match.group(5) and _lower(match.group(6)) == skipping:
                    skipping = ""
                    kept = match.end()
                continue
            if match.end(1) - match.start() > TEXT_RUN:
                out.append(html[kept : match.start()])
                out.append(_split(match.group(1)))
                kept = match.end(1)
            if which == _TAG:
                end, name = match.group(5, 6)
                name = _lower(name)
                if end:
                    if not open_count.get(name):
                        out.append(html[kept : match.start(4)])  # nothing to close: dropped
                        kept = match.end()
                        continue
                    closed = []
                    while True:  # close what is open above it, then it
                        top = stack.pop()
                        open_count[top] -= 1
                        formatting -= top in FORMATTING
                        if top == name:
                            break
                        if top not in IMPLIED_END:
                            closed.append(f"</{top}>")
                    if closed:
                        out.append(html[kept : match.start(4)])
                        out.extend(closed)
                        kept = match.start(4)
                elif name in VOID:
                    pass
                elif name in DROPPED_WITH_CONTENT and name in unclosed:
                    out.append(html[kept : match.start(4)])
                    out.append(_as_text(html[match.start(4) : match.end()]))
                    kept = match.end()
                elif name in DROPPED_WITH_CONTENT:
                    out.append(html[kept : match.start(4)])
                    skipping, skipped_from = name, (match.start(4), match.end())
                elif name not in RAW_TEXT and (
                    len(stack) < MAX_DEPTH
                    and (name not in FORMATTING or formatting < MAX_FORMATTING)
                ):
                    stack.append(name)
                    open_count[name] = open_count.get(name, 0) + 1
                    formatting += name in FORMATTING
                else:  # a raw-text element's tag, or past the bounds: dropped, its text stays
                    out.append(html[kept : match.start(4)])
                    kept = match.end()
            elif which == _LT:
                out.append(html[kept : match.start(8)])
                out.append("&lt;")
                kept = match.end()
            elif which != _TEXT_ONLY:  # a comment or a bogus comment: dropped
                out.append(html[kept : match.start(which)])
                kept = match.end()
        if not skipping:
            out.append(html[kept:])
            return "".join(out)
        # Its end tag never came: the tag as text, and the rest read again after it.
        start, end = skipped_from
        out.append(_as_text(html[start:end]))
        unclosed.add(skipping)
        skipping, kept, position = "", end, end


def _as_text(tag: str) -> str:
    """A tag written as the text it is (its "<"s escaped, an attribute's among them)."""
    return tag.replace("<", "&lt;")
