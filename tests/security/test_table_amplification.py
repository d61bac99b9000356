"""GitHub tables that multiply (found by the issue 19 review): cmark-gfm pads each row
to its header's columns, so 120 KB of a 500-column header over short rows made 106 MB
of HTML and took 3 GB. The body is refused at validation, and by the renderer for a
row written past validation, with the count named; real tables pass."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from blogpublish.rendering import MarkdownTooLargeError, render_markdown
from publishing.models import Article
from publishing.text_limits import MAX_TABLE_CELLS, table_cells


def table(columns: int, rows: int, *, row: str = "x") -> str:
    return "|" + "a|" * columns + "\n|" + "-|" * columns + "\n" + f"{row}\n" * rows


MULTIPLYING = table(500, 2000) + "\npara\n\n"


def test_cells_are_counted_as_the_header_pads_them():
    assert table_cells(table(3, 4)) == 12
    assert table_cells(table(3, 4) + "\nafter\n\n" + table(2, 5)) == 22
    assert table_cells("a | b\n--- | ---\n1 | 2\n\n---\n\nno | table") == 2
    assert table_cells(MULTIPLYING) == 1_000_000


def test_a_multiplying_table_is_refused_at_validation_with_the_count(db):
    article = Article(title="Tables", body=MULTIPLYING)

    with pytest.raises(ValidationError) as caught:
        article.full_clean()

    assert "1,000,000 cells" in str(caught.value.message_dict["body"])


def test_the_renderer_refuses_it_for_a_row_written_past_validation():
    with pytest.raises(MarkdownTooLargeError, match=f"at most {MAX_TABLE_CELLS:,}"):
        render_markdown(MULTIPLYING)


def test_a_real_table_renders():
    html = render_markdown(table(20, 2000, row="| 1 | 2 | 3 |"))

    assert html.count("<tr>") == 2001
