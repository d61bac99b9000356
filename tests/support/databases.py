"""A PostgreSQL database of a test's own, made empty and dropped after it (its sessions
ended with it): for the processes a system test starts on a fresh schema."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

ADMIN_URL = os.environ.get("TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres")


@contextmanager
def fresh_database(prefix: str) -> Iterator[str]:
    """A new empty database named `<prefix>_<random>`; yields its URL."""
    name = f"{prefix}_{secrets.token_hex(4)}"
    with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    try:
        yield f"{ADMIN_URL.rsplit('/', 1)[0]}/{name}"
    finally:
        with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
