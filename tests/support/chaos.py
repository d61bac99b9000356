"""Test publishers that a worker process loads from tests/settings.py.

`ChaosPublisher` fails or stalls for the slugs named in CHAOS_FILE; the file is read on
every call, so a test changes behaviour while the worker runs:

    {"<slug>": {"fail": "transient" | "permanent" | "crash", "until_attempt": 3,
                "sleep": 5, "sleep_until_attempt": 2}}

fails while the attempt number is below `until_attempt` (always, if absent), and
first sleeps `sleep` seconds while the attempt is below `sleep_until_attempt` (always,
if absent). A sleeping attempt leaves its pid in RUN_DIR/pids/<slug>.<attempt>, so a
test can kill exactly the process that is publishing. "crash" kills the process that
runs the attempt (SIGKILL): a segfault or the OOM killer, as the worker sees it.

`JournalPublisher` runs last and appends one line per completed publisher run,
"<slug> <attempt> <content_hash>", to JOURNAL_FILE: the count of page writes.
"""

from __future__ import annotations

import json
import os
import signal
import time

from django.conf import settings

from publishing.exceptions import PermanentPublishError, TransientPublishError


def read_chaos() -> dict:
    try:
        return json.loads(settings.CHAOS_FILE.read_text())
    except FileNotFoundError:
        return {}


def write_chaos(rules: dict) -> None:
    tmp = settings.CHAOS_FILE.with_suffix(".tmp")
    tmp.write_text(json.dumps(rules))
    os.replace(tmp, settings.CHAOS_FILE)


class ChaosPublisher:
    def publish(self, article) -> None:
        rule = read_chaos().get(article.slug)
        if not rule:
            return
        self._stall(article, rule)
        until = rule.get("until_attempt")
        if until is not None and article.attempts >= until:
            return
        if rule.get("fail") == "permanent":
            raise PermanentPublishError(f"chaos: permanent failure of {article.slug}")
        if rule.get("fail") == "transient":
            raise TransientPublishError(f"chaos: transient failure of {article.slug}")
        if rule.get("fail") == "crash":
            os.kill(os.getpid(), signal.SIGKILL)

    @staticmethod
    def _stall(article, rule: dict) -> None:
        sleep_until = rule.get("sleep_until_attempt")
        if rule.get("sleep") and (sleep_until is None or article.attempts < sleep_until):
            pid_file = settings.RUN_DIR / "pids" / f"{article.slug}.{article.attempts}"
            pid_file.parent.mkdir(exist_ok=True)
            pid_file.write_text(str(os.getpid()))
            time.sleep(rule["sleep"])  # stands for a slow target; tests kill it meanwhile

    def unpublish(self, article) -> None:
        return None


class JournalPublisher:
    def publish(self, article) -> None:
        line = f"{article.slug} {article.attempts} {article.content_hash}\n"
        # One O_APPEND write per line: lines from concurrent processes never interleave.
        fd = os.open(settings.JOURNAL_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode("utf-8"))
        finally:
            os.close(fd)

    def unpublish(self, article) -> None:
        return None


def journal_entries(slug: str) -> list[tuple[int, str]]:
    try:
        lines = settings.JOURNAL_FILE.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    entries = []
    for line in lines:
        entry_slug, attempt, content_hash = line.rsplit(" ", 2)
        if entry_slug == slug:
            entries.append((int(attempt), content_hash))
    return entries
