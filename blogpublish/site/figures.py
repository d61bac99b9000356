"""Images that fit (issue 21, item 6): every `<img>` of an article's sanitised HTML is
given `loading="lazy"` and `decoding="async"`; an image uploaded from the desk is also
given its size (`width`, `height`: no jump when it loads) and its smaller copies
(blogpublish.desk.renditions) in `srcset` and `sizes`, the WebP ones in a `<picture>`'s
`<source>`, so a browser loads the smallest that is sharp enough for its screen.

Applied after the sanitiser (blogpublish.rendering), to its output, whose shape is
known: html5ever writes every attribute value in double quotes with `"` escaped, and
escapes `<` in text, so every `<` starts a tag and `TAG` reads each tag whole; an
`<img` inside another tag's attribute value is part of that tag and never rewritten.
What is added is built here from the database's paths and numbers, never from the
article's text, which is kept as the sanitiser left it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from blogpublish.desk.renditions import MIME, Renditions
from blogpublish.site import paths

# A whole tag of the sanitiser's output (see above), and an attribute in it.
TAG = re.compile(r'<(?:[^>"]|"[^"]*")*>')
IMG = re.compile(r"<img\b", re.I)
ATTRIBUTE = re.compile(r'([^\s"=/>]+)(?:="([^"]*)")?')
# The text column: 42rem less 2 × 1.25rem of padding (base.html) once the screen is
# wider than 42rem; the screen's width less the padding below that.
SIZES = "(min-width: 42rem) 632px, calc(100vw - 2.5rem)"
MEDIA_SRC = re.compile(r"media/[0-9a-f]{64}\.(?:png|jpg|gif|webp)$")

# Looks up the copies of the images uploaded from the desk: {media path: Renditions}.
Lookup = Callable[[Iterable[str]], dict[str, Renditions]]


def fit(html: str, lookup: Lookup) -> str:
    """`html` (the sanitiser's output) with every image sized, offered in its copies and
    loaded lazily; one `lookup` for the whole text."""
    if not IMG.search(html):  # most articles: no image, and no tag to read one by one
        return html
    tags = [m for m in TAG.finditer(html) if IMG.match(m[0])]
    if not tags:
        return html
    attributes = [dict(ATTRIBUTE.findall(m[0][4:].rstrip("/>"))) for m in tags]
    known = lookup({path for a in attributes if (path := media_path(a.get("src", "")))})
    out, last = [], 0
    for match, attrs in zip(tags, attributes, strict=True):
        out.append(html[last : match.start()])
        out.append(fitted(attrs, known.get(media_path(attrs.get("src", "")) or "")))
        last = match.end()
    out.append(html[last:])
    return "".join(out)


def media_path(src: str) -> str | None:
    """`media/<sha256>.<ext>` when `src` is an image uploaded to this site, else None."""
    prefix = f"{paths.site_path()}/"
    if not src.startswith(prefix):
        return None
    rel = src[len(prefix) :]
    return rel if MEDIA_SRC.match(rel) else None


def fitted(attrs: dict[str, str], made: Renditions | None) -> str:
    """The `<img>` (in a `<picture>` when it has WebP copies and is not WebP itself)."""
    # An image without a text (raw HTML's `<img>`) is said to be decorative (`alt=""`),
    # as HTML requires of an `<img>` with none (the Nu checker's error).
    attrs = {**attrs, "alt": attrs.get("alt", ""), "loading": "lazy", "decoding": "async"}
    if made is None:
        return _tag("img", attrs)
    if "width" not in attrs and "height" not in attrs:
        attrs["width"], attrs["height"] = str(made.width), str(made.height)
    original = f"{attrs['src']} {made.width}w"
    own_type = MIME[attrs["src"].rsplit(".", 1)[-1]]
    same = [c for c in made.copies if c.type == own_type]
    if same:  # the copies in its own format, and itself as the widest
        attrs["srcset"] = ", ".join([*map(_candidate, same), original])
        attrs["sizes"] = SIZES
    img = _tag("img", attrs)
    webp = [c for c in made.copies if c.type == "image/webp"]
    if not webp or own_type == "image/webp":
        return img
    source = {
        "type": "image/webp",
        "srcset": ", ".join(map(_candidate, webp)),
        "sizes": SIZES,
    }
    return f"<picture>{_tag('source', source)}{img}</picture>"


def _candidate(copy) -> str:
    return f"{paths.site_path()}/{copy.path} {copy.width}w"


def _tag(name: str, attrs: dict[str, str]) -> str:
    """A start tag; the values are the sanitiser's (already escaped) or built here from
    paths of hex digits and numbers, which need no escaping."""
    text = " ".join(f'{key}="{value}"' for key, value in attrs.items())
    return f"<{name} {text}>"
