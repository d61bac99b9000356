"""Backup and restore, drilled (issue 23, item 1): an installation with articles in
every state, an image and a digest is backed up with the commands docs/operations.md
("Backups") gives, restored into a fresh database and an empty SITE_ROOT, and
`restore_check --repair` rebuilds a site equal to the original byte for byte.

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
from tests.support.processes import ROOT
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


def test_backup_restore__the_restored_site_equals_the_original(
    worker, make_article, chaos, tmp_path
):
    populate(make_article, chaos)
    call_command("restore_check", "--repair", stdout=io.StringIO())  # the original, whole
    original = site_files(Path(settings.SITE_ROOT))
    assert any(name.startswith("media/") for name in original)
    source_url = os.environ["DATABASE_URL"]

    # Back up, as docs/operations.md says: the database, and the site's media folder.
    dump, media = tmp_path / "blogpublish.dump", tmp_path / "media.tar"
    sh(["pg_dump", "--format=custom", "--file", str(dump), source_url])
    sh(["tar", "-C", str(settings.SITE_ROOT), "-cf", str(media), "media"])

    # Restore into a new database and an empty site: another installation (run id).
    run_id = f"{os.environ['BLOGPUBLISH_TEST_RUN']}r"
    target_url = f"{source_url.rsplit('/', 1)[0]}/bp_test_{run_id}"
    new_site = tmp_path / "restored-site"
    new_site.mkdir()
    env = {
        **os.environ,
        "BLOGPUBLISH_TEST_RUN": run_id,
        "BLOGPUBLISH_TEST_SITE_ROOT": str(new_site),
    }
    admin_url = f"{source_url.rsplit('/', 1)[0]}/postgres"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE bp_test_{run_id}")
    try:
        sh(["pg_restore", "--no-owner", "--dbname", target_url, str(dump)])
        sh(["tar", "-C", str(new_site), "-xf", str(media)])
        assert row_counts(target_url) == row_counts(source_url)  # every table's rows back
        manage = [sys.executable, "manage.py", "restore_check"]

        before = sh(manage, env=env, check=False)
        assert before.returncode == 1 and "is missing" in before.stderr, before.stderr

        sh([*manage, "--repair"], env=env)

        assert site_files(new_site) == original
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS bp_test_{run_id} WITH (FORCE)")
