"""Tags and bylines by their keys of now (reader_fields.tag_key: spaces and hyphens
between words are one, so "machine learning" and "machine-learning" are one tag, whose
pages they shared already) and their folders (tag_slug: a hash of 16 characters where
it had 8, and a key that ends as such a hash does gets one, so no tag shares the folder
of another): `services.live_tags.tags_by_their_keys`, which merges the rows that are
now one tag into the oldest and asks for the pages of those it merged or moved (and of
a folder a moved one leaves). The old folders are removed by the next full check, as
is every folder no tag has (docs/site.md, "Tags"); the pages that link to a tag are
written again by the look's change (look.PAGE_FORMAT 2, SHARED_FORMAT 4).

On PostgreSQL the tag table is locked against writes while it runs (an instant: a row
a tag), so a release before this one, still running beside it in a rolling deploy,
cannot make a row under a key the migration is giving another. What that release
makes afterwards by its own keys, the full check brings to these
(`live_tags_heal`).
"""

from django.db import migrations

from publishing.services.live_tags import tags_by_their_keys


def one_row_per_tag(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("LOCK TABLE publishing_tag IN SHARE ROW EXCLUSIVE MODE")
    tags_by_their_keys(apps)


class Migration(migrations.Migration):
    dependencies = [
        ("publishing", "0025_story_first_publish_at"),
    ]

    operations = [
        migrations.RunPython(one_row_per_tag, migrations.RunPython.noop, elidable=True),
    ]
