"""The base of the management commands that use the database.

A database that cannot be used (not reachable, refusing the login, a file SQLite cannot
open) ends the command with one line naming it, `CommandError: cannot use the PostgreSQL
database 'blog' on db.example.com:5432: connection refused …`, and exit status 1, not
psycopg's traceback (a review's finding: seven commands printed one). `--traceback`
still shows it, chained to the database's own error.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import OperationalError, connection


def database_named() -> str:
    """The default database, as an operator would name it; never its password."""
    config = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"the SQLite database {str(config['NAME'])!r}"
    host = config.get("HOST") or "localhost"
    port = f":{config['PORT']}" if config.get("PORT") else ""
    return f"the {connection.display_name} database {str(config['NAME'])!r} on {host}{port}"


class DatabaseCommand(BaseCommand):
    """BaseCommand whose OperationalError (Django's, whatever the driver) is a
    CommandError of one line. A command that retries (publish_pending --loop) catches
    its own first."""

    def execute(self, *args: Any, **options: Any) -> str | None:
        try:
            return super().execute(*args, **options)
        except OperationalError as exc:
            lines = str(exc).strip().splitlines()
            why = lines[0].strip() if lines else type(exc).__name__
            raise CommandError(f"cannot use {database_named()}: {why}") from exc
