"""deploy/previous-release.json names the release an upgrade starts from (the
migration check, the upgrade test and the message fixtures compare with it): it says
what that release's commit holds, and no migration it had is gone."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from django.apps import apps
from django.db.migrations.loader import MigrationLoader

from tests.support.migration_safety import ROOT, previous_release


def test_previous_release__every_migration_it_had_is_still_here():
    on_disk = MigrationLoader(None, ignore_no_migrations=True).disk_migrations
    release = previous_release()
    missing = [
        f"{app}.{name}"
        for app, names in release["migrations"].items()
        for name in names
        if (app, name) not in on_disk
    ]
    assert not missing, f"released migrations removed or renamed: {missing}"


def test_previous_release__lists_the_migrations_of_its_commit():
    release = previous_release()
    commit = release["commit"]
    listing = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", commit],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if listing.returncode != 0:
        pytest.skip(f"this checkout has no commit {commit} ({release['release']})")
    folders = {
        str(Path(c.path).relative_to(ROOT)): c.label
        for c in apps.get_app_configs()
        if ROOT in Path(c.path).parents
    }
    at_commit: dict[str, list[str]] = {}
    for path in listing.stdout.split():
        folder, _, rest = path.partition("/migrations/")
        if rest and "/" not in rest and rest[:4].isdigit() and rest.endswith(".py"):
            at_commit.setdefault(folders[folder], []).append(rest[:-3])

    tag = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", f"{release['release']}^{{commit}}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if tag.returncode == 0:  # the tag, where this checkout has it, is that commit
        assert tag.stdout.strip() == commit
    assert {app: sorted(names) for app, names in at_commit.items()} == release["migrations"]
