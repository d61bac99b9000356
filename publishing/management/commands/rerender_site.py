"""Every page of the site in this installation's look, by hand (issue 20).

    python manage.py rerender_site            # start or resume the re-render, here
    python manage.py rerender_site --again    # a new run even if the site is in this look
    python manage.py rerender_site --status   # how far it got, and its rate
    python manage.py rerender_site --processes 4   # pages rendered by 4 processes

It runs the re-render's passes in this process (no broker), from the checkpoint, until
every page is in this look: the same passes the workers run (publishing.services.
rerender), under the same lease, so running it beside them, or twice, writes no page
twice at once; it waits while another runner holds the lease, and a run killed at any
moment resumes where it stopped. A deploy that changes the look starts the re-render
by itself (the catch-up); this is for an operator who will not wait for it, and it
renders the pages in as many processes as this one may use CPUs (`--processes`; a
container's CPU quota counted, as loky counts them), where
a worker's pass renders in its own (publishing.renderers).
"""

from __future__ import annotations

import json
import time

from django.core.management.base import CommandError
from loky import cpu_count

from publishing.renderers import render_processes
from publishing.services.rerender import RerenderOutcome, rerender_status, site_rerender
from work.commands import DatabaseCommand

# Seconds between tries while another runner holds the lease.
WAIT_SECONDS = 1.0
# Renderer processes per CPU at most: more only wait for a CPU, each with its memory.
MAX_PROCESSES_PER_CPU = 4


class Command(DatabaseCommand):
    help = "Re-render every page of the site in this installation's look, from the checkpoint."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--status", action="store_true", help="print the re-render's progress and stop"
        )
        parser.add_argument(
            "--again",
            action="store_true",
            help="begin a new run even if the site is in this look (after a rolling deploy)",
        )
        parser.add_argument(
            "--processes",
            type=int,
            default=cpu_count(),
            help="processes rendering the pages (default: the CPUs this process may use, "
            "a container's CPU quota counted; 1: render in this process)",
        )

    def handle(self, *args, status: bool, again: bool, processes: int, **options) -> None:
        if status:
            self._status()
            return
        most = MAX_PROCESSES_PER_CPU * cpu_count()
        if not 1 <= processes <= most:
            raise CommandError(
                f"rerender_site: --processes must be from 1 to {most} "
                f"({MAX_PROCESSES_PER_CPU} per CPU this process may use), not {processes}"
            )
        with render_processes(processes):
            self._run(again=again)

    def _run(self, *, again: bool) -> None:
        while True:
            outcome = site_rerender(force=True, again=again)
            if outcome is RerenderOutcome.DONE:
                self._status()
                failed = {
                    target: (state.get("run") or {}).get("failed", 0)
                    for target, state in rerender_status().items()
                }
                if any(failed.values()):
                    raise CommandError(
                        f"rerender_site: pages left in the old look (not rendered or not "
                        f"staged twice; the log says why): {failed}; "
                        "`rerender_site --again` tries them again"
                    )
                return
            if outcome is RerenderOutcome.MORE:
                again = False  # begun: the next passes resume it
                self._progress()
            else:  # busy or overtaken: another runner goes on; take over when it stops
                time.sleep(WAIT_SECONDS)  # a poll of the lease, not a wait for a result

    def _progress(self) -> None:
        for target, state in rerender_status().items():
            run = state.get("run") or {}
            self.stdout.write(
                f"rerender_site: {target}: {run.get('done', 0)} of {run.get('total', 0)} "
                f"page(s), {run.get('left', 0)} left, {run.get('rate', 0)} pages/s"
            )

    def _status(self) -> None:
        self.stdout.write(json.dumps(rerender_status(), indent=2, sort_keys=True))
