"""Issue 19, finding 5: `export_articles DIR` writes only in DIR. A link planted at the
temporary name or at the final name is not written through: the temporary file is
created new (O_EXCL | O_NOFOLLOW) and the rename replaces the link itself."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import call_command

from publishing.markdown_files import parse
from publishing.models import Article

pytestmark = pytest.mark.django_db

ORIGINAL = "not the export's to write\n"


@pytest.fixture
def victims(tmp_path) -> dict[str, Path]:
    outside = tmp_path / "outside"
    outside.mkdir()
    found = {}
    for name in ("tmp-target", "final-target"):
        found[name] = outside / name
        found[name].write_text(ORIGINAL)
    return found


def test_links_planted_at_the_temporary_and_final_names_are_not_followed(tmp_path, victims):
    Article.objects.create(title="Exported", slug="sec-export", body="The body.")
    Article.objects.create(title="Other", slug="sec-export-2", body="Another body.")
    folder = tmp_path / "export"
    folder.mkdir()
    (folder / ".sec-export.md.tmp").symlink_to(victims["tmp-target"])
    (folder / "sec-export-2.md").symlink_to(victims["final-target"])

    call_command("export_articles", str(folder), stdout=io.StringIO())

    assert victims["tmp-target"].read_text() == ORIGINAL
    assert victims["final-target"].read_text() == ORIGINAL
    for slug, body in (("sec-export", "The body."), ("sec-export-2", "Another body.")):
        path = folder / f"{slug}.md"
        assert path.is_file() and not path.is_symlink()
        assert parse(path.read_text()).body == body
    assert sorted(p.name for p in folder.iterdir()) == ["sec-export-2.md", "sec-export.md"]


def test_prune_removes_a_link_not_what_it_points_to(tmp_path, victims):
    """`--prune` unlinks a `*.md` of DIR the export did not write: a link named so goes,
    the file it points to stays; a folder it points to is not entered."""
    Article.objects.create(title="Exported", slug="sec-prune", body="The body.")
    folder = tmp_path / "export"
    folder.mkdir()
    (folder / "stale.md").symlink_to(victims["final-target"])
    (folder / "stale-folder.md").symlink_to(victims["final-target"].parent)

    call_command("export_articles", str(folder), "--prune", stdout=io.StringIO())

    assert victims["final-target"].read_text() == ORIGINAL
    assert sorted(p.name for p in victims["final-target"].parent.iterdir()) == [
        "final-target",
        "tmp-target",
    ]
    assert sorted(p.name for p in folder.iterdir()) == ["sec-prune.md"]
