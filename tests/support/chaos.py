"""Test publishers that a worker process loads from tests/settings.py.

`ChaosPublisher` fails or stalls for the slugs named in CHAOS_FILE; the file is read on
every call, so a test changes behaviour while the worker runs:

    {"<slug>": {"fail": "transient" | "permanent", "until_attempt": 3, "sleep": 5}}

fails while the attempt number is below `until_attempt` (always, if absent), and
sleeps `sleep` seconds first. `JournalPublisher` runs last and appends one line per
completed publisher run, "<slug> <attempt> <content_hash>", to JOURNAL_FILE: the
count of page writes.
"""

from __future__ import annotations

import json
import os
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
        time.sleep(rule.get("sleep", 0))
        until = rule.get("until_attempt")
        if until is not None and article.attempts >= until:
            return
        if rule.get("fail") == "permanent":
            raise PermanentPublishError(f"chaos: permanent failure of {article.slug}")
        if rule.get("fail") == "transient":
            raise TransientPublishError(f"chaos: transient failure of {article.slug}")

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
