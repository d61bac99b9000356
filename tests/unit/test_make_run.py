"""`make run` (scripts/run.py): the processes it starts get its environment."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_script():
    spec = importlib.util.spec_from_file_location("make_run", ROOT / "scripts" / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_dot_env_file_of_docker_compose_is_not_read_by_the_processes(tmp_path):
    """`cp .env.example .env` (docker compose's file, production's defaults) overrode
    what `make run` sets, DEBUG among them, and stopped it (a review's)."""
    (tmp_path / ".env").write_text('DEBUG=0\nDIGEST_SCHEDULE="0 7 * * *"\n')
    (tmp_path / "Procfile").write_text("shown: env\n")
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "DEBUG": "1", "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}

    command = run_script().honcho_command(env["PATH"])
    out = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    ).stdout

    assert "| DEBUG=1" in out, out
    assert "DIGEST_SCHEDULE" not in out
