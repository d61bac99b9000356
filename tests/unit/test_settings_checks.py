"""Settings that make no sense together stop start-up with a message naming them."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from config.checks import publishing_settings_problems
from tests.support.processes import ROOT

GOOD = dict(
    lease=120,
    time_limit=108,
    soft_time_limit=96,
    retry_backoff_max=600,
    catchup_interval=120,
    eta_horizon=240,
    stale_after=60,
    stuck_after=900,
    visibility_timeout=3600,
)


def test_the_defaults_fit_together():
    assert publishing_settings_problems(**GOOD) == []


def test_a_process_with_the_default_settings_starts():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PUBLISH_", "CELERY_"))}
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env={**env, "DJANGO_SETTINGS_MODULE": "config.settings"},
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        # the task may outlive its lease
        ({"time_limit": 130}, "PUBLISH_LEASE_SECONDS (120)"),
        # waits the broker would redeliver before they end
        ({"retry_backoff_max": 3600}, "PUBLISH_RETRY_BACKOFF_MAX"),
        ({"eta_horizon": 4000}, "ETA horizon"),
        ({"lease": 4000, "time_limit": 3000, "soft_time_limit": 2000}, "PUBLISH_LEASE_SECONDS"),
        # a safety net that never runs, or runs on everything at once
        ({"catchup_interval": 0}, "PUBLISH_CATCHUP_INTERVAL must be positive"),
        ({"stale_after": 0}, "PUBLISH_STALE_AFTER must be positive"),
        # an alarm that sounds before the catch-up had its chance
        ({"stuck_after": 100}, "PUBLISH_STUCK_AFTER (100)"),
        # a webhook call that the soft time limit would cut short
        ({"webhook_timeout": 95}, "PUBLISH_WEBHOOK_TIMEOUT (95)"),
    ],
)
def test_each_bad_combination_is_named(changes, named):
    problems = publishing_settings_problems(**(GOOD | changes))

    assert any(named in p for p in problems), problems


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"PUBLISH_CATCHUP_INTERVAL": "2000"}, "ETA horizon"),
        ({"PUBLISH_STUCK_AFTER": "30"}, "PUBLISH_STUCK_AFTER"),
        ({"PUBLISH_MAX_ATTEMPTS": "many"}, "PUBLISH_MAX_ATTEMPTS='many' is not a number"),
        ({"LOG_FORMAT": "xml"}, "LOG_FORMAT"),
    ],
)
def test_a_process_with_bad_settings_does_not_start(env, named):
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode != 0
    assert named in result.stderr
