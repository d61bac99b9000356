"""Debian's Chromium for the browser tests (scripts/install-tools.sh installs it), with
the flags this machine's closed network needs (no background connections)."""

from __future__ import annotations

from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def launch(playwright):
    """A headless Chromium; the test fails (not skips) when it is not installed."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: run scripts/install-tools.sh (make install does)")
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)


def log_in(page, base_url: str, username: str, password: str, *, then: str) -> None:
    """Log in to the admin at `base_url` and land on the path `then`."""
    page.goto(f"{base_url}/admin/login/?next={then}")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("input[type=submit]")
    page.wait_for_url(f"**{then}")
