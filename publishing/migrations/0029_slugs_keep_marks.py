"""Slugs keep the marks letters carry (publishing.fields.SlugField): validators only,
the state alone changes (no SQL on any database)."""

import publishing.fields
import publishing.text_limits
import publishing.validators
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("publishing", "0028_text_that_shows_something"),
    ]

    # State only: validators are not the database's, and on SQLite an AlterField of the
    # article table remakes it, which drops its triggers (the kept counts).
    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="article",
                    name="slug",
                    field=publishing.fields.SlugField(
                        blank=True,
                        help_text="The page's address: letters (any script), digits, - and _. Left blank, it is made from the title.",
                        max_length=200,
                        unique=True,
                        validators=[
                            publishing.validators.validate_slug_bytes,
                            publishing.validators.validate_not_reserved,
                            publishing.text_limits.validate_xml_chars,
                            publishing.text_limits.validate_display_chars,
                        ],
                    ),
                ),
                migrations.AlterField(
                    model_name="story",
                    name="slug",
                    field=publishing.fields.SlugField(
                        blank=True,
                        help_text="The page's address. Left blank, it is made from the title.",
                        max_length=200,
                        validators=[
                            publishing.validators.validate_slug_bytes,
                            publishing.validators.validate_not_reserved,
                            publishing.text_limits.validate_xml_chars,
                            publishing.text_limits.validate_display_chars,
                        ],
                    ),
                ),
            ],
            database_operations=[],
        ),
    ]
