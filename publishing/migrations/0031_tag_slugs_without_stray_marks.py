"""Tags' and bylines' folders without a mark that no letter carries: an emoji's
variation selector (U+FE0F) or a mark after what the slug drops (validators.
slugify_keeping_marks: "☕️ coffee" had a folder that began with an invisible U+FE0F, a
review's finding). `services.live_tags.tags_by_their_keys`, as 0026 and 0030: the rows
whose folder changes move to it and their pages are asked for; most sites change
nothing. The old folders are removed by the next full check (docs/site.md, "Tags");
the pages that link to a moved tag are written again by the look's change
(look.PAGE_FORMAT 6, SHARED_FORMAT 8).

On PostgreSQL the tag table is locked against writes while it runs, as in 0026.
"""

from django.db import migrations

from publishing.services.live_tags import tags_by_their_keys


def folders_without_stray_marks(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("LOCK TABLE publishing_tag IN SHARE ROW EXCLUSIVE MODE")
    tags_by_their_keys(apps)


class Migration(migrations.Migration):
    dependencies = [
        ("publishing", "0030_tag_slugs_keep_marks"),
    ]

    operations = [
        migrations.RunPython(
            folders_without_stray_marks, migrations.RunPython.noop, elidable=True
        ),
    ]
