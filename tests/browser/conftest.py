"""The browser tests' fixtures: a headless Chromium, and where screenshots go."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from django.conf import settings

from tests.support.browser import launch
from tests.support.waiting import wait_for


@pytest.fixture
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch(playwright)
        yield browser
        browser.close()
    # The live server answers each connection in a thread with its own database
    # connection, closed when the browser's keep-alive connection ends; PostgreSQL
    # refuses to drop the test database while one is open.
    wait_for(
        lambda: not any("process_request_thread" in t.name for t in threading.enumerate()),
        what="the live server's request threads to end",
    )


@pytest.fixture
def screenshots() -> list[Path]:
    """Where the screenshots go: the run's directory, and the docs' when asked."""
    folders = [settings.RUN_DIR / "screenshots"]
    if os.environ.get("BLOGPUBLISH_SCREENSHOTS_DIR"):
        folders.append(Path(os.environ["BLOGPUBLISH_SCREENSHOTS_DIR"]))
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
    return folders
