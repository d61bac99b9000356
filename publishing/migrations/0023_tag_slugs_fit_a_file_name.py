"""Tags and bylines whose page folder (Tag.slug) was longer than a file name allows
(reader_fields.tag_slug now cuts it to SLUG_MAX_BYTES of UTF-8, the hash after it):
their slugs made again, so the rows name the folders the pages link to. Their pages
were never written (every refresh failed on them); the next full check writes them."""

from django.db import migrations

from publishing.reader_fields import tag_slug
from publishing.validators import SLUG_MAX_BYTES


def slugs_that_fit(apps, schema_editor):
    Tag = apps.get_model("publishing", "Tag")
    for tag in Tag.objects.only("id", "name", "slug").iterator():
        if len(tag.slug.encode("utf-8", "surrogatepass")) > SLUG_MAX_BYTES:
            Tag.objects.filter(pk=tag.pk).update(slug=tag_slug(tag.name))


class Migration(migrations.Migration):
    dependencies = [
        ("publishing", "0022_refresher_wanted_soon"),
    ]

    operations = [
        migrations.RunPython(slugs_that_fit, migrations.RunPython.noop, elidable=True),
    ]
