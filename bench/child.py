"""One database, in a process of its own (Django is set up once per process).

    python bench/child.py <mode> sqlite|postgres '<params as JSON>'

(mode: pipeline, import, import_live, catchup, operator or tags)

Makes a fresh database (a SQLite file, or `CREATE DATABASE bp_bench_<random>` on the
PostgreSQL at TEST_POSTGRES_URL, dropped afterwards) and a fresh SITE_ROOT, migrates,
runs the mode's measurements against the Redis at params["redis_url"], and prints one
line of JSON: the results, or {"skipped": why}. Progress goes to stderr.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.support import (  # noqa: E402
    SETTINGS_ENV,
    postgres_database,
    postgres_url,
    progress,
)


def environment(database: str, workdir: Path, redis_url: str, pg_name: str) -> dict[str, str]:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "SITE_ROOT": str(workdir / "site"),
        "SITE_URL": "https://blog.example.com",
        "CELERY_BROKER_URL": redis_url,
        "PUBLISH_WEBHOOK_URL": "",
        "ALERT_WEBHOOK_URL": "",
        **SETTINGS_ENV,
        "PYTHONUNBUFFERED": "1",
    }
    if database == "postgres":
        env["DATABASE_URL"] = postgres_url(pg_name)
    else:
        env["DATABASE_URL"] = f"sqlite:///{workdir / 'bench.sqlite3'}"
    return env


def setup_django() -> None:
    import django
    from django.core.management import call_command

    django.setup()
    logging.disable(logging.WARNING)  # a broker hiccup's warning is not a result
    call_command("migrate", verbosity=0)


def run(mode: str, database: str, params: dict) -> dict:
    workdir = Path(tempfile.mkdtemp(prefix=f"blogpublish-bench-{mode}-{database}-"))
    pg_name = f"bp_bench_{uuid.uuid4().hex[:10]}"
    if database == "postgres":
        problem = postgres_database(pg_name, "CREATE")
        if problem:
            return {"skipped": f"no PostgreSQL: {problem}"}
    env = environment(database, workdir, params["redis_url"], pg_name)
    os.environ.update(env)
    try:
        setup_django()
        result = measure(mode)(workdir, env, params)
    except BaseException:
        progress(f"[{database}] {mode} failed; its logs are kept in {workdir}")
        raise
    else:
        if not os.environ.get("BENCH_KEEP"):
            shutil.rmtree(workdir, ignore_errors=True)
        return result
    finally:
        if database == "postgres":
            from django.db import connections

            connections.close_all()
            postgres_database(pg_name, "DROP")


def measure(mode: str) -> Callable[[Path, dict, dict], dict]:
    if mode == "pipeline":
        from bench.phases import measure_pipeline

        return measure_pipeline
    if mode == "import":
        from bench.importing import measure_import

        return measure_import
    if mode == "import_live":
        from bench.importing import measure_import_live

        return measure_import_live
    if mode == "catchup":
        from bench.catchup import measure_catch_up

        return measure_catch_up
    if mode == "tags":
        from bench.tags import measure_tags

        return measure_tags
    if mode == "operator":
        from bench.operator_views import measure_operator

        return measure_operator
    raise SystemExit(f"unknown mode {mode!r}")


def main() -> None:
    mode, database, params = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    progress(f"[{database}] {mode}: starting")
    print(json.dumps(run(mode, database, params)))


if __name__ == "__main__":
    main()
