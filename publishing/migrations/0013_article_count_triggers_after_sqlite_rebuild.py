"""The article count triggers again on SQLite.

0011 adds check constraints to the article table; SQLite cannot add a constraint to a
table, so Django rebuilds it (a new table, the rows copied, the old one dropped), and a
dropped table takes its triggers with it: from then on no count moved. PostgreSQL adds
the constraints in place and keeps the triggers. So on SQLite the triggers of 0010 are
made again and the counts recounted, as 0010 did.

A later migration that rebuilds the article table on SQLite must do the same
(tests/integration/test_article_counts.py fails otherwise).
"""

import importlib

from django.db import migrations

COUNTS = importlib.import_module("publishing.migrations.0010_metrics_rollup")


def reinstall_on_sqlite(apps, schema_editor):
    if schema_editor.connection.vendor != "sqlite":
        return
    COUNTS.remove_count_triggers(apps, schema_editor)
    COUNTS.install_count_triggers(apps, schema_editor)


class Migration(migrations.Migration):
    dependencies = [
        ("publishing", "0012_body_size_is_the_only_markdown_limit"),
    ]

    operations = [
        migrations.RunPython(reinstall_on_sqlite, migrations.RunPython.noop),
    ]
