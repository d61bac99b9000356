"""Backup and restore, drilled (issue 23, item 1): an installation with articles in
every state, an image and a digest is backed up with the commands docs/operations.md
("Backups") gives, restored into a fresh database and an empty SITE_ROOT, and
`restore_check --repair` rebuilds a site equal to the original byte for byte. Twice:
the site in a folder (its media with tar), and in a bucket of moto's S3 server (its
media with `aws s3 sync`, into an empty bucket).

PostgreSQL only (pg_dump / pg_restore); it runs once, as the slow system tests do."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest
from django.apps import apps
from django.conf import settings
from django.core.management import call_command
from django.db import connection
from django.test import override_settings
from django.utils import timezone
from PIL import Image

from blogpublish.desk import images
from publishing.models import ArticleStatus
from tests.support.own_worker import own_worker
from tests.support.processes import ROOT
from tests.support.s3 import mirror
from tests.support.waiting import wait_status

pytestmark = [
    pytest.mark.system,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="pg_dump: PostgreSQL's"),
]


def site_files(root: Path) -> dict[str, bytes]:
    """Every file readers can be served (dot-entries are the site's own workspace)."""
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and not any(part.startswith(".") for part in path.relative_to(root).parts)
    }


def row_counts(url: str) -> dict[str, int]:
    tables = sorted({m._meta.db_table for m in apps.get_models()})
    with psycopg.connect(url) as conn:
        return {t: conn.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}


def sh(cmd: list[str], env: dict | None = None, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(
        cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    if check:
        assert done.returncode == 0, f"{cmd}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    return done


def populate(make_article, chaos) -> None:
    png = io.BytesIO()
    Image.new("RGB", (4, 3), (200, 30, 30)).save(png, "PNG")
    image = images.store(png.getvalue(), name="red.png", content_type="image/png")
    published = [
        make_article(
            title="备份与恢复", slug="backup-restore", body=f"With a picture {image.markdown}"
        ),
        make_article(title="Second", slug="second", body="*Second* article."),
        make_article(title="Third", slug="third", body="Third."),
    ]
    chaos("restore-dead", fail="permanent")
    dead = make_article(title="Dead one", slug="restore-dead", body="Never live.")
    make_article(title="Later", slug="later", publish_at=timezone.now() + timedelta(days=3))
    for article in published:
        wait_status(article, ArticleStatus.PUBLISHED, timeout=60)
    wait_status(dead, ArticleStatus.DEAD, timeout=60)
    with override_settings(DIGEST_RECIPIENTS=["editors@example.com"]):
        call_command("send_digest", stdout=io.StringIO())


class Folder:
    """The site in a folder: the session worker's."""

    def __init__(self, root: Path):
        self.root = root

    def env(self) -> dict[str, str]:
        return {"BLOGPUBLISH_TEST_SITE_ROOT": str(self.root)}

    def files(self, tmp_path: Path) -> dict[str, bytes]:
        return site_files(self.root)

    def back_up_media(self, into: Path) -> None:
        sh(["tar", "-C", str(self.root), "-cf", str(into / "media.tar"), "media"])

    def restored(self, backup: Path, tmp_path: Path) -> Folder:
        root = tmp_path / "restored-site"
        root.mkdir()
        sh(["tar", "-C", str(root), "-xf", str(backup / "media.tar")])
        return Folder(root)


class Bucket:
    """The site in a bucket (SITE_ROOT=s3://BUCKET/site) of moto's server."""

    def __init__(self, server, bucket: str):
        self.server, self.bucket = server, bucket
        self.root = f"s3://{bucket}/site"

    def env(self) -> dict[str, str]:
        return self.server.env(self.root)

    def files(self, tmp_path: Path) -> dict[str, bytes]:
        into = tmp_path / f"mirror-{self.bucket}"
        return site_files(mirror(self.server.client(), self.bucket, "site/", into))

    def aws(self, *args: str) -> None:
        sh(["aws", *args], env={**os.environ, **self.env()})

    def back_up_media(self, into: Path) -> None:
        self.aws("s3", "sync", "--only-show-errors", f"{self.root}/media", str(into / "media"))

    def restored(self, backup: Path, tmp_path: Path) -> Bucket:
        bucket = Bucket(self.server, self.server.new_bucket())
        bucket.aws(
            "s3", "sync", "--only-show-errors", str(backup / "media"), f"{bucket.root}/media"
        )
        return bucket


def back_up_and_restore(site, tmp_path: Path) -> None:
    """The drill, as docs/operations.md ("Backups") says, from a populated `site`."""
    call_command("restore_check", "--repair", stdout=io.StringIO())  # the original, whole
    original = site.files(tmp_path)
    assert any(name.startswith("media/") for name in original)
    source_url = os.environ["DATABASE_URL"]

    # Back up: the database, then the site's media.
    backup = tmp_path / "backup"
    backup.mkdir()
    dump = backup / "blogpublish.dump"
    sh(["pg_dump", "--format=custom", "--file", str(dump), source_url])
    site.back_up_media(backup)

    # Restore into a new database and an empty site: another installation (run id).
    run_id = f"{os.environ['BLOGPUBLISH_TEST_RUN']}r"
    target_url = f"{source_url.rsplit('/', 1)[0]}/bp_test_{run_id}"
    admin_url = f"{source_url.rsplit('/', 1)[0]}/postgres"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE bp_test_{run_id}")
    try:
        sh(["pg_restore", "--no-owner", "--dbname", target_url, str(dump)])
        new_site = site.restored(backup, tmp_path)
        assert row_counts(target_url) == row_counts(source_url)  # every table's rows back
        env = {**os.environ, "BLOGPUBLISH_TEST_RUN": run_id, **new_site.env()}
        manage = [sys.executable, "manage.py", "restore_check"]

        before = sh(manage, env=env, check=False)
        assert before.returncode == 1 and "is missing" in before.stderr, before.stderr

        sh([*manage, "--repair"], env=env)

        assert new_site.files(tmp_path) == original
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS bp_test_{run_id} WITH (FORCE)")


def test_backup_restore__the_restored_site_equals_the_original(
    worker, make_article, chaos, tmp_path
):
    populate(make_article, chaos)
    back_up_and_restore(Folder(Path(settings.SITE_ROOT)), tmp_path)


def test_backup_restore__a_site_in_a_bucket_restored_into_an_empty_bucket(
    s3_server, make_article, chaos, tmp_path
):
    site = Bucket(s3_server, s3_server.new_bucket())
    with own_worker(
        "backup-s3-worker", suffix="backup-s3", env=site.env(), **s3_server.settings_for(site.root)
    ):
        populate(make_article, chaos)
        back_up_and_restore(site, tmp_path)
