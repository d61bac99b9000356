"""Former addresses (docs/site.md, "Former addresses"): the slugs live articles left,
whose folders send readers on. A new table, empty: the moves made before it are not
known, and their old addresses stay as they were (404)."""

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("publishing", "0026_tags_one_per_slug"),
    ]

    operations = [
        migrations.CreateModel(
            name="FormerAddress",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("slug", models.CharField(db_index=True, max_length=200)),
                ("left_at", models.DateTimeField(default=django.utils.timezone.now)),
                (
                    "article",
                    models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="former_addresses",
                        to="publishing.article",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(fields=("article", "slug"), name="formeraddress_once")
                ],
            },
        ),
    ]
