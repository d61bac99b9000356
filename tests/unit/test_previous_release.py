"""deploy/previous-release.json names the release an upgrade starts from (the
migration check, the upgrade test and the message fixtures compare with it): it says
what that release's commit holds, and no migration it had is gone."""

from __future__ import annotations

import pytest
from django.db.migrations.loader import MigrationLoader

from tests.support import releases
from tests.support.migration_safety import previous_release


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
    at_commit = releases.migrations_at(release["commit"])
    if at_commit is None:
        pytest.skip(f"this checkout has no commit {release['commit']} ({release['release']})")
    tag = releases.git("rev-parse", "--verify", "--quiet", f"{release['release']}^{{commit}}")
    if tag.returncode == 0:  # the tag, where this checkout has it, is that commit
        assert tag.stdout.strip() == release["commit"]
    assert at_commit == release["migrations"]
