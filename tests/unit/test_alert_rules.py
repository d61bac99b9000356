"""The Prometheus alert rules (deploy/prometheus/alerts.yml): valid, unit-tested with
`promtool test rules` (every rule has a test that makes it fire), and each one links a
runbook section that exists in docs/operations.md."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "deploy" / "prometheus" / "alerts.yml"
RULE_TESTS = ROOT / "deploy" / "prometheus" / "alerts_test.yml"
RUNBOOK = ROOT / "docs" / "operations.md"


def promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        pytest.fail("promtool is missing: run scripts/install-tools.sh (Debian's prometheus)")
    return path


def alert_names() -> list[str]:
    return re.findall(r"^\s*- alert: (\w+)", RULES.read_text(), flags=re.M)


def test_promtool_checks_the_rules():
    result = subprocess.run(
        [promtool(), "check", "rules", str(RULES)], capture_output=True, text=True, check=False
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(alert_names())} rules found" in result.stdout


def test_promtool_unit_tests_of_the_rules_pass():
    result = subprocess.run(
        [promtool(), "test", "rules", str(RULE_TESTS)],
        capture_output=True,
        text=True,
        check=False,
        cwd=RULE_TESTS.parent,
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_every_alert_has_a_test_in_which_it_fires():
    text = RULE_TESTS.read_text()
    firing = re.findall(r"alertname: (\w+)\n\s+exp_alerts:\n\s+- exp_labels", text)

    assert alert_names(), "no alert rules found"
    assert set(alert_names()) <= set(firing)


@pytest.mark.parametrize("name", alert_names())
def test_every_alert_links_a_runbook_section_that_exists(name):
    rules = RULES.read_text()
    anchor = name.lower()
    headings = re.findall(r"^#{2,4} .*?\{#([\w-]+)\}|^#{2,4} (\S+)\s*$", RUNBOOK.read_text(), re.M)
    anchors = {a or b.lower() for a, b in headings}

    assert f"docs/operations.md#{anchor}" in rules
    assert anchor in anchors, f"docs/operations.md has no section for {name}"
