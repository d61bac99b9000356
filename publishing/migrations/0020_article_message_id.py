"""The id of the publish message a save sent (issue 18): a group that claims the row
besides its own tells the workers to drop that message unrun. A column with a constant
default: no rewrite of the table on PostgreSQL, and the previous release's inserts
(without it) get "", which names no message. On SQLite the column's database default
makes Django rebuild the article table, and the dropped table takes the count triggers
with it: made again, as 0013 does."""

import importlib

from django.db import migrations, models

reinstall_on_sqlite = importlib.import_module(
    "publishing.migrations.0013_article_count_triggers_after_sqlite_rebuild"
).reinstall_on_sqlite


class Migration(migrations.Migration):
    dependencies = [("publishing", "0019_tagrefresh_since")]

    operations = [
        migrations.AddField(
            model_name="article",
            name="message_id",
            field=models.CharField(
                blank=True, db_default="", default="", editable=False, max_length=64
            ),
        ),
        migrations.RunPython(reinstall_on_sqlite, migrations.RunPython.noop),
    ]
