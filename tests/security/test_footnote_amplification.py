"""GitHub footnotes that multiply (found by a review of issue 21's feeds): each
reference renders as a link and the footnote as a link back to it, so 1 MiB of "[^1] "
made a 58 MB page and 70 MB feeds, and every later feed pass rendered it again. The body
is refused at validation, and by the renderer for a row written past validation, with
the count named; an article's footnotes pass."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from blogpublish.rendering import MarkdownTooLargeError, render_markdown
from publishing.models import Article
from publishing.text_limits import MAX_FOOTNOTE_REFERENCES

MULTIPLYING = "x[^1] " * 20_000 + "\n\n[^1]: the note\n"


def test_footnote_references_multiply_the_html():
    """Why there is a limit: at the limit (its definition counted too), the HTML is more
    than 30 times the text."""
    text = "x[^1] " * (MAX_FOOTNOTE_REFERENCES - 1) + "\n\n[^1]: the note\n"
    assert len(render_markdown(text)) > 30 * len(text)


def test_too_many_footnote_references_are_refused_at_validation_with_the_count(db):
    article = Article(title="Notes", body=MULTIPLYING)

    with pytest.raises(ValidationError) as caught:
        article.full_clean()

    assert "20,001 footnote references" in str(caught.value.message_dict["body"])


def test_the_renderer_refuses_them_for_a_row_written_past_validation():
    with pytest.raises(MarkdownTooLargeError, match=f"at most {MAX_FOOTNOTE_REFERENCES:,}"):
        render_markdown(MULTIPLYING)


def test_an_articles_footnotes_and_regular_expressions_render():
    body = "".join(f"Claim {n}.[^{n}] Match `[^a-z]+`.\n\n" for n in range(200))
    body += "".join(f"[^{n}]: Source {n}.\n" for n in range(200))
    html = render_markdown(body)
    assert html.count('class="footnote-backref"') == 200
