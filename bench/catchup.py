"""Catch-up + reconcile time as the table grows (10 k, 100 k, 1 M articles).

The articles are published rows made by one set-based INSERT … SELECT (PostgreSQL:
`generate_series`; SQLite: a recursive CTE), every published_* field set as a publish
would leave it. Their own pages are not on disk (nobody rendered them); the shared
documents are whatever the catch-up's reconcile writes. At each size, one untimed
warm-up pass (reported as the first pass: on a fresh site it writes the archive), then
`publishing.services.catch_up()` a few times in this process; the median is the result.
No worker runs; CELERY_BROKER_URL is the private Redis, so any send is real.
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path

from bench.support import progress

BASE_EPOCH = 1_577_836_800  # 2020-01-01T00:00:00Z: article n is published at BASE + n s


def synthetic_exprs(vendor: str, *, body: bool = False) -> dict[str, str]:
    """SQL for each column of article n (`n` is the series' column); %% is a literal %.
    `body` (PostgreSQL): the body is `b.body`, a parameter, and the content hash the one
    `content_hash_of` gives (sha256 of its JSON, computed by the database)."""
    title, slug = "'Synthetic article ' || n", "'synthetic-' || n"
    if vendor == "postgresql":
        at = f"to_timestamp({BASE_EPOCH} + n)"
        exprs = {
            "publish_at": at,
            "published_at": f"to_timestamp({BASE_EPOCH} + n + 1)",
            "content_hash": "md5(n::text) || md5(n::text)",
            "uid": "md5('uid' || n)::uuid",
        }
        if body:
            exprs["content_hash"] = _pg_content_hash(title, slug, "b.body", at)
    else:
        fmt = "'%%Y-%%m-%%d %%H:%%M:%%S'"
        at = f"strftime({fmt}, {BASE_EPOCH} + n, 'unixepoch')"
        exprs = {
            "publish_at": at,
            "published_at": f"strftime({fmt}, {BASE_EPOCH} + n + 1, 'unixepoch')",
            "content_hash": "printf('%%064d', n)",
            "uid": "printf('%%032x', n)",
        }
    text = "b.body" if body else "'Some *Markdown* text of synthetic article ' || n || '.'"
    return {
        **exprs,
        "title": title,
        "slug": slug,
        "slug_key": slug,  # an ASCII lowercase slug is its own key
        "body": text,
        "status": "'published'",
        "published_hash": exprs["content_hash"],
        "published_slug": slug,
        "published_slug_key": slug,
        "published_title": title,
        "published_body": text,
        "published_publish_at": at,
        "created_at": at,
        "updated_at": at,
    }


def _pg_content_hash(title: str, slug: str, body: str, at: str) -> str:
    """publishing.models.content_hash_of in SQL: sha256 of the JSON list [title, slug,
    body, date] with Python's separators (to_json escapes strings as json.dumps does
    with ensure_ascii=False); the date as `isoformat()` gives a whole second in UTC."""
    when = f"""to_char({at} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS') || '+00:00'"""
    parts = " || ',' || ".join(f"to_json({part})::text" for part in (title, slug, body, when))
    return f"encode(sha256(convert_to('[' || {parts} || ']', 'UTF8')), 'hex')"


def columns_and_values(
    vendor: str, *, body: bool = False
) -> tuple[list[str], list[str], list[object]]:
    """Every column of Article: the synthetic expression, else the field's default (a
    column added later gets its default, so this keeps working as the model grows)."""
    from django.db import connection
    from django.db.models.fields import NOT_PROVIDED

    from publishing.models import Article

    exprs = synthetic_exprs(vendor, body=body)
    columns, values, params = [], [], []
    for field in Article._meta.concrete_fields:
        by_database = field.db_default is not NOT_PROVIDED and field.column not in exprs
        if field.primary_key or by_database:
            continue
        columns.append(connection.ops.quote_name(field.column))
        if field.column in exprs:
            values.append(exprs[field.column])
            continue
        default = field.get_default()
        if default is None and not field.null:
            raise SystemExit(f"bench/catchup.py: no value for Article.{field.name}; add one")
        values.append("%s")
        params.append(field.get_db_prep_save(default, connection))
    return columns, values, params


def insert_published(first: int, last: int, *, body: str | None = None) -> None:
    """Articles first … last (inclusive), published, in one statement. `body`
    (PostgreSQL only): every article's body and live body, with its real content hash."""
    from django.db import connection, transaction

    if body is not None and connection.vendor != "postgresql":
        raise SystemExit("bench/catchup.py: a given body needs PostgreSQL")
    columns, values, params = columns_and_values(connection.vendor, body=body is not None)
    table = connection.ops.quote_name("publishing_article")
    select = f"SELECT {', '.join(values)} FROM g"
    insert = f"INSERT INTO {table} ({', '.join(columns)}) {select}"
    if connection.vendor == "postgresql":
        series = " FROM generate_series(%s, %s) AS g(n)"
        sql, args = insert.replace(" FROM g", series), [*params, first, last]
        if body is not None:
            sql = f"WITH b AS (SELECT %s::text AS body) {sql.replace(series, series + ', b')}"
            args = [body, *args]
    else:
        cte = "WITH RECURSIVE g(n) AS (SELECT %s UNION ALL SELECT n + 1 FROM g WHERE n < %s)"
        sql, args = f"{cte} {insert}", [first, last, *params]
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, args)
    if connection.vendor == "postgresql":
        # As autovacuum would, soon after (this machine's server runs with it off): the
        # visibility map set, so counts of the listing are index-only scans.
        with connection.cursor() as cursor:
            cursor.execute(f"VACUUM (ANALYZE) {table}")


def files_under(root: Path) -> int:
    return sum(len(files) for _dirs, _subdirs, files in os.walk(root))


def timed_catch_up() -> float:
    from publishing.services import catch_up

    started = time.perf_counter()
    catch_up()
    return time.perf_counter() - started


def measure_catch_up(workdir: Path, env: dict, params: dict) -> dict:
    from publishing.models import Article

    site_root = Path(env["SITE_ROOT"])
    results = []
    for size in params["catchup_sizes"]:
        have = Article.objects.count()
        progress(f"catch-up: inserting articles {have + 1:,} … {size:,}")
        started = time.perf_counter()
        insert_published(have + 1, size)
        insert_s = time.perf_counter() - started
        progress(f"catch-up: {size:,} articles; warm-up pass, then {params['catchup_runs']} timed")
        first = timed_catch_up()
        runs = [timed_catch_up() for _ in range(params["catchup_runs"])]
        results.append(
            {
                "articles": Article.objects.count(),
                "insert_s": insert_s,
                "first_pass_s": first,
                "runs_s": runs,
                "median_s": statistics.median(runs),
                "files_in_site_root": files_under(site_root),
            }
        )
    return {"catch_up": results}
