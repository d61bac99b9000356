"""Database helpers the ORM lacks."""

from __future__ import annotations

from collections.abc import Sequence

from django.db import connections
from django.db.models import Func, IntegerField, Model, QuerySet
from django.db.models.sql import UpdateQuery


class OctetLength(Func):
    """The length of a text in bytes of the database's encoding (UTF-8 on SQLite and on
    a PostgreSQL database created as `UTF8`, the default): what `BODY_MAX_BYTES`
    limits. Django's `Length` counts characters."""

    function = "OCTET_LENGTH"  # PostgreSQL, MySQL
    output_field = IntegerField()
    arity = 1

    def as_sqlite(self, compiler, connection, **extra_context):
        return self.as_sql(compiler, connection, template="LENGTH(CAST(%(expressions)s AS BLOB))")


def update_returning(
    queryset: QuerySet, *, only: Sequence[str] | None = None, **values
) -> list[Model]:
    """`queryset.update(**values)` that also returns the rows it updated, as they are
    after the update: one `UPDATE … RETURNING` (PostgreSQL; SQLite since 3.35) instead
    of an UPDATE and a read. The SQL is Django's own, so the database clock and the
    other expressions are written as `update()` writes them. `only`: the fields to
    return (the others deferred), e.g. `("id",)`; every field when None."""
    model, db = queryset.model, queryset.db
    query = queryset.query.chain(UpdateQuery)
    query.add_update_values(values)
    compiler = query.get_compiler(db)
    sql, params = compiler.as_sql()
    if not sql:  # an empty IN (): nothing to update
        return []
    fields = model._meta.concrete_fields
    if only is not None:
        fields = [model._meta.get_field(name) for name in only]
    connection = connections[db]
    columns = ", ".join(connection.ops.quote_name(field.column) for field in fields)
    with connection.cursor() as cursor:
        cursor.execute(f"{sql} RETURNING {columns}", params)
        rows = cursor.fetchall()
    converters = compiler.get_converters([field.get_col(model._meta.db_table) for field in fields])
    if converters:
        rows = compiler.apply_converters(rows, converters)
    names = [field.attname for field in fields]
    return [model.from_db(db, names, list(row)) for row in rows]
