"""Database statements the ORM lacks, for any model: an UPDATE that returns its rows,
a bulk INSERT without model instances, and a condition on several columns at once."""

from __future__ import annotations

import contextlib
import hashlib
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

from django.db import connections, transaction
from django.db.models import Field, Model, QuerySet
from django.db.models.options import Options
from django.db.models.sql import UpdateQuery

M = TypeVar("M", bound=Model)


def after_commit(func: Callable[..., object], /, *args: Any, **kwargs: Any) -> None:
    """`func(*args, **kwargs)` once the transaction commits (at once outside one), as
    `transaction.on_commit(..., robust=True)` runs it: a failure is logged and the
    callbacks after it still run. Never a functools.partial there: Django's robust
    on_commit names a failed callback by its __qualname__, which a partial lacks, so an
    AttributeError escaped instead and dropped the callbacks after it (a review's
    finding: an alert stopped at its time limit took the group's pass of the shared
    pages with it)."""

    def call() -> None:
        func(*args, **kwargs)

    call.__qualname__ = getattr(func, "__qualname__", repr(func))
    transaction.on_commit(call, robust=True)


@contextlib.contextmanager
def read_snapshot(using: str = "default") -> Iterator[None]:
    """A read-only transaction whose reads all see one moment, and that holds up no
    writer: several queries (and `iterator()`'s chunks) agree with each other although
    others commit meanwhile. PostgreSQL: REPEATABLE READ, READ ONLY, as pg_dump reads
    (https://www.postgresql.org/docs/current/app-pgdump.html). SQLite: a DEFERRED
    transaction, whatever OPTIONS' transaction_mode says (IMMEDIATE would hold the
    write lock, and writers give up after the busy timeout); in WAL mode its first
    read fixes the snapshot until it ends (https://www.sqlite.org/isolation.html).
    Inside a transaction already (a test's), the reads are that transaction's: its
    isolation cannot change once it has begun."""
    connection = connections[using]
    if connection.in_atomic_block:
        yield
        return
    # A health check run inside the transaction would be its first query, and
    # PostgreSQL takes SET TRANSACTION only before any.
    connection.close_if_health_check_failed()
    # Connected first: connecting sets transaction_mode from OPTIONS, which made the
    # mode set below IMMEDIATE again on a fresh connection, and kept None after it (a
    # review of the mend: a real export held every writer off for its whole run).
    connection.ensure_connection()
    mode = getattr(connection, "transaction_mode", None)
    if connection.vendor == "sqlite":
        connection.transaction_mode = "DEFERRED"  # type: ignore[attr-defined]
    try:
        with transaction.atomic(using=using):
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            yield
    finally:
        if connection.vendor == "sqlite":
            connection.transaction_mode = mode  # type: ignore[attr-defined]


def update_returning(
    queryset: QuerySet[M], *, only: Sequence[str] | None = None, **values: Any
) -> list[M]:
    """`queryset.update(**values)` that also returns the rows it updated, as they are
    after the update: one `UPDATE … RETURNING` (PostgreSQL; SQLite since 3.35) instead
    of an UPDATE and a read. The SQL is Django's own, so the database clock and the
    other expressions are written as `update()` writes them. `only`: the fields to
    return (the others deferred), e.g. `("id",)`; every field when None."""
    returning = Returning.of(queryset, only=only, **values)
    return returning.run() if returning is not None else []  # None: an empty IN ()


@dataclass(frozen=True)
class Returning(Generic[M]):
    """The SQL of `update_returning` (`UPDATE … RETURNING <columns>`), for a caller that
    makes it part of a larger statement (a data-modifying `WITH` on PostgreSQL), and how
    its rows (the first `len(columns)` values of each) become model instances."""

    sql: str
    params: Sequence[Any]
    columns: list[str]  # as quoted in the RETURNING list
    model: type[M]
    db: str
    names: list[str]
    compiler: Any
    fields: Sequence[Field]

    @classmethod
    def of(
        cls, queryset: QuerySet[M], *, only: Sequence[str] | None = None, **values: Any
    ) -> Returning[M] | None:
        model, db = queryset.model, queryset.db
        # chain(klass) returns an instance of klass; django-stubs type it as any Query.
        query = cast(UpdateQuery, queryset.query.chain(UpdateQuery))
        query.add_update_values(values)
        compiler = query.get_compiler(db)
        sql, params = compiler.as_sql()
        if not sql:
            return None
        fields: Sequence[Field] = model._meta.concrete_fields
        if only is not None:
            # In the model's order: Model.from_db() assigns a partial row's values in it.
            wanted = {_field(model._meta, name) for name in only}
            fields = [field for field in fields if field in wanted]
        quote = connections[db].ops.quote_name
        columns = [quote(_column(field)) for field in fields]
        return cls(
            sql=f"{sql} RETURNING {', '.join(columns)}",
            params=params,
            columns=columns,
            model=model,
            db=db,
            names=[field.attname for field in fields],
            compiler=compiler,
            fields=fields,
        )

    def run(self) -> list[M]:
        """The statement alone: the rows it updated."""
        with connections[self.db].cursor() as cursor:
            cursor.execute(self.sql, self.params)
            return self.rows(cursor.fetchall())

    def rows(self, rows: Sequence[Sequence[Any]]) -> list[M]:
        """Model instances of the first `len(columns)` values of each row."""
        width = len(self.columns)
        values = [list(row[:width]) for row in rows]
        meta = self.model._meta
        converters = self.compiler.get_converters(
            [field.get_col(meta.db_table) for field in self.fields]
        )
        if converters:
            values = [list(row) for row in self.compiler.apply_converters(values, converters)]
        return [self.model.from_db(self.db, self.names, row) for row in values]


def insert_rows(
    model: type[Model],
    fields: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    using: str = "default",
) -> None:
    """INSERT `rows`, each the values of `fields` (names; a foreign key by its attname,
    "tag_id") as the driver takes them (ints, strings, aware datetimes, None). On
    PostgreSQL one `INSERT … SELECT * FROM unnest(<one array a column>)`, Django's own
    bulk statement, without a model instance and a field's preparation for every
    value, which took longer than the statement for a group's hundreds of rows
    (docs/performance.md, "Tags in use"); elsewhere `bulk_create`."""
    if not rows:
        return
    connection = connections[using]
    if connection.vendor != "postgresql":
        made = [model(**dict(zip(fields, row, strict=True))) for row in rows]
        model._default_manager.db_manager(using).bulk_create(made)
        return
    meta = model._meta
    columns = [_field(meta, name) for name in fields]
    quote = connection.ops.quote_name
    names = ", ".join(quote(_column(field)) for field in columns)
    # varchar[], not varchar(50)[]: as Django's, nothing is cut to the column's length
    # here (the column refuses it).
    arrays = ", ".join(f"%s::{_array_type(field, connection)}" for field in columns)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {quote(meta.db_table)} ({names}) SELECT * FROM unnest({arrays})",
            [list(values) for values in zip(*rows, strict=True)],
        )


def _array_type(field: Field, connection: Any) -> str:
    db_type = field.db_type(connection)
    if db_type is None:  # a field without a column type of its own
        raise ValueError(f"{field} has no column type to make an array of")
    return db_type.split("(")[0] + "[]"


def row_values_in(
    rows: QuerySet[M], fields: Sequence[str], values: Sequence[Sequence[Any]]
) -> QuerySet[M]:
    """`rows` whose `fields` (names; "pk" for the key) equal one of `values`:
    `(a, b, …) IN (VALUES (…), …)`, one row value each (PostgreSQL, and SQLite since
    3.15). The same condition as an OR of one Q per row, which Django takes longer to
    compile than the database takes to run when there are thousands
    (docs/performance.md). `values` must not be empty."""
    connection = connections[rows.db]
    meta = rows.model._meta
    table = connection.ops.quote_name(meta.db_table)
    quote = connection.ops.quote_name
    columns = ", ".join(f"{table}.{quote(column_name(meta, name))}" for name in fields)
    one = "(" + ", ".join(["%s"] * len(fields)) + ")"
    params = [value for row in values for value in row]
    return rows.extra(
        where=[f"({columns}) IN (VALUES {', '.join([one] * len(values))})"], params=params
    )


def column_name(meta: Options[Any], name: str) -> str:
    """The column of the field `name` ("pk" for the key) of a model."""
    return _column(_field(meta, name))


def _field(meta: Options[Any], name: str) -> Field:
    """The field `name` ("pk" for the key) of a model, if it is a column of its table: not
    a reverse relation nor a many-to-many."""
    field = meta.pk if name == "pk" else meta.get_field(name)
    if not isinstance(field, Field) or not field.concrete:
        raise ValueError(f"{meta.label}.{name} is not a column of {meta.db_table}")
    return field


def _column(field: Field) -> str:
    if field.column is None:  # only fields without a column of their own; see _field
        raise ValueError(f"{field} has no column")
    return field.column


def address_lock(key: str, *, using: str = "default") -> None:
    """Hold the lock of one page address (a slug's key) until the caller's transaction
    ends, so that two writers who each check that the address is free, in different
    tables (an article's, a draft's), take turns: the second checks after the first
    committed. PostgreSQL: an advisory transaction lock, the same on every host; SQLite
    has one writer at a time."""
    connection = connections[using]
    if connection.vendor != "postgresql":
        return
    if not connection.in_atomic_block:
        raise RuntimeError("address_lock needs a transaction: it lasts until its end")
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_address_key(key)])


def address_locks(keys: Iterable[str], *, using: str = "default") -> None:
    """address_lock() of many addresses at once (an import's chunk), in one statement
    and in key order (advisory_locks)."""
    advisory_locks({_address_key(key) for key in keys}, using=using)


def _address_key(key: str) -> int:
    # (surrogatepass: any text has a key, also one not validated yet.)
    data = f"blogpublish.address:{key}".encode("utf-8", "surrogatepass")
    digest = hashlib.blake2b(data, digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def advisory_key(kind: str, name: object) -> int:
    """A signed 64-bit key for pg_advisory_xact_lock: the same on every host (the page
    guard's, blogpublish.site.lock: "slug" and "article" keys)."""
    data = f"blogpublish.{kind}:{name}".encode()
    return (zlib.crc32(data) << 31 | zlib.crc32(data[::-1]) >> 1) - 2**62


def advisory_locks(keys: Iterable[int], *, using: str = "default") -> None:
    """Hold these advisory locks until the caller's transaction ends, taken in one
    statement in key order, the order every page guard takes its own: a transaction
    that goes on to take them one at a time (a bulk delete, each row's page guard)
    never waits for a guard that waits for it. PostgreSQL; SQLite has one writer."""
    connection = connections[using]
    ordered = sorted(set(keys))
    if connection.vendor != "postgresql" or not ordered:
        return
    if not connection.in_atomic_block:
        raise RuntimeError("advisory_locks needs a transaction: they last until its end")
    with connection.cursor() as cursor:
        for start in range(0, len(ordered), ADVISORY_LOCKS_PER_STATEMENT):  # still in order
            part = ordered[start : start + ADVISORY_LOCKS_PER_STATEMENT]
            locks = ", ".join("pg_advisory_xact_lock(%s)" for _ in part)
            cursor.execute(f"SELECT {locks}", part)


# PostgreSQL's protocol carries at most 65,535 parameters a statement.
ADVISORY_LOCKS_PER_STATEMENT = 10_000


def database_unreachable(using: str = "default") -> str | None:
    """None if the database answers, else why not in one line, naming DATABASE_URL
    without its password (`make run` and `migrate` say it instead of a traceback:
    PostgreSQL not running, a database not created, a refused login)."""
    from django.conf import settings
    from django.db import DatabaseError

    connection = connections[using]
    try:
        connection.ensure_connection()
    except DatabaseError as exc:
        why = " ".join(str(exc).split()) or type(exc).__name__  # psycopg's spans lines
        where = getattr(settings, "DATABASE_URL", "") if using == "default" else ""
        named = f"DATABASE_URL={without_password(where)}" if where else f"database {using!r}"
        return f"{named}: {why}"
    return None


def without_password(url: str) -> str:
    """`url` with its password (if any) as `***`: in the user part, and as a query
    parameter (`?password=`, which libpq and the settings take too: it was printed
    whole, a review of the mend)."""
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password is not None:
        netloc = parts.netloc.rsplit("@", 1)
        user = netloc[0].split(":", 1)[0]
        parts = parts._replace(netloc=f"{user}:***@{netloc[1]}")
    query = parse_qsl(parts.query, keep_blank_values=True)
    if any(name.lower() == "password" for name, _ in query):
        masked = [(n, "***" if n.lower() == "password" else v) for n, v in query]
        parts = parts._replace(query=urlencode(masked, safe="*"))
    return urlunsplit(parts)
