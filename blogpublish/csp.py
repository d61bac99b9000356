"""The Content-Security-Policy of the site's pages.

The pages run no script, embed nothing, post no form, and style themselves with the one
`<style>` block of `base.html`, allowed by its hash (so an injected `<style>` is not).
`style-src-attr` allows the `style` attributes the renderer keeps (only `text-align`,
on table cells: blogpublish.rendering); a browser without it falls back to `style-src`
and merely loses the alignment. Images load from the site and over https, or only from
the site with `SITE_IMAGES_SELF_ONLY`. A production web server sends the same header
(docs/site.md has the nginx lines; a test keeps them equal to `site_policy`).
"""

from __future__ import annotations

import base64
import hashlib
import re
from functools import lru_cache

from django.conf import settings
from django.template import Engine

STYLE_BLOCK = re.compile(r"<style>(.*?)</style>", re.DOTALL)


@lru_cache(maxsize=1)
def style_hashes() -> tuple[str, ...]:
    """CSP sources of the inline style blocks of the site's base template (static text:
    the template puts no variable in them, so the source is what pages carry)."""
    source = Engine.get_default().get_template("blogpublish/base.html").source
    digests = (hashlib.sha256(block.encode()).digest() for block in STYLE_BLOCK.findall(source))
    return tuple(f"'sha256-{base64.b64encode(digest).decode()}'" for digest in digests)


def site_policy(*, images_self_only: bool) -> str:
    return "; ".join(policy_directives(images_self_only=images_self_only))


def meta_policy() -> str:
    """The site's policy for a `<meta>` element (the admin's preview): the same, less
    `frame-ancestors`, which browsers ignore there (the preview lives in a frame)."""
    directives = policy_directives(images_self_only=settings.SITE_IMAGES_SELF_ONLY)
    return "; ".join(d for d in directives if not d.startswith("frame-ancestors"))


def policy_directives(*, images_self_only: bool) -> list[str]:
    images = "'self'" if images_self_only else "'self' https:"
    styles = " ".join(style_hashes()) or "'none'"
    return [
        "default-src 'none'",
        f"img-src {images}",
        f"style-src {styles}",
        "style-src-attr 'unsafe-inline'",
        "script-src 'none'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    ]
