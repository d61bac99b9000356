"""What a title or body may contain: pure text checks, no HTML (issue 8).

- **Characters XML 1.0 can carry.** The feed and the sitemap are XML; a character
  outside XML 1.0's `Char` production (C0 controls other than tab, newline and
  carriage return; U+FFFE and U+FFFF; lone surrogates, which a JSON `\\ud800` escape can
  produce) cannot be written into them at all. Such text is refused at validation, and
  the site strips it from whatever got past validation (`strip_xml_illegal`).

Markdown has no limit but its size (`validate_body_size`, 1 MiB): the renderer is linear
by construction (cmark-gfm, blogpublish.rendering; issue 20), so the denylist of slow
shapes python-markdown needed is gone. `validate_markdown_limits` stays by name because
migration 0009 imports it.

Pure functions of the text: the model's validators call them, and so does the site
(blogpublish.site.documents) on whatever got past validation.
"""

from __future__ import annotations

import re

from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

# XML 1.0 (Fifth Edition) §2.2: Char ::= #x9 | #xA | #xD | [#x20-#xD7FF]
#   | [#xE000-#xFFFD] | [#x10000-#x10FFFF]. Everything else is refused; the range
# excludes the surrogates, so a lone one is caught too.
XML_ILLEGAL_RE = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def first_xml_illegal(value: str) -> tuple[int, str] | None:
    """The first character XML 1.0 cannot carry, as (1-based position, character)."""
    match = XML_ILLEGAL_RE.search(value)
    return (match.start() + 1, match.group()) if match else None


def strip_xml_illegal(value: str) -> str:
    """`value` without the characters XML 1.0 cannot carry (linear; a no-op copy-free
    return when there are none, which is nearly always)."""
    return XML_ILLEGAL_RE.sub("", value) if XML_ILLEGAL_RE.search(value) else value


def validate_xml_chars(value: str) -> None:
    """Refuse what the feed could not carry, naming the first such character."""
    found = first_xml_illegal(value)
    if found is None:
        return
    position, char = found
    raise ValidationError(
        _(
            "U+%(code)04X at position %(position)d is a character the feed (XML 1.0) "
            "cannot carry; remove it."
        ),
        code="xml_char",
        params={"code": ord(char), "position": position},
    )


def validate_markdown_limits(value: str) -> None:
    """Accepts every text. Kept for migration 0009, which names it: the shape limits it
    held went with python-markdown (issue 20); the body's one limit is its size."""
