"""The reserved-slug check that 0017 added NOT VALID on PostgreSQL, validated: a scan
of the article table under SHARE UPDATE EXCLUSIVE, which saves and claims do not wait
for (docs/operations.md, "Upgrades"). Nothing to do elsewhere."""

from django.contrib.postgres.operations import ValidateConstraint
from django.db import migrations


class ValidateOnPostgres(ValidateConstraint):
    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "postgresql":
            super().database_forwards(app_label, schema_editor, from_state, to_state)


class Migration(migrations.Migration):
    dependencies = [("publishing", "0017_reader_fields")]

    operations = [ValidateOnPostgres(model_name="article", name="article_slug_not_reserved")]
