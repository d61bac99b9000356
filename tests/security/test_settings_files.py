"""Files the settings create on disk (issue 8, item 10): var/ held password hashes and
sessions in a world-readable SQLite file."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def import_settings(env: dict) -> None:
    """A fresh interpreter imports config.settings, as any process starts, with umask
    022 (the usual default, which made the file 0644)."""
    keep = {k: v for k, v in os.environ.items() if k in {"PATH", "HOME", "LANG"}}
    subprocess.run(
        [sys.executable, "-c", "import config.settings"],
        cwd=ROOT,
        env={**keep, "DEBUG": "1", "SECRET_KEY": "x" * 60, **env},
        check=True,
        timeout=60,
        preexec_fn=lambda: os.umask(0o022),
    )


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_sqlite_database_is_created_private(tmp_path):
    var = tmp_path / "var"
    import_settings({"DATABASE_URL": f"sqlite:///{var / 'db.sqlite3'}"})

    assert mode(var) == 0o700
    assert mode(var / "db.sqlite3") == 0o600


def test_an_existing_database_file_is_left_as_it_is(tmp_path):
    db = tmp_path / "db.sqlite3"
    db.write_bytes(b"")
    db.chmod(0o640)

    import_settings({"DATABASE_URL": f"sqlite:///{db}"})

    assert mode(db) == 0o640
