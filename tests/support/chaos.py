"""Test publishers that a worker process loads from tests/settings.py.

`ChaosPublisher` fails or stalls for the slugs named in CHAOS_FILE; the file is read on
every call, so a test changes behaviour while the worker runs:

    {"<slug>": {"fail": "transient" | "permanent" | "crash", "until_attempt": 3,
                "hold": 5, "hold_until_attempt": 2, "stuck": true,
                "hold_at": "before-check" | "before-write"}}

fails while the attempt number is below `until_attempt` (always, if absent). With
`hold`, an attempt below `hold_until_attempt` (every attempt, if absent) first waits
until the test calls `release(slug)`, for at most `hold` seconds: a slow target whose
end the test decides. A held attempt leaves its pid in RUN_DIR/pids/<slug>.<attempt>,
so a test can kill exactly the process that is publishing. "crash" kills the process that
runs the attempt (SIGKILL): a segfault or the OOM killer, as the worker sees it. With
`"stuck": true` a held attempt also ignores the soft time limit, as code stuck in a call
that never returns to Python would: only the task's hard time limit ends it.

With `hold_at`, the hold is inside the site publisher instead (`HeldSitePublisher`, the
site's own publisher in every test worker): "before-check" when its page is staged,
before the page guard and the token check; "before-write" under the guard, after the
token check, just before the rename or PUT that makes the page live (issue 17).

`JournalPublisher` runs last and appends one line per completed publisher run,
"<slug> <attempt> <content_hash>", to JOURNAL_FILE: the count of page writes.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from collections.abc import Sequence

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings

from blogpublish.site.publisher import StaticSitePublisher
from publishing.exceptions import PermanentPublishError, TransientPublishError
from publishing.publishers import BasePublisher
from tests.support.waiting import wait_for

# The rule (and release file) of the full check's `check`: {"(reconcile)": {"hold": 30}}.
RECONCILE_RULE = "(reconcile)"
# The rule of a refresh pass: {"(refresh)": {"hold": 30}}.
REFRESH_RULE = "(refresh)"


def read_chaos() -> dict:
    try:
        return json.loads(settings.CHAOS_FILE.read_text())
    except FileNotFoundError:
        return {}


def release_file(slug: str):
    return settings.RUN_DIR / "release" / slug


def release(slug: str) -> None:
    """Let the held attempts of `slug` go on (and later ones pass without holding)."""
    path = release_file(slug)
    path.parent.mkdir(exist_ok=True)
    path.touch()


def write_chaos(rules: dict) -> None:
    tmp = settings.CHAOS_FILE.with_suffix(".tmp")
    tmp.write_text(json.dumps(rules))
    os.replace(tmp, settings.CHAOS_FILE)


class ChaosPublisher(BasePublisher):
    def publish(self, article) -> None:
        rule = read_chaos().get(article.slug)
        if not rule:
            return
        if not rule.get("hold_at"):
            hold(article, rule)
        until = rule.get("until_attempt")
        if until is not None and article.attempts >= until:
            return
        if rule.get("fail") == "permanent":
            raise PermanentPublishError(f"chaos: permanent failure of {article.slug}")
        if rule.get("fail") == "transient":
            raise TransientPublishError(f"chaos: transient failure of {article.slug}")
        if rule.get("fail") == "crash":
            os.kill(os.getpid(), signal.SIGKILL)

    def unpublish(self, article) -> None:
        return None

    def check(self) -> None:
        """The full check's reading of the target: held like an attempt by the rule of
        RECONCILE_RULE (with `"hold_at": "site-listing"`, the site's own check is held
        instead, at its listing: HeldSitePublisher)."""
        rule = read_chaos().get(RECONCILE_RULE)
        if rule and rule.get("hold") and not rule.get("hold_at"):
            _hold_pass(RECONCILE_RULE, rule["hold"])

    def refresh(self, *, fence=None, busy=False) -> None:
        """A pass of the shared views (it runs before the site's, after the claim): held
        like the full check by the rule of REFRESH_RULE."""
        rule = read_chaos().get(REFRESH_RULE)
        if rule and rule.get("hold"):
            _hold_pass(REFRESH_RULE, rule["hold"])


def _hold_pass(name: str, seconds: float) -> None:
    """Leave this process's pid in RUN_DIR/pids/<name>, then wait for `release(name)`
    for at most `seconds`."""
    pid_file = settings.RUN_DIR / "pids" / name
    pid_file.parent.mkdir(exist_ok=True)
    pid_file.write_text(str(os.getpid()))
    with contextlib.suppress(AssertionError):
        wait_for(release_file(name).exists, timeout=seconds, interval=0.02)


def hold(article, rule: dict) -> None:
    """Wait for `release(slug)`, at most rule["hold"] seconds, if the rule holds this attempt."""
    hold_until = rule.get("hold_until_attempt")
    if not rule.get("hold") or (hold_until is not None and article.attempts >= hold_until):
        return
    pid_file = settings.RUN_DIR / "pids" / f"{article.slug}.{article.attempts}"
    pid_file.parent.mkdir(exist_ok=True)
    pid_file.write_text(str(os.getpid()))
    deadline = time.monotonic() + rule["hold"]
    while True:
        try:
            with contextlib.suppress(AssertionError):  # past the deadline: a slow target ends
                left = max(0.0, deadline - time.monotonic())
                wait_for(release_file(article.slug).exists, timeout=left, interval=0.02)
            return
        except SoftTimeLimitExceeded:
            if not rule.get("stuck"):
                raise


class _HeldStorage:
    """The site's storage, with a hold before `stage` or before `commit`."""

    def __init__(self, site, article, rule: dict):
        self._site, self._article, self._rule = site, article, rule

    def __getattr__(self, name: str):
        return getattr(self._site, name)

    def stage(self, rel, data):
        if self._rule["hold_at"] == "before-check":
            hold(self._article, self._rule)
        return self._site.stage(rel, data)

    def commit(self, staged) -> None:
        if self._rule["hold_at"] == "before-write":
            hold(self._article, self._rule)
        self._site.commit(staged)


class _ListingHeld:
    """The site's storage, its listing of the page folders held by `rule`."""

    def __init__(self, site, rule: dict):
        self._site, self._rule = site, rule

    def __getattr__(self, name: str):
        return getattr(self._site, name)

    def page_dirs(self):
        _hold_pass(RECONCILE_RULE, self._rule["hold"])
        return self._site.page_dirs()


class HeldSitePublisher(StaticSitePublisher):
    """The site's publisher, held inside its page write for a slug whose rule has
    `hold_at`, or inside its full check's reading, at the listing, by RECONCILE_RULE's
    `"hold_at": "site-listing"`; exactly the site's publisher otherwise."""

    def check(self) -> None:
        rule = read_chaos().get(RECONCILE_RULE) or {}
        if rule.get("hold_at") != "site-listing":
            super().check()
            return
        StaticSitePublisher(_ListingHeld(self.site, rule)).check()

    def publish(self, article) -> None:
        rule = read_chaos().get(article.slug) or {}
        if not rule.get("hold_at"):
            super().publish(article)
            return
        StaticSitePublisher(_HeldStorage(self.site, article, rule)).publish(article)

    def publish_many(self, articles: list, *, listed_with: Sequence = ()) -> dict[int, Exception]:
        rules = read_chaos()
        if not any((rules.get(a.slug) or {}).get("hold_at") for a in articles):
            return super().publish_many(articles, listed_with=listed_with)
        return BasePublisher.publish_many(self, articles)  # one by one: each may be held


class JournalPublisher(BasePublisher):
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
