"""Database functions the ORM lacks (the statements any model may use are in work.db)."""

from __future__ import annotations

from django.db.models import Func, IntegerField


class OctetLength(Func):
    """The length of a text in bytes of the database's encoding (UTF-8 on SQLite and on
    a PostgreSQL database created as `UTF8`, the default): what `BODY_MAX_BYTES`
    limits. Django's `Length` counts characters."""

    function = "OCTET_LENGTH"  # PostgreSQL, MySQL
    output_field = IntegerField()
    arity = 1

    def as_sqlite(self, compiler, connection, **extra_context):
        return self.as_sql(compiler, connection, template="LENGTH(CAST(%(expressions)s AS BLOB))")
