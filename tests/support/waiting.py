"""Polling with a deadline: the tests wait for a condition, never for a clock."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(
    condition: Callable[[], T], *, timeout: float = 30.0, interval: float = 0.05, what: str = ""
) -> T:
    """Return the first truthy value of `condition()`, or fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or condition}")
        time.sleep(interval)


def assert_flower_refuses_to_start(proc, named: str) -> None:
    """`proc` (a tests.support.processes.Proc) exits non-zero, its log saying why with
    `named` in it; it is stopped in any case."""
    try:
        wait_for(lambda: not proc.alive(), timeout=60, what=f"{proc.name} to refuse to start")
        assert proc.popen.returncode != 0
        log = proc.tail()
        assert "Flower does not start" in log and named in log, log
    finally:
        proc.stop()


def wait_status(article, status: str, timeout: float = 45.0, *, same_content: bool = False):
    """Poll until the article (an Article, or its id) has `status`, and with
    `same_content` the content it has now (an Article only); the row as it is then."""
    from publishing.models import Article

    article_id = getattr(article, "pk", article)
    rows = Article.objects.filter(pk=article_id, status=status)
    if same_content:
        rows = rows.filter(content_hash=article.content_hash)
    wait_for(rows.exists, timeout=timeout, what=f"article {article_id} to be {status}")
    if isinstance(article, Article):
        article.refresh_from_db()
        return article
    return Article.objects.get(pk=article_id)
