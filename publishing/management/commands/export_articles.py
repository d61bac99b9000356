"""Every article as a Markdown file with YAML front matter (docs/import.md).

    python manage.py export_articles DIR

One `<slug>.md` per article in DIR (made if missing), in the format `import_articles`
reads: `title`, `slug`, `date` (publish_at, UTC), then the body as stored. Importing
the folder into an empty database gives the same articles.
"""

from __future__ import annotations

import os
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from publishing.markdown_files import render
from publishing.models import Article


class Command(BaseCommand):
    help = "Write every article to DIR as Markdown with YAML front matter."

    def add_arguments(self, parser) -> None:
        parser.add_argument("dir", metavar="DIR", help="the folder to write (made if missing)")

    def handle(self, *args, dir: str, **options) -> None:
        folder = Path(dir)
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CommandError(f"cannot make {folder}: {exc.strerror or exc}") from exc
        written = 0
        rows = Article.objects.order_by("id").values_list("title", "slug", "publish_at", "body")
        for title, slug, publish_at, body in rows.iterator(chunk_size=500):
            text = render(title=title, slug=slug, publish_at=publish_at, body=body)
            path = folder / f"{slug}.md"
            tmp = path.with_name(f".{path.name}.tmp")
            try:
                tmp.write_text(text, encoding="utf-8")
                os.replace(tmp, path)
            except OSError as exc:
                raise CommandError(f"cannot write {path}: {exc.strerror or exc}") from exc
            written += 1
        self.stdout.write(f"export_articles: {written} article(s) written to {folder}")
