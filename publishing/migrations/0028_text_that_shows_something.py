"""A title, a description, a byline (and each tag, validated in code) must show
something: validators only: the state alone changes (no SQL on any database). Rows stored before keep
their text until an edit, which is refused until the text shows something."""

import publishing.reader_fields
import publishing.text_limits
import publishing.validators
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("publishing", "0027_former_addresses"),
    ]

    # State only: validators are not the database's, and on SQLite an AlterField of the
    # article table remakes it, which drops its triggers (the kept counts).
    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="article",
                    name="byline",
                    field=models.CharField(
                        blank=True,
                        db_default="",
                        default="",
                        help_text="The author's name as readers see it.",
                        max_length=200,
                        validators=[
                            publishing.reader_fields.validate_byline,
                            publishing.text_limits.validate_xml_chars,
                            publishing.text_limits.validate_display_chars,
                            publishing.text_limits.validate_visible,
                        ],
                    ),
                ),
                migrations.AlterField(
                    model_name="article",
                    name="description",
                    field=models.CharField(
                        blank=True,
                        db_default="",
                        default="",
                        help_text="What search results and link cards show. Empty: the first lines.",
                        max_length=1000,
                        validators=[
                            publishing.reader_fields.validate_description,
                            publishing.text_limits.validate_xml_chars,
                            publishing.text_limits.validate_display_chars,
                            publishing.text_limits.validate_visible,
                        ],
                    ),
                ),
                migrations.AlterField(
                    model_name="article",
                    name="title",
                    field=models.CharField(
                        max_length=200,
                        validators=[
                            publishing.validators.validate_single_line,
                            publishing.text_limits.validate_xml_chars,
                            publishing.text_limits.validate_display_chars,
                            publishing.text_limits.validate_visible,
                        ],
                    ),
                ),
                migrations.AlterField(
                    model_name="story",
                    name="byline",
                    field=models.CharField(
                        blank=True,
                        db_default="",
                        default="",
                        help_text="The author's name as readers see it.",
                        max_length=200,
                        validators=[
                            publishing.reader_fields.validate_byline,
                            publishing.text_limits.validate_xml_chars,
                            publishing.text_limits.validate_display_chars,
                            publishing.text_limits.validate_visible,
                        ],
                    ),
                ),
                migrations.AlterField(
                    model_name="story",
                    name="description",
                    field=models.CharField(
                        blank=True,
                        db_default="",
                        default="",
                        help_text="What search results and link cards show. Empty: the first lines.",
                        max_length=1000,
                        validators=[
                            publishing.reader_fields.validate_description,
                            publishing.text_limits.validate_xml_chars,
                            publishing.text_limits.validate_display_chars,
                            publishing.text_limits.validate_visible,
                        ],
                    ),
                ),
                migrations.AlterField(
                    model_name="story",
                    name="title",
                    field=models.CharField(
                        max_length=200,
                        validators=[
                            publishing.validators.validate_single_line,
                            publishing.text_limits.validate_xml_chars,
                            publishing.text_limits.validate_display_chars,
                            publishing.text_limits.validate_visible,
                        ],
                    ),
                ),
            ],
            database_operations=[],
        ),
    ]
