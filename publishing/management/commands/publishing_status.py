"""What the pipeline is doing, for a person at a terminal (the same as /status.json)."""

from __future__ import annotations

import json

from publishing.selectors import pipeline_status
from work.commands import DatabaseCommand


class Command(DatabaseCommand):
    help = "Show pending, scheduled, published and dead articles, and what is stuck."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--json", action="store_true", help="print /status.json's document")

    def handle(self, *args, json: bool = False, **options) -> None:
        status = pipeline_status()
        if json:
            self.stdout.write(_json_dumps(status))
            return
        counts = status["counts"]
        self.stdout.write(
            "articles: "
            + ", ".join(f"{counts[k]} {k}" for k in ("pending", "scheduled", "published", "dead"))
        )
        self.stdout.write(f"publishing now (lease held): {status['in_flight']}")
        oldest = status["oldest_due_pending"]
        if oldest:
            self.stdout.write(
                f"oldest due pending: #{oldest['id']} “{oldest['title']}”, waiting "
                f"{oldest['waiting_seconds']:.0f}s (attempts {oldest['attempts']})"
            )
        if status["stuck"]:
            self.stdout.write(self.style.ERROR(f"STUCK: {status['stuck']} article(s)"))
        for dead in status["dead"]:
            self.stdout.write(
                self.style.WARNING(
                    f"dead: #{dead['id']} “{dead['title']}” after {dead['attempts']} "
                    f"attempt(s): {dead['last_error'][:120]}"
                )
            )


def _json_dumps(value) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)
