"""The query plans of the catch-up's reads on a large site (PostgreSQL).

    .venv/bin/python bench/plans.py [N]

Makes a fresh database with N published articles (default 200,000) and a few pending,
scheduled and dead ones, ANALYZEs it, and prints EXPLAIN for every statement the
catch-up runs before its refresh. Each should use a partial index, so its cost follows
the unfinished work, not the site. A measurement, not a test.
"""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
PG = os.environ.get("TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres")

FILL = """
INSERT INTO publishing_article (title, slug, slug_key, body, status, publish_at, attempts,
    claims, last_error, content_hash, published_hash, published_slug, published_slug_key,
    published_title, published_body, published_publish_at, uid, published_at, created_at,
    updated_at)
SELECT 'Article ' || n, 'article-' || n, 'article-' || n, 'Body ' || n,
    CASE WHEN mod(n, 10000) = 1 THEN 'pending' WHEN mod(n, 10000) = 2 THEN 'dead'
        ELSE 'published' END,
    now() - make_interval(mins => %(n)s - n) + CASE WHEN mod(n, 10000) = 3
        THEN interval '1 day' ELSE interval '0' END,
    0, 1, '', md5(n::text) || md5(n::text), md5(n::text) || md5(n::text), 'article-' || n,
    'article-' || n, 'Article ' || n, 'Body ' || n, now() - make_interval(mins => %(n)s - n),
    md5('uid' || n)::uuid, now(), now(), now() - interval '1 hour'
FROM generate_series(1, %(n)s) AS n
"""


def main() -> None:
    import psycopg

    from bench.support import SETTINGS_ENV

    count = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    name = f"bp_plans_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    os.environ.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        DATABASE_URL=f"{PG.rsplit('/', 1)[0]}/{name}",
        CELERY_BROKER_URL="redis://127.0.0.1:1/0",
        **SETTINGS_ENV,
    )
    try:
        explain_all(count)
    finally:
        from django.db import connections

        connections.close_all()
        with psycopg.connect(PG, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE "{name}"')


def explain_all(count: int) -> None:
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from publishing import selectors

    call_command("migrate", verbosity=0)
    with connection.cursor() as cursor:
        cursor.execute(FILL, {"n": count})
        cursor.execute("ANALYZE publishing_article")
    reads = {
        "articles_due_for_catch_up": lambda: selectors.articles_due_for_catch_up(
            stale_after=60, limit=500
        ),
        "articles_to_arm": lambda: selectors.articles_to_arm(
            horizon=240, stale_after=60, limit=500
        ),
        "dead_unalerted_ids": lambda: selectors.dead_unalerted_ids(limit=500),
        "stuck_articles": lambda: selectors.stuck_articles(stuck_after=900),
    }
    print(f"{count:,} articles; EXPLAIN ANALYZE of the catch-up's reads\n")
    for label, read in reads.items():
        with CaptureQueriesContext(connection) as captured:
            read()
        for query in captured.captured_queries:
            with connection.cursor() as cursor:
                cursor.execute(f"EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) {query['sql']}")
                plan = "\n".join(row[0] for row in cursor.fetchall())
            print(f"-- {label}\n{plan}\n")


if __name__ == "__main__":
    main()
