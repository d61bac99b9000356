"""The clock's settings: DIGEST_SCHEDULE read as a crontab, and settings that cannot work
stop start-up with a message that names them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from config.checks import mail_address_problems
from config.crontab import parse_crontab
from work.metering import peak_rss_bytes, read_proc_io

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("expression", "due_at"),
    [
        ("0 7 * * *", [(7, 0)]),  # the default: once a day at 07:00
        ("30 6,18 * * *", [(6, 30), (18, 30)]),
        ("*/20 9 * * *", [(9, 0), (9, 20), (9, 40)]),
    ],
)
def test_a_crontab_expression_is_read_field_by_field(expression, due_at):
    schedule = parse_crontab(expression)
    assert sorted((h, m) for h in schedule.hour for m in schedule.minute) == due_at


def test_day_of_week_names_are_cron_s():
    assert parse_crontab("0 7 * * mon-fri").day_of_week == {1, 2, 3, 4, 5}
    assert parse_crontab("0 7 * * 0").day_of_week == {0}  # Sunday


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("0 7 * *", "give 5 fields"),  # four fields
        ("0 7 * * * *", "give 5 fields"),  # six (seconds are not cron's)
        ("", "give 5 fields"),
        ("61 7 * * *", "61 > 59"),
        ("0 24 * * *", "24 > 23"),
        ("0 7 31 2 *", "never occurs"),  # 31 February
        ("*/0 * * * *", "step cannot be zero"),
        ("0 7 * * funday", "funday"),
    ],
)
def test_a_bad_expression_is_refused_with_what_is_wrong(expression, message):
    with pytest.raises(ValueError, match=message) as error:
        parse_crontab(expression)
    assert "DIGEST_SCHEDULE=" in str(error.value)


def start(env: dict) -> subprocess.CompletedProcess:
    keep = {k: v for k, v in os.environ.items() if k in {"PATH", "HOME", "LANG"}}
    return subprocess.run(
        [sys.executable, "-c", "import config.settings"],
        cwd=ROOT,
        env={**keep, "DEBUG": "1", "SECRET_KEY": "x" * 60, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"DIGEST_SCHEDULE": "every morning"}, "DIGEST_SCHEDULE='every morning' is not a crontab"),
        ({"DIGEST_RECIPIENTS": "editors@example.com,nobody"}, "'nobody' is not a mail address"),
        ({"DIGEST_WEBHOOK_URL": "https://x.example/hook"}, "DIGEST_WEBHOOK_SECRET must be"),
        ({"DIGEST_CATCHUP_DAYS": "0"}, "DIGEST_CATCHUP_DAYS=0 is below its minimum"),
        ({"TIME_ZONE": "Mars/Olympus"}, "TIME_ZONE='Mars/Olympus' is not a time zone"),
    ],
)
def test_settings_that_cannot_work_stop_start_up(env, message, tmp_path):
    result = start({"DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", **env})
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and message in result.stderr


def test_the_defaults_start(tmp_path):
    result = start({"DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"})
    assert result.returncode == 0, result.stderr


def test_mail_addresses_are_checked():
    assert mail_address_problems(name="X", addresses=["a@example.com"]) == []
    assert mail_address_problems(name="X", addresses=["a@", "b@example.com"]) == [
        "X: 'a@' is not a mail address."
    ]


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="Linux only")
def test_disk_bytes_and_memory_are_read_from_the_kernel(tmp_path):
    before = read_proc_io()
    path = tmp_path / "written"
    with open(path, "wb") as out:
        out.write(os.urandom(1 << 20))
        out.flush()
        os.fsync(out.fileno())
    after = read_proc_io()
    assert after[1] - before[1] >= 1 << 20
    assert peak_rss_bytes() > 1 << 20
