"""Tags' and bylines' folders keep the marks letters carry, as articles' slugs do since
0029 (reader_fields.tag_slug: "हिन्दी" was the folder "हनद-" and a hash, its marks
dropped; it is "हिन्दी" now). `services.live_tags.tags_by_their_keys`, as 0026: the
rows whose folder changes move to it and their pages are asked for (and those of a
folder a moved one leaves); a key without marks keeps its folder, so most sites change
nothing. The old folders are removed by the next full check, as is every folder no tag
has (docs/site.md, "Tags"); the pages that link to a moved tag are written again by the
look's change (look.PAGE_FORMAT 4, SHARED_FORMAT 6).

On PostgreSQL the tag table is locked against writes while it runs, as in 0026.
"""

from django.db import migrations

from publishing.services.live_tags import tags_by_their_keys


def folders_keep_marks(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("LOCK TABLE publishing_tag IN SHARE ROW EXCLUSIVE MODE")
    tags_by_their_keys(apps)


class Migration(migrations.Migration):
    dependencies = [
        ("publishing", "0029_slugs_keep_marks"),
    ]

    operations = [
        migrations.RunPython(folders_keep_marks, migrations.RunPython.noop, elidable=True),
    ]
