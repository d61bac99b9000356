"""The live tags' rows lighter to write (docs/performance.md, "Tags in use"): no index
of their own on ArticleTag's article and tag (`articletag_once` and `tag_listed_idx`
begin with them), and no database constraint on a tag (ArticleTag's, TagRefresh's:
its check locked every tag's row a completion touched at its commit).

On PostgreSQL only those are dropped, each by the name Django gave it: Django's
AlterField would drop and add again the article's foreign key too, checking every row
under the table's lock (docs/operations.md, "Upgrades"). Elsewhere (SQLite: a table
rebuild) the AlterField."""

import django.db.models.deletion
from django.db import migrations, models


class AlterFieldLighter(migrations.AlterField):
    """An AlterField that only drops: on PostgreSQL the field's own index when it loses
    `db_index`, and its foreign key when it loses `db_constraint`, nothing else."""

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor != "postgresql":
            super().database_forwards(app_label, schema_editor, from_state, to_state)
            return
        model = to_state.apps.get_model(app_label, self.model_name)
        old = from_state.apps.get_model(app_label, self.model_name)._meta.get_field(self.name)
        new = model._meta.get_field(self.name)
        table = schema_editor.quote_name(model._meta.db_table)
        if old.db_constraint and not new.db_constraint:
            name = schema_editor._fk_constraint_name(model, old, "_fk_%(to_table)s_%(to_column)s")
            schema_editor.execute(f"ALTER TABLE {table} DROP CONSTRAINT IF EXISTS {name}")
        if old.db_index and not new.db_index:
            name = schema_editor._create_index_name(model._meta.db_table, [old.column])
            schema_editor.execute(f"DROP INDEX IF EXISTS {schema_editor.quote_name(name)}")

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        # Back to 0020: Django's AlterField from the lighter field to the older one,
        # which adds the index and the constraint again (checking every row: a rollback).
        migrations.AlterField.database_forwards(
            self, app_label, schema_editor, from_state, to_state
        )


class Migration(migrations.Migration):
    dependencies = [
        ("publishing", "0020_article_message_id"),
    ]

    operations = [
        AlterFieldLighter(
            model_name="articletag",
            name="article",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="live_tags",
                to="publishing.article",
            ),
        ),
        AlterFieldLighter(
            model_name="articletag",
            name="tag",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="articles",
                to="publishing.tag",
            ),
        ),
        AlterFieldLighter(
            model_name="tagrefresh",
            name="tag",
            field=models.ForeignKey(
                db_constraint=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="publishing.tag",
            ),
        ),
    ]
