"""Database functions the ORM lacks (the statements any model may use are in work.db)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.db.models import BigIntegerField, Func, IntegerField


class OctetLength(Func):
    """The length of a text in bytes of the database's encoding (UTF-8 on SQLite and on
    a PostgreSQL database created as `UTF8`, the default): what `BODY_MAX_BYTES`
    limits. Django's `Length` counts characters."""

    function = "OCTET_LENGTH"  # PostgreSQL, MySQL
    output_field = IntegerField()
    arity = 1

    def as_sqlite(self, compiler, connection, **extra_context):
        return self.as_sql(compiler, connection, template="LENGTH(CAST(%(expressions)s AS BLOB))")


class EpochMicroseconds(Func):
    """A date and time as microseconds since 1970 UTC, an integer: for a read of
    thousands of dates. The loader of a timestamptz Django registers for psycopg is
    pure Python (Django ticket #36960) and took longer than the statement; an integer
    is read in C. `utc_datetime` makes it a datetime again."""

    output_field = BigIntegerField()
    arity = 1
    template = "(EXTRACT(EPOCH FROM %(expressions)s) * 1000000)::bigint"

    def as_sqlite(self, compiler, connection, **extra_context):
        # Django keeps a datetime as UTC text, "YYYY-MM-DD HH:MM:SS[.ffffff]": its
        # whole seconds (julianday, rounded: exact to the second), then the six digits
        # after the dot ("" casts to 0). No "%" in it: `_union_per` splits on "%s".
        column, params = compiler.compile(self.source_expressions[0])
        sql = (
            f"(CAST(ROUND((julianday(substr({column}, 1, 19)) - 2440587.5) * 86400)"
            f" AS INTEGER) * 1000000 + CAST(substr({column}, 21) AS INTEGER))"
        )
        return sql, [*params, *params]


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def epoch_micros(moment: datetime) -> int:
    """Microseconds since 1970 UTC of an aware datetime: as `EpochMicroseconds` reads a
    stored one, to compare many dates by."""
    return (moment - EPOCH) // timedelta(microseconds=1)


def utc_datetime(micros: int) -> datetime:
    """The datetime (UTC) of an `EpochMicroseconds` value."""
    return EPOCH + timedelta(microseconds=micros)
