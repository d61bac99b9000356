"""`manage.py restore_check [--repair]`: verify a restored installation (docs/operations.md,
"Backups"). With --repair, the full check runs first, in this process (it needs the
database and the site's storage, not the broker): it writes the live pages that are
missing and rebuilds the shared documents; a page it left whose text is not its live
version is then written again whole. Exits 1 naming every problem."""

from __future__ import annotations

from django.core.management.base import CommandError

from blogpublish.site import StaticSitePublisher
from blogpublish.site.check import installation_check
from blogpublish.storage import site_storage
from publishing.publishers import get_publishers
from publishing.services import (
    shared_views_lease_held_until,
    shared_views_whole,
    site_reconcile,
)
from work.commands import DatabaseCommand


class Command(DatabaseCommand):
    help = "Verify a restored installation: pages present and current, images, counts."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--repair",
            action="store_true",
            help="run the full check first (rebuilds a site restored empty)",
        )

    def handle(self, *args, repair: bool = False, **options) -> None:
        if repair:
            self.stdout.write("running the full check (pages, shared documents)…")
            # A rebuild longer than a pass goes on pass by pass: here, to the end. Skipped
            # (another full check or a heavy job running): this process's own all the same.
            done = site_reconcile(whole=True)
            if done is None:
                done = shared_views_whole(full=True)
            if not done:
                self._not_repaired()
        report = installation_check(site_storage())
        if repair and report.pages_differing:
            # Pages whose marks are right and text is not (damaged below the first
            # bytes the full check reads): written again whole, then checked again.
            site = next(p for p in get_publishers() if isinstance(p, StaticSitePublisher))
            written = site.write_pages_again(report.pages_differing)
            self.stdout.write(f"{written} page(s) written again whole")
            report = installation_check(site_storage())
        counts = ", ".join(f"{n} {status}" for status, n in sorted(report.counts.items()))
        self.stdout.write(
            f"{report.pages} live pages, {report.images} images named, articles: {counts or 'none'}"
        )
        if not report.ok:
            for problem in report.problems:
                self.stderr.write(f"  {problem}")
            raise CommandError(
                f"{len(report.problems)} problems"
                + ("" if repair else " (restore_check --repair rebuilds a site restored empty)")
            )
        self.stdout.write(self.style.SUCCESS("the installation is whole"))

    def _not_repaired(self) -> None:
        """Why the pages below may be missing: a pass held the lease past the wait (a
        dump taken during a pass and restored within its lease), or the pass failed."""
        held = shared_views_lease_held_until()
        if held is None:
            why = "it failed or was overtaken (the log says which)"
        else:
            why = (
                f"the refresher's lease is held until {held:%Y-%m-%d %H:%M:%S %Z} (by a pass "
                "running now, or, restored with the dump, by one whose process is gone)"
            )
        self.stderr.write(f"the full check did not run to its end: {why}; run --repair again after")
