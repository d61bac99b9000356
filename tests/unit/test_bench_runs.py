"""The benchmarks still run (they are not tests: this only keeps them from rotting)."""

from __future__ import annotations

import subprocess
import sys

from tests.support.processes import ROOT


def test_site_benchmark_runs_on_a_small_site():
    result = subprocess.run(
        [sys.executable, "bench/run.py", "site", "--first", "20", "--then", "30", "--window", "25"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert result.returncode == 0, result.stderr[-2000:]
    assert "site size" in result.stdout and "reconcile" in result.stdout
