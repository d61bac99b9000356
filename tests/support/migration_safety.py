"""What a migration after the previous release may do on PostgreSQL (issue 23, item 2;
docs/operations.md, "Upgrades").

Migrations run first in a rolling deploy, while the previous release's web and workers
keep saving and claiming. So a new migration must
- never hold a lock on a hot table (every save, claim and attempt writes it) for
  longer than an instant: no rewrite, no scan or index build under a lock that blocks
  writes, no backfill inside the DDL's transaction (`LOCK_RULES`);
- leave the previous release's code working (`COMPATIBILITY_RULES`): no column or
  table it reads dropped or renamed, no NOT NULL column its INSERTs do not fill.

`statement_problems` reads the SQL `sqlmigrate` prints (the schema editor's collected
statements); `python_problems` the operations SQL cannot show (RunPython). A migration
that must do one of these anyway names the rule and why in `deploy_accepted`, e.g.
`deploy_accepted = {"not-null-no-default": "the previous release never inserts here"}`.
"""

from __future__ import annotations

import ast
import functools
import inspect
import json
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RELEASE_FILE = ROOT / "deploy" / "previous-release.json"

# The models a save, a claim, a publisher's step or an outcome writes: a lock on one of
# their tables stops every save or every publish while it is held. ArticleCount by the
# article table's triggers (0010_metrics_rollup), in the same transactions; ArticleTag,
# Tag and TagRefresh by the live tags an outcome writes; MetricsBucket by every outcome,
# Refresher's one row after it; PageNote by the site's page write, WebhookDelivery by
# the webhook's outbox row. tests/integration/test_migration_safety.py saves and
# publishes an article and fails when it writes a table these lack.
HOT_MODELS = (
    "publishing.Article",
    "publishing.PublishAttempt",
    "publishing.ArticleCount",
    "publishing.ArticleTag",
    "publishing.Tag",
    "publishing.TagRefresh",
    "publishing.MetricsBucket",
    "publishing.Refresher",
    "publishing.WebhookDelivery",
    "blogpublish.PageNote",
)


@functools.cache
def hot_tables() -> frozenset[str]:
    """HOT_MODELS' tables, as the models name them (a db_table moves with its model)."""
    from django.apps import apps

    return frozenset(apps.get_model(label)._meta.db_table for label in HOT_MODELS)


# Functions whose value differs per row: a column added with one as its default is
# written into every row (a rewrite), where a constant default is metadata only.
VOLATILE = re.compile(
    r"\b(random|gen_random_uuid|uuid_generate_v\d\w*|clock_timestamp|timeofday|nextval)\s*\(",
    re.I,
)


# What each rule protects, and the safe way of doing the same.
WHY_INDEX = (
    "blocks writes while it builds; CREATE INDEX CONCURRENTLY (AddIndexConcurrently, "
    "atomic = False)"
)
WHY_BACKFILL = (
    "locks every row it touches until the migration commits; backfill in batches in a"
    " migration of its own with atomic = False"
)
WHY_DROP_TABLE = (
    "the previous release reads this table; drop it a release after the code stops using it"
)
WHY_NOT_NULL = (
    "is NOT NULL without a database default: the previous release's INSERTs do not "
    "name it and fail; give it db_default= (kept in the database), or make it "
    "nullable"
)
WHY_VOLATILE = (
    "a per-row default rewrites the table under ACCESS EXCLUSIVE; add it nullable, "
    "backfill in batches"
)
WHY_UNIQUE_COLUMN = (
    "builds its index under ACCESS EXCLUSIVE; add the column, then a unique index CONCURRENTLY"
)
WHY_TYPE = (
    "a type change rewrites the table (and its indexes) under ACCESS EXCLUSIVE; add a"
    " new column, backfill in batches, switch over a release later"
)
WHY_SET_NOT_NULL = (
    "scans every row under ACCESS EXCLUSIVE; add CHECK (… IS NOT NULL) NOT VALID, "
    "VALIDATE it, then SET NOT NULL in a later migration"
)
WHY_DROP_COLUMN = (
    "the previous release reads this column; stop using it in one release "
    "(SeparateDatabaseAndState), drop it in the next"
)
WHY_RENAME = (
    "the previous release uses the old name; add the new one, copy, drop the old a release later"
)
WHY_VALIDATE = (
    "checks every row while it holds the table; add it NOT VALID, then VALIDATE "
    "CONSTRAINT in a later migration"
)
WHY_INLINE_CHECK = (
    "a column added with its CHECK, or its foreign key and a default, is checked on every"
    " row under ACCESS EXCLUSIVE; add the column without it, the constraint NOT VALID,"
    " VALIDATE CONSTRAINT in a later migration"
)
WHY_UNIQUE = (
    "builds its index under ACCESS EXCLUSIVE; CREATE UNIQUE INDEX CONCURRENTLY, then "
    "ADD CONSTRAINT … USING INDEX"
)
WHY_RUNPYTHON = (
    "uses a hot model in an atomic migration; move it to a migration with atomic = "
    "False that updates in batches, each its own transaction"
)
WHY_UNSEEN = (
    "cannot be read by the check, which sees only the source of functions; read what it"
    " does, and if it takes no lock on a hot table for longer than an instant say so in"
    ' the migration: deploy_accepted = {"runpython-unseen": "why"}'
)
WHY_BATCH = (
    "writes the whole set in one statement, whose row locks last as long as it runs;"
    " write it in batches of a few thousand rows, a statement each, in a loop"
)
WHY_WHOLE = "holds the table for as long as it runs"
WHY_DO = (
    "a DO block that names a hot table writes it (or alters it) inside the migration's"
    " transaction; do it as plain SQL the check can read, or backfill in batches in a"
    " migration of its own with atomic = False"
)
WHY_TIMEOUT = (
    "sets the session's lock or statement timeout: migrate's MIGRATION_LOCK_TIMEOUT no"
    " longer bounds the waits of the statements after it"
)
WHY_SET = "rewrites the table under ACCESS EXCLUSIVE"


# Migrations on main before a rule that refuses them came in, kept as they are (they
# have run on databases; a migration once run is not edited), each with why it passes.
GRANDFATHERED: dict[str, dict[str, str]] = {
    "publishing.0020_article_message_id": {
        "backfill-in-ddl": "reinstall_on_sqlite (0013's) returns at once on PostgreSQL; on"
        " SQLite it makes the article table's count triggers again, no row written",
    },
    "publishing.0023_tag_slugs_fit_a_file_name": {
        "backfill-in-ddl": "written before publishing_tag was hot; it updates only the tags"
        " whose folder was too long for a file name (their pages never written), a row each",
    },
    **{
        f"publishing.{name}": {
            "backfill-in-ddl": "written before publishing_tag was hot; it locks the tag table"
            " against writes on purpose while tags_by_their_keys merges and moves rows (its"
            " docstring: a row a tag), so an old release cannot make one under a key it moves",
        }
        for name in (
            "0026_tags_one_per_slug",
            "0030_tag_slugs_keep_marks",
            "0031_tag_slugs_without_stray_marks",
        )
    },
}


def accepted(migration) -> dict[str, str]:
    """The rules a migration may break, and why: its own `deploy_accepted`, or
    GRANDFATHERED's entry for it."""
    key = f"{migration.app_label}.{migration.name}"
    return GRANDFATHERED.get(key, {}) | getattr(migration, "deploy_accepted", {})


def previous_release() -> dict:
    """deploy/previous-release.json: the release tag, its commit, and its migrations."""
    return json.loads(RELEASE_FILE.read_text())


@dataclass
class Context:
    """What a statement is judged against: the tables the same migration creates (an
    empty table may be locked and scanned), each table's columns in the previous
    release's schema (what its code reads and writes), and the hot tables."""

    created: set[str] = field(default_factory=set)
    previous_columns: dict[str, set[str]] = field(default_factory=dict)
    hot: frozenset[str] = field(default_factory=hot_tables)


def _name(raw: str) -> str:
    """A table's name without its quotes and its schema (`"public"."x"` is `x`)."""
    return raw.rsplit(".", 1)[-1].strip('"').lower()


# A table's name as SQL may write it: quoted or not, with its schema or not.
_TABLE = r'((?:"?\w+"?\.)?"?\w+"?)'


_ALTER = re.compile(
    rf"^\s*ALTER\s+TABLE\s+(?:ONLY\s+)?(?:IF\s+EXISTS\s+)?(?:ONLY\s+)?{_TABLE}\s+(.*)$", re.I | re.S
)
_CREATE_TABLE = re.compile(rf"^\s*CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?{_TABLE}", re.I)
_CREATE_INDEX = re.compile(
    rf"^\s*CREATE\s+(?:UNIQUE\s+)?INDEX\s+(CONCURRENTLY\s+)?.*?\bON\s+(?:ONLY\s+)?{_TABLE}",
    re.I | re.S,
)
# A write to many rows, after any WITH … (its CTEs): its row locks last until the
# migration commits.
_DML = re.compile(
    rf"^\s*(?:WITH\b.*?\)\s*)?(?:UPDATE\s+(?:ONLY\s+)?{_TABLE}|DELETE\s+FROM\s+(?:ONLY\s+)?"
    rf"{_TABLE}|INSERT\s+INTO\s+{_TABLE}.*\bSELECT\b)",
    re.I | re.S,
)
_DROP_TABLE = re.compile(rf"^\s*DROP\s+TABLE\s+(?:IF\s+EXISTS\s+)?{_TABLE}", re.I)
_WHOLE_TABLE = re.compile(
    r"^\s*(?:VACUUM\s+FULL|CLUSTER|REINDEX\s+TABLE(?!\s+CONCURRENTLY)|LOCK\s+TABLE|TRUNCATE)"
    r"\s+(?:\w+\s+)*?" + _TABLE,
    re.I,
)


_DO = re.compile(r"^\s*DO\b", re.I)
# SET/RESET of either timeout anywhere (a DO block's too), RESET ALL, set_config().
_TIMEOUT = re.compile(
    r"\b(?:SET|RESET)\s+(?:SESSION\s+|LOCAL\s+)?(?:lock_timeout|statement_timeout)\b"
    r"|^\s*RESET\s+ALL\b|\bset_config\s*\(\s*'(?:lock_timeout|statement_timeout)'",
    re.I | re.M,
)
_DOLLAR = re.compile(r"\$(?:[A-Za-z_]\w*)?\$")
_BODY_COMMENT = re.compile(r"--[^\n]*|/\*.*?\*/", re.S)


def _statements(sql: str) -> list[str]:
    """One string of SQL as the statements it holds, each without its comments (`--`
    and `/* */`, nested as PostgreSQL nests them), so a comment before a statement hides
    nothing. A quoted string or name stays whole (its `;` and `--` are its own); so does a
    dollar-quoted body (a DO block's), less its comments."""
    out: list[str] = []
    current: list[str] = []
    i, n = 0, len(sql)
    while i < n:
        two = sql[i : i + 2]
        if two == "--":
            end = sql.find("\n", i)
            i = n if end < 0 else end
        elif two == "/*":
            depth, i = 1, i + 2
            while i < n and depth:
                step = sql[i : i + 2]
                depth += {"/*": 1, "*/": -1}.get(step, 0)
                i += 2 if step in ("/*", "*/") else 1
            current.append(" ")
        elif (quote := sql[i]) in "'\"":  # a string, or a quoted name; doubled inside
            end = i + 1
            while end < n and (sql[end] != quote or sql[end + 1 : end + 2] == quote):
                end += 2 if sql[end : end + 2] == quote * 2 else 1
            current.append(sql[i : end + 1])
            i = end + 1
        elif (tag := _DOLLAR.match(sql, i)) and not sql[i - 1 : i].isalnum():
            end = sql.find(tag.group(0), tag.end())
            end = n if end < 0 else end + len(tag.group(0))
            current.append(_BODY_COMMENT.sub(" ", sql[i:end]))
            i = end
        elif sql[i] == ";":
            out.append("".join(current))
            current, i = [], i + 1
        else:
            current.append(sql[i])
            i += 1
    out.append("".join(current))
    return [s.strip() for s in out if s.strip()]


def _clauses(action: str) -> list[str]:
    """The comma-separated actions of one ALTER TABLE (commas inside parentheses kept)."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in action:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


def statement_problems(statements: list[str], context: Context) -> list[tuple[str, str]]:
    """(rule, what) for each statement of one migration that breaks a rule."""
    found: list[tuple[str, str]] = []
    added_not_null: dict[tuple[str, str], bool] = {}  # (table, column) -> has a default
    for sql in (one for text in statements for one in _statements(text)):
        short = " ".join(sql.split())[:160]
        if _TIMEOUT.search(sql):
            found.append(("timeout-changed", f"{short}: {WHY_TIMEOUT}"))
            continue
        if _DO.match(sql):
            if any(re.search(rf"\b{table}\b", sql, re.I) for table in context.hot):
                found.append(("backfill-in-ddl", f"{short}: {WHY_DO}"))
            continue
        if m := _CREATE_TABLE.match(sql):
            context.created.add(_name(m.group(1)))
            continue
        if m := _CREATE_INDEX.match(sql):
            table = _name(m.group(2))
            if not m.group(1) and table in context.hot and table not in context.created:
                found.append(("index-not-concurrent", f"{short}: {WHY_INDEX}"))
            continue
        if m := _DML.match(sql):
            table = _name(next(g for g in m.groups() if g))
            if table in context.hot:
                found.append(("backfill-in-ddl", f"{short}: {WHY_BACKFILL}"))
            continue
        if m := _DROP_TABLE.match(sql):
            table = _name(m.group(1))
            if table in context.previous_columns:
                found.append(("drop-used", f"{short}: {WHY_DROP_TABLE}"))
            continue
        if m := _WHOLE_TABLE.match(sql):
            if _name(m.group(1)) in context.hot:
                found.append(("rewrite", f"{short}: {WHY_WHOLE}"))
            continue
        if m := _ALTER.match(sql):
            table = _name(m.group(1))
            for clause in _clauses(m.group(2)):
                found += _alter_problems(table, clause, context, added_not_null, short)
    for (table, column), has_default in added_not_null.items():
        if not has_default and table in context.previous_columns:
            found.append(("not-null-no-default", f"{table}.{column} {WHY_NOT_NULL}"))
    return found


def _alter_problems(table, clause, context, added_not_null, short) -> list[tuple[str, str]]:
    up = " ".join(clause.split()).upper()
    hot = table in context.hot and table not in context.created
    old = context.previous_columns.get(table, set())
    found = []
    if m := re.match(
        r'ADD\s+(?:COLUMN\s+)?(?:IF\s+NOT\s+EXISTS\s+)?("?\w+"?)\s+(.*)$', clause, re.I | re.S
    ):
        if up.startswith("ADD CONSTRAINT"):
            return _constraint_problems(table, clause, context, short)
        column, rest = _name(m.group(1)), m.group(2)
        rest_up = rest.upper()
        if hot and (
            VOLATILE.search(rest)
            or "GENERATED ALWAYS" in rest_up
            or re.search(r"\b(SERIAL|BIGSERIAL|SMALLSERIAL|IDENTITY)\b", rest_up)
        ):
            found.append(("rewrite", f"{short}: {WHY_VOLATILE}"))
        if hot and re.search(r"\bUNIQUE\b|\bPRIMARY\s+KEY\b", rest_up):
            found.append(("index-under-lock", f"{short}: {WHY_UNIQUE_COLUMN}"))
        found += _inline_check_problems(table, rest, context, short)
        if "NOT NULL" in rest_up and "PRIMARY KEY" not in rest_up:
            added_not_null[(table, column)] = "DEFAULT" in rest_up
        return found
    if m := re.match(r'ALTER\s+(?:COLUMN\s+)?("?\w+"?)\s+(.*)$', clause, re.I | re.S):
        column, rest_up = _name(m.group(1)), " ".join(m.group(2).split()).upper()
        if rest_up.startswith("DROP DEFAULT") and (table, column) in added_not_null:
            added_not_null[(table, column)] = False
        elif (rest_up.startswith("TYPE") or rest_up.startswith("SET DATA TYPE")) and hot:
            found.append(("rewrite", f"{short}: {WHY_TYPE}"))
        elif rest_up.startswith("SET NOT NULL") and hot:
            found.append(("validate-under-lock", f"{short}: {WHY_SET_NOT_NULL}"))
        return found
    if m := re.match(r'DROP\s+(?:COLUMN\s+)?(?:IF\s+EXISTS\s+)?("?\w+"?)', clause, re.I):
        if not up.startswith("DROP CONSTRAINT") and _name(m.group(1)) in old:
            found.append(("drop-used", f"{short}: {WHY_DROP_COLUMN}"))
        return found
    if up.startswith("RENAME"):
        if table in context.previous_columns:
            found.append(("drop-used", f"{short}: {WHY_RENAME}"))
        return found
    if re.match(r"SET\s+(TABLESPACE|LOGGED|UNLOGGED|WITHOUT\s+OIDS)", up) and hot:
        found.append(("rewrite", f"{short}: {WHY_SET}"))
    return found


def _inline_check_problems(table, rest, context, short) -> list[tuple[str, str]]:
    """An ADD COLUMN's own CHECK, or its REFERENCES with a default that is not NULL:
    PostgreSQL checks every row under the ALTER's ACCESS EXCLUSIVE (a foreign key's
    table held too), and inline there is no NOT VALID to say."""
    if table in context.created:
        return []
    rest_up = " ".join(rest.split()).upper()
    referenced = {_name(r) for r in re.findall(rf"\bREFERENCES\s+{_TABLE}", rest, re.I)}
    with_default = re.search(r"\bDEFAULT\s+(?!NULL\b)", rest_up)
    if (table in context.hot and re.search(r"\bCHECK\b", rest_up)) or (
        referenced and with_default and ({table} | referenced) & context.hot
    ):
        return [("validate-under-lock", f"{short}: {WHY_INLINE_CHECK}")]
    return []


def _constraint_problems(table, clause, context, short) -> list[tuple[str, str]]:
    up = " ".join(clause.split()).upper()
    locked = {table} | ({_name(r) for r in re.findall(r'REFERENCES\s+("?\w+"?)', clause, re.I)})
    if not (locked & context.hot) or table in context.created:
        return []  # a constraint of a table this migration made: empty, checked at once
    if ("CHECK" in up or "FOREIGN KEY" in up) and "NOT VALID" not in up:
        return [
            (
                "validate-under-lock",
                f"{short}: {WHY_VALIDATE}",
            )
        ]
    if ("UNIQUE" in up or "PRIMARY KEY" in up or "EXCLUDE" in up) and "USING INDEX" not in up:
        return [
            (
                "index-under-lock",
                f"{short}: {WHY_UNIQUE}",
            )
        ]
    return []


def python_problems(migration) -> list[tuple[str, str]]:
    """A RunPython that uses a hot model: inside a transaction (an atomic migration, or
    RunPython(atomic=True)) its writes lock the rows (and its DDL neighbours the table)
    until the whole migration commits; outside one, a write of the whole table outside
    a loop locks every row it touches for as long as it runs. Its code is read with the
    project's functions it calls (`_read`); what cannot be read is flagged for review."""
    from django.db.migrations.operations import RunPython

    found = []
    for op in migration.operations:
        if not isinstance(op, RunPython):
            continue
        name = getattr(op.code, "__name__", repr(op.code))
        read = _read(op.code)
        if read.unseen:
            unseen = ", ".join(sorted(read.unseen))
            found.append(("runpython-unseen", f"RunPython {name}: {unseen} {WHY_UNSEEN}"))
        if read.timeout:
            found.append(("timeout-changed", f"RunPython {name}: {WHY_TIMEOUT}"))
        if not read.hot:
            continue
        if op.atomic or (migration.atomic and op.atomic is not False):
            found.append(("backfill-in-ddl", f"RunPython {name} {WHY_RUNPYTHON}"))
        elif read.unbatched:
            found.append(("backfill-unbatched", f"RunPython {name}: {read.unbatched} {WHY_BATCH}"))
    return found


@dataclass
class _Read:
    """What `_read` found: whether the code uses a hot model or table, its writes of
    many rows outside a loop, whether it sets a timeout, and what it uses that cannot
    be read."""

    hot: bool = False
    unbatched: str = ""
    timeout: bool = False
    unseen: set[str] = field(default_factory=set)


# A write of many rows in one statement: a queryset's update()/delete()/bulk_update(),
# or UPDATE/DELETE in raw SQL.
_BULK_CALLS = {"update", "delete", "bulk_update"}
_BULK_SQL = re.compile(r"^\s*(?:WITH\b.*?\)\s*)?(?:UPDATE|DELETE)\b", re.I | re.S)


def _read(code) -> _Read:
    """`code`'s source with that of each function of the project it calls, followed
    through the globals of each (a helper in the migration or in another module). A
    module or class of the project used by name (other than a model), or a function
    whose source is not to be had, is `unseen`: the check cannot tell what it does."""
    from django.db import models

    names = [label.split(".")[1] for label in HOT_MODELS]
    # (a function, whether a loop of its caller calls it: its writes are then batches)
    result, todo, done = _Read(), [(code, False)], set()
    while todo:
        func, looped = todo.pop()
        func = inspect.unwrap(func)
        if isinstance(func, functools.partial):
            todo.append((func.func, looped))
            continue
        if id(func) in done:
            continue
        done.add(id(func))
        try:
            source = textwrap.dedent(inspect.getsource(func))
        except (OSError, TypeError):
            result.unseen.add(getattr(func, "__qualname__", repr(func)))
            continue
        # apps.get_model("publishing", "Article") or ("publishing.article": Django takes
        # any case), or the table itself in raw SQL (schema_editor.execute, a cursor)
        if any(re.search(rf"[\"'](?:\w+\.)?{n}[\"']", source, re.I) for n in names) or any(
            re.search(rf"\b{table}\b", source, re.I) for table in hot_tables()
        ):
            result.hot = True
        unbatched, in_loops = _loops(source)
        result.unbatched = result.unbatched or ("" if looped else unbatched)
        result.timeout = result.timeout or bool(_TIMEOUT.search(source))
        for used in _globals_used(func):
            if not _ours(used):
                continue
            if inspect.isfunction(used):
                todo.append((used, looped or used.__name__ in in_loops))
            elif isinstance(used, type) and issubclass(used, models.Model):
                result.hot = result.hot or used._meta.label in HOT_MODELS
            elif callable(used):
                result.unseen.add(getattr(used, "__qualname__", repr(used)))
    return result


def _globals_used(func) -> list:
    """The objects `func` (and the functions and comprehensions inside it) names from
    its module's globals, a module's attributes it names (`COUNTS.install(…)`) for the
    module."""
    code = getattr(func, "__code__", None)
    if code is None:
        return []
    names, codes = set(), [code]
    while codes:
        one = codes.pop()
        names |= set(one.co_names)
        codes += [c for c in one.co_consts if inspect.iscode(c)]
    scope = getattr(func, "__globals__", {})
    used, todo, modules = [], [scope[name] for name in sorted(names) if name in scope], set()
    while todo:
        obj = todo.pop()
        if not inspect.ismodule(obj):
            used.append(inspect.unwrap(obj) if callable(obj) else obj)
        elif id(obj) not in modules:
            modules.add(id(obj))
            todo += [vars(obj)[name] for name in sorted(names) if name in vars(obj)]
    return used


def _ours(obj) -> bool:
    """Whether obj is the project's own code (not Django's, nor the standard library's)."""
    module = obj if inspect.ismodule(obj) else inspect.getmodule(obj)
    path = getattr(module, "__file__", None)
    if not path:
        return False
    resolved = Path(path).resolve()
    return ROOT in resolved.parents and ".venv" not in resolved.parts


def _loops(source: str) -> tuple[str, set[str]]:
    """The first write of many rows in `source` that no loop repeats (one statement over
    the whole set: its row locks last as long as it runs), or "", and the names of the
    functions a loop calls (a batch helper)."""
    tree = ast.parse(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    loops = (ast.For, ast.While, ast.AsyncFor, ast.comprehension)

    def in_loop(node: ast.AST) -> bool:
        up = parents.get(node)
        while up is not None and not isinstance(up, loops):
            up = parents.get(up)
        return up is not None

    unbatched, in_loops = "", set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        if isinstance(node.func, ast.Name):
            if in_loop(node):
                in_loops.add(node.func.id)
            continue
        if not isinstance(node.func, ast.Attribute):
            continue
        first = node.args[0] if node.args else None
        sql = first.value if isinstance(first, ast.Constant) else None
        if node.func.attr in _BULK_CALLS or (
            node.func.attr == "execute" and isinstance(sql, str) and _BULK_SQL.match(sql)
        ):
            if not in_loop(node):
                unbatched = unbatched or ast.unparse(node)[:120]
        elif in_loop(node):
            in_loops.add(node.func.attr)
    return unbatched, in_loops
