"""Profile `import_articles` (files → pending rows) and the batches that publish them,
in-process, with pyinstrument.

    .venv/bin/python bench/profile_import.py [N] [sqlite|postgres] [--publish]

Writes N Markdown files (default 10,000; bench/importing.py's), imports them into a
fresh database with the broker unreachable (the batch messages are not sent), prints
the rate and pyinstrument's summary; with --publish, then publishes them in this
process through `publish_group`, as a worker child does, and profiles that.
A measurement, not a test.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SHOW_ALL = bool(os.environ.get("SHOW_ALL"))  # every frame, Django's and libraries' too


def main() -> None:
    from bench.support import SETTINGS_ENV

    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    count = int(args[0]) if args else 10_000
    database = args[1] if len(args) > 1 else "sqlite"
    workdir = Path(tempfile.mkdtemp(prefix="blogpublish-profile-"))
    pg = os.environ.get("TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres")
    pg_name = f"bp_profile_{uuid.uuid4().hex[:8]}"
    os.environ.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        SITE_ROOT=str(workdir / "site"),
        CELERY_BROKER_URL="redis://127.0.0.1:1/0",  # refused: nothing is sent
        PUBLISH_DISPATCH_BREAKER_SECONDS="3600",
        **SETTINGS_ENV,
    )
    os.environ.pop("PUBLISH_WEBHOOK_URL", None)
    if database == "postgres":
        import psycopg

        with psycopg.connect(pg, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{pg_name}"')
        os.environ["DATABASE_URL"] = f"{pg.rsplit('/', 1)[0]}/{pg_name}"
    else:
        os.environ["DATABASE_URL"] = f"sqlite:///{workdir / 'db.sqlite3'}"
    try:
        run(count, workdir, publish="--publish" in sys.argv)
    finally:
        if database == "postgres":
            from django.db import connections

            connections.close_all()
            with psycopg.connect(pg, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE "{pg_name}"')
        shutil.rmtree(workdir, ignore_errors=True)


def run(count: int, workdir: Path, *, publish: bool) -> None:
    import logging

    import django
    from django.core.management import call_command

    django.setup()
    logging.disable(logging.WARNING)
    call_command("migrate", verbosity=0)
    from pyinstrument import Profiler

    from bench.importing import write_files
    from publishing.services import publish_group
    from publishing.services.importing import articles_import

    write_files(workdir / "posts", count)
    profiler = Profiler(interval=0.0005)
    started = time.perf_counter()
    with profiler:
        report = articles_import([workdir / "posts"])
    elapsed = time.perf_counter() - started
    print(f"import: {report.summary} in {elapsed:.2f} s: {count / elapsed:,.0f} files/s\n")
    print(
        profiler.output_text(unicode=False, color=False, show_all=bool(os.environ.get("SHOW_ALL")))
    )
    if not publish:
        return
    profiler = Profiler(interval=0.0005)
    started = time.perf_counter()
    done = 0
    with profiler:
        while (claimed := publish_group(retry_in=lambda n: 0).claimed) > 0:
            done += claimed
    elapsed = time.perf_counter() - started
    print(f"publish: {done} in {elapsed:.2f} s: {done / elapsed:,.0f} articles/s (one process)\n")
    print(
        profiler.output_text(unicode=False, color=False, show_all=bool(os.environ.get("SHOW_ALL")))
    )


if __name__ == "__main__":
    main()
