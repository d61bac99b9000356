"""An upgrade from the previous release never stops the blog (issue 23, item 2).

The previous release (deploy/previous-release.json: its commit, checked out with `git
archive`) makes its schema in a fresh database and 10 k articles in it; its worker
publishes and its writer saves (new articles, edits) while this release's `manage.py
migrate` brings the schema to the head, as a rolling deploy runs them (migrations
first, old code still running). It fails if a migration rewrote an article or attempt
table (a new relfilenode, or PostgreSQL's table_rewrite event), if a save of the old
code failed during or after the migrations, or if what it wrote was not published once.
The longest save is printed (not asserted). While the previous release's schema is the
head's, `migrate` has nothing to do; each migration added after it is then under test.

PostgreSQL only (lock_timeout, relfilenodes, event triggers); once, as a system test.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import psycopg
import pytest
from django.db import connection

from tests.support import processes, releases
from tests.support.migration_safety import hot_tables, previous_release
from tests.support.processes import ROOT
from tests.support.releases import sh
from tests.support.waiting import wait_for
from tests.system.conftest import record_timing

pytestmark = [
    pytest.mark.system,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's locks"),
]

# 10 k in the test; `make bench` runs it at 1 M (bench/run.py upgrade).
ARTICLES = int(os.environ.get("BLOGPUBLISH_UPGRADE_ARTICLES", "10000"))

# Every table rewrite PostgreSQL starts, recorded (the row goes with a migration that
# is rolled back and tried again, and comes back with the retry).
REWRITE_RECORDER = """
CREATE TABLE upgrade_rewrites (relation regclass, reason int);
CREATE FUNCTION upgrade_record_rewrite() RETURNS event_trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO upgrade_rewrites
    VALUES (pg_event_trigger_table_rewrite_oid(), pg_event_trigger_table_rewrite_reason());
END $$;
CREATE EVENT TRIGGER upgrade_record_rewrite ON table_rewrite
    EXECUTE FUNCTION upgrade_record_rewrite();
"""


def filenodes(conn: psycopg.Connection) -> dict[str, int]:
    rows = conn.execute(
        "SELECT relname, relfilenode FROM pg_class WHERE relname = ANY(%s)", [sorted(hot_tables())]
    ).fetchall()
    return dict(rows)


def read_report(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return {"saves": 0}


def test_upgrade__migrations_under_the_previous_release_stop_no_save_and_rewrite_nothing(
    tmp_path,
):
    old = releases.checkout(previous_release()["commit"], tmp_path / "previous-release")
    stop, report = tmp_path / "stop-writing", tmp_path / "writer.json"
    started: list[processes.Proc] = []
    # Another installation: its own database, queues and site (the run id names them).
    with releases.installation("u") as site:
        env, url, python = site.env, site.url, sys.executable
        try:
            sh([python, "manage.py", "migrate", "-v", "0"], cwd=old, env=env)
            sh([python, "upgrade_writer.py", "seed", str(ARTICLES)], cwd=old, env=env)
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(REWRITE_RECORDER)
                before = filenodes(conn)

            worker = processes.start_worker(
                env=env, cwd=old, name="previous-worker", ready=False, queues=site.queues(old)
            )
            started.append(worker)
            processes.wait_until_ready(worker)
            writer = processes.spawn(
                "previous-writer",
                [python, "upgrade_writer.py", "write", str(stop), str(report)],
                env=env,
                cwd=old,
            )
            started.append(writer)
            wait_for(lambda: read_report(report)["saves"] >= 10, timeout=60, what="saves")

            with psycopg.connect(url, autocommit=True) as conn:
                window = [conn.execute("SELECT now()").fetchone()[0]]
                migrating = time.monotonic()
                out = sh([python, "manage.py", "migrate"], cwd=ROOT, env=env)  # this release's
                migrated = time.monotonic() - migrating
                window.append(conn.execute("SELECT now()").fetchone()[0])

            # The previous release goes on writing on the new schema.
            after_migrate = read_report(report)["saves"]
            wait_for(
                lambda: read_report(report)["saves"] >= after_migrate + 10,
                timeout=60,
                what="saves after the migrations",
            )
            stop.touch()
            wait_for(lambda: not writer.alive(), timeout=30, what="the writer to stop")
            state = read_report(report)
            assert not state["errors"], state["errors"][:10]

            with psycopg.connect(url, autocommit=True) as conn:
                rewrites = conn.execute(
                    "SELECT relation::text, reason FROM upgrade_rewrites"
                    " WHERE relation::text = ANY(%s)",
                    [sorted(hot_tables())],
                ).fetchall()
                assert not rewrites, f"a migration rewrote {rewrites}:\n{out[-3000:]}"
                # (a hot table the migrations made has no file before them to keep)
                after = filenodes(conn)
                kept = {table: after.get(table) for table in before}
                assert kept == before, f"a hot table was rewritten:\n{out[-3000:]}"
                count = conn.execute("SELECT count(*) FROM publishing_article").fetchone()[0]
                assert count >= ARTICLES
                releases.wait_published_once(conn, state["created"])
                edited = conn.execute(
                    "SELECT count(*) FROM publishing_article WHERE id = ANY(%s)"
                    " AND title LIKE '%%edited during the upgrade' AND status = 'pending'",
                    [state["edited"]],
                ).fetchone()[0]
                assert edited == len(state["edited"])
                # The longest wait of an article saved while the migrations ran, and of
                # the others (the old code's own waits, with no migration running).
                latest, elsewhere = conn.execute(
                    "SELECT max(published_at - created_at) FILTER (WHERE during),"
                    " max(published_at - created_at) FILTER (WHERE NOT during)"
                    " FROM (SELECT *, created_at BETWEEN %s AND %s AS during"
                    " FROM publishing_article WHERE id = ANY(%s)) AS written",
                    [*window, state["created"]],
                ).fetchone()
            size = f"{ARTICLES:,} articles"
            retries = out.count("trying again in")  # each a lock_timeout met (migrate.py)
            record_timing(
                f"upgrade, {size}: this release's migrate ({retries} lock-timeout retries)",
                migrated,
            )
            record_timing(f"upgrade, {size}: the old code's longest save", state["longest"])
            for label, wait in (("saved during the migrations", latest), ("the others", elsewhere)):
                record_timing(
                    f"upgrade, {size}: the longest save-to-published, old code's articles {label}",
                    wait.total_seconds() if wait is not None else float("nan"),
                )
        finally:
            stop.touch()
            for proc in started:
                proc.stop(timeout=10)
