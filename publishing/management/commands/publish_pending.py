"""The backup executor: publish due articles in this process, without the broker.

    python manage.py publish_pending [--limit N] [--loop] [--interval S]

It needs the database and the publishing targets, not Redis: run it from cron or a
Kubernetes CronJob while the broker is down. It claims rows through the same services
as the workers, so running it beside them (or twice) publishes nothing twice. Then it
sends the due webhook deliveries the same way, each under its task's time limits and at
most once a pass (one line more when there were any; services.deliveries_deliver_due).
"""

from __future__ import annotations

import time

from django.core.management.base import CommandError
from django.db import DatabaseError, close_old_connections

from publishing.services import deliveries_deliver_due, publish_pending
from publishing.tasks import publish_article
from work.commands import DatabaseCommand

# The longest pause between passes with --loop: a day.
MAX_INTERVAL = 86_400
# The most attempts per pass: past what a pass can do in a lease, and what the database
# takes as a LIMIT (100000000000000000000 was an IntegrityError's traceback).
MAX_LIMIT = 1_000_000


class Command(DatabaseCommand):
    help = "Publish due pending articles in this process (no broker needed)."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--limit", type=int, default=500, help="attempts per pass (500, at most 1,000,000)"
        )
        parser.add_argument("--loop", action="store_true", help="keep going until stopped")
        parser.add_argument(
            "--interval", type=float, default=5.0, help="seconds between passes with --loop (5)"
        )

    def handle(self, *args, limit: int, loop: bool, interval: float, **options) -> None:
        if not 1 <= limit <= MAX_LIMIT or not 0 < interval <= MAX_INTERVAL:
            raise CommandError(
                f"--limit must be from 1 to {MAX_LIMIT:,} and --interval between 0 and "
                f"{MAX_INTERVAL:,} s."
            )
        if not loop:
            self._pass(limit)
            return
        try:
            while True:
                try:
                    self._pass(limit)
                except DatabaseError as exc:
                    # A dropped or restarting database: said, and the next pass tries
                    # again on a new connection (a review's finding: the loop ended here).
                    self.stderr.write(f"publish_pending: the pass failed, tried again: {exc}")
                finally:
                    close_old_connections()
                time.sleep(interval)  # a cron-like pause between passes, not a wait
        except KeyboardInterrupt:
            # Ctrl-C: its traceback said nothing. A row claimed by a pass cut short is
            # taken again once its lease runs out, as any attempt's.
            self.stdout.write("publish_pending: stopped")

    def _pass(self, limit: int) -> None:
        outcomes = publish_pending(limit=limit, retry_in=publish_article.backoff)
        summary = ", ".join(f"{n} {o}" for o, n in sorted(outcomes.items())) or "nothing due"
        self.stdout.write(f"publish_pending: {summary}")
        delivered = deliveries_deliver_due(limit=limit)
        if delivered:
            summary = ", ".join(f"{n} {o}" for o, n in sorted(delivered.items()))
            self.stdout.write(f"publish_pending: webhook deliveries: {summary}")
