"""Bring a blog in: Markdown files with YAML front matter → articles (docs/import.md).

    python manage.py import_articles PATH [PATH …] [--dry-run]

Files or folders (recursively: *.md, *.markdown). Matched by slug: the same content
changes nothing, other content is an edit. A bad file is named with its reason and
never stops the rest; the exit status is 1 when any file failed. The last line is the
summary: `created N, updated N, unchanged N, skipped N, failed N`.
"""

from __future__ import annotations

import sys

from django.core.management.base import CommandError
from tqdm import tqdm

from publishing.services.importing import Action, FileResult, articles_import, find_files
from work.commands import DatabaseCommand

# The aliases not kept named one per line, at most this many (then how many more).
ALIASES_SHOWN = 20


class Command(DatabaseCommand):
    help = "Import Markdown files with YAML front matter (Jekyll, Hugo) as articles."

    def add_arguments(self, parser) -> None:
        parser.add_argument("paths", nargs="+", metavar="PATH", help="files or folders")
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="say what would be created and updated; write nothing, send nothing",
        )

    def handle(self, *args, paths: list[str], dry_run: bool, verbosity: int, **options):
        # A bar only for a person watching: on a terminal, and not in a dry run (whose
        # output is the list of what would change).
        interactive = self.stdout.isatty() and not dry_run and verbosity >= 1
        bar = None
        if interactive:
            total = sum(1 for _ in find_files(paths))
            bar = tqdm(total=total, unit="file", file=sys.stderr, dynamic_ncols=True)

        def on_result(result: FileResult) -> None:
            if result.action == Action.FAILED:
                line = self.style.ERROR(f"failed: {result.path}: {result.reason}")
                (bar.write(line, file=sys.stderr) if bar else self.stderr.write(line))
            elif result.action == Action.SKIPPED and result.reason:
                self.stdout.write(f"skipped: {result.path}: {result.reason}")
            elif dry_run and result.action in (Action.CREATED, Action.UPDATED):
                verb = "would create" if result.action == Action.CREATED else "would update"
                self.stdout.write(f"{verb}: {result.path} ({result.slug})")
            elif verbosity >= 2:
                self.stdout.write(f"{result.action}: {result.path}")
            if bar is not None:
                bar.update(1)

        try:
            report = articles_import(paths, dry_run=dry_run, on_result=on_result)
        finally:
            if bar is not None:
                bar.close()
        if report.ignored_keys:
            keys = ", ".join(sorted(report.ignored_keys))
            self.stdout.write(f"ignored front matter keys: {keys}")
        shown = report.aliases_not_kept[:ALIASES_SHOWN]
        for line in shown:
            self.stdout.write(f"alias not kept: {line}")
        if len(report.aliases_not_kept) > len(shown):
            self.stdout.write(f"… and {len(report.aliases_not_kept) - len(shown)} more aliases")
        for line in report.notes[:ALIASES_SHOWN]:
            self.stdout.write(f"note: {line}")
        if len(report.notes) > ALIASES_SHOWN:
            self.stdout.write(f"… and {len(report.notes) - ALIASES_SHOWN} more notes")
        if not any(report.counts.values()):
            self.stdout.write(
                f"no Markdown files (.md, .markdown) found in {', '.join(map(str, paths))}"
            )
        prefix = "import_articles (dry run, nothing written)" if dry_run else "import_articles"
        self.stdout.write(f"{prefix}: {report.summary}")
        if report.failures:
            raise CommandError(
                f"{len(report.failures)} file(s) failed (named above with the reason)",
                returncode=1,
            )
