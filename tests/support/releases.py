"""Another release of blogpublish beside this one, for the upgrade tests
(tests/system/test_upgrade.py, test_deploy_drill.py): its code, checked out from git,
and an installation of its own (database, queues, site) on the test services."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg

from tests.support.processes import ROOT


def git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)


def migrations_at(commit: str) -> dict[str, list[str]] | None:
    """Each app's migrations (label -> names, sorted) in `commit`; None when this
    checkout does not have it."""
    from django.apps import apps

    listing = git("ls-tree", "-r", "--name-only", commit)
    if listing.returncode != 0:
        return None
    folders = {
        str(Path(c.path).relative_to(ROOT)): c.label
        for c in apps.get_app_configs()
        if ROOT in Path(c.path).parents
    }
    found: dict[str, list[str]] = {}
    for path in listing.stdout.split():
        folder, _, rest = path.partition("/migrations/")
        if rest and "/" not in rest and rest[:4].isdigit() and rest.endswith(".py"):
            found.setdefault(folders[folder], []).append(rest[:-3])
    return {app: sorted(names) for app, names in sorted(found.items())}


def record(tag: str) -> None:
    """A release was tagged: make it the previous release (deploy/previous-release.json:
    its commit and migrations) and record the messages it sends from its own checkout
    (tests/fixtures/messages/<tag>/). Run from the repository: `python -m
    tests.support.releases <tag>` (with DJANGO_SETTINGS_MODULE=tests.settings)."""
    import json

    from tests.support.migration_safety import RELEASE_FILE

    commit = git("rev-parse", "--verify", f"{tag}^{{commit}}").stdout.strip()
    assert commit, f"no tag {tag}"
    release = {"release": tag, "commit": commit, "migrations": migrations_at(commit)}
    with tempfile.TemporaryDirectory(prefix="blogpublish-release-") as folder:
        code = checkout(commit, Path(folder))
        recorder = code / "tests" / "support" / "messages.py"
        if not recorder.exists():  # a release from before the recorder
            shutil.copy(ROOT / "tests" / "support" / "messages.py", recorder)
        env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"}
        out = ROOT / "tests" / "fixtures" / "messages" / tag
        sh([sys.executable, "-m", "tests.support.messages", str(out), tag], cwd=code, env=env)
    RELEASE_FILE.write_text(json.dumps(release, indent=2) + "\n")


def checkout(commit: str, into: Path) -> Path:
    """The release's files (no .git) in `into`, with the upgrade writer beside its
    manage.py (tests/support/upgrade_writer.py), so that it runs that release's code."""
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", "archive", "--format=tar", commit], cwd=ROOT, capture_output=True, check=False
    )
    assert archive.returncode == 0, f"git archive {commit}: {archive.stderr.decode()[-500:]}"
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    shutil.copy(ROOT / "tests" / "support" / "upgrade_writer.py", into / "upgrade_writer.py")
    return into


@dataclass(frozen=True)
class Installation:
    run_id: str
    env: dict  # for every process of the installation, old code or new
    url: str  # its database

    def queues(self, code: Path = ROOT) -> list[str]:
        """The queues the release in `code` declares (its settings' CELERY_TASK_QUEUES,
        by this installation's names): what a worker of that release consumes, as
        `celery worker` does without -Q. The previous release may have fewer (v0.3 has
        no re-render queue), and a worker must not take a task its code lacks."""
        script = (
            "import django; django.setup(); from django.conf import settings; "
            "print(' '.join(queue.name for queue in settings.CELERY_TASK_QUEUES))"
        )
        done = run([sys.executable, "-c", script], cwd=code, env=self.env)
        assert done.returncode == 0, f"the queues of {code}:\n{done.stderr[-3000:]}"
        names = done.stdout.split()
        assert names and all(name.startswith(f"bp-test-{self.run_id}") for name in names), names
        return names

    @property
    def site(self) -> Path:
        return Path(tempfile.gettempdir()) / f"blogpublish-test-{self.run_id}" / "site"


@contextmanager
def installation(suffix: str, **env: str) -> Iterator[Installation]:
    """A database of its own (PostgreSQL), and a run id that gives its processes their
    own queues and site (tests/settings.py); all of it removed afterwards."""
    run_id = f"{os.environ['BLOGPUBLISH_TEST_RUN']}{suffix}"
    full_env = {**os.environ, "BLOGPUBLISH_TEST_RUN": run_id, **env}
    full_env.pop("BLOGPUBLISH_TEST_SITE_ROOT", None)
    server = os.environ["DATABASE_URL"].rsplit("/", 1)[0]
    admin_url = f"{server}/postgres"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE bp_test_{run_id}")
    try:
        yield Installation(run_id=run_id, env=full_env, url=f"{server}/bp_test_{run_id}")
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS bp_test_{run_id} WITH (FORCE)")
        shutil.rmtree(
            Path(tempfile.gettempdir()) / f"blogpublish-test-{run_id}", ignore_errors=True
        )


def run(cmd: list[str], *, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=1800, check=False
    )


def sh(cmd: list[str], *, cwd: Path, env: dict) -> str:
    done = run(cmd, cwd=cwd, env=env)
    assert done.returncode == 0, f"{cmd}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout + done.stderr


def wait_published_once(conn: psycopg.Connection, ids: list[int], timeout: float = 60) -> None:
    """Every article of `ids` published, each by exactly one successful attempt."""
    from tests.support.waiting import wait_for

    def all_published() -> bool:
        left = conn.execute(
            "SELECT count(*) FROM publishing_article WHERE id = ANY(%s) AND status <> 'published'",
            [ids],
        ).fetchone()[0]
        return left == 0

    wait_for(all_published, timeout=timeout, what=f"{len(ids)} articles to be published")
    other = conn.execute(
        "SELECT a.id, count(p.id) FROM publishing_article a LEFT JOIN publishing_publishattempt p"
        " ON p.article_id = a.id AND p.outcome = 'ok' WHERE a.id = ANY(%s)"
        " GROUP BY a.id HAVING count(p.id) <> 1",
        [ids],
    ).fetchall()
    assert not other, f"published other than once: {other[:10]}"


if __name__ == "__main__":
    import django

    django.setup()
    record(sys.argv[1])
