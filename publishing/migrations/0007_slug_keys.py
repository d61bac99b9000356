"""Slug keys (issue 8): what slugs are compared by, NFKC + casefold.

Backfills `slug_key` and `published_slug_key` for existing rows. Two rows whose slugs
already share a key (`straße` and `strasse`, saved before keys existed) both keep their
slugs and pages: the older keeps the key, the newer gets `<key>#<id>`, which save()
keeps while its slug stays the same (publishing.models.key_of). The unique index and
the check constraints come in 0008, in a transaction of their own (PostgreSQL will not
alter a table with updates pending in the same transaction).
"""

from django.db import migrations, models

from publishing.validators import slug_key


def backfill(apps, schema_editor):
    Article = apps.get_model("publishing", "Article")
    seen: set[str] = set()
    batch = []
    for article in Article.objects.order_by("pk").only("pk", "slug", "published_slug"):
        key = slug_key(article.slug) if article.slug else f"#{article.pk}"
        if key in seen:
            print(f"\n  article {article.pk}: slug {article.slug!r} shares its key; kept as is")
            key = f"{key}#{article.pk}"
        seen.add(key)
        article.slug_key = key
        article.published_slug_key = slug_key(article.published_slug or "")
        batch.append(article)
        if len(batch) >= 1000:
            Article.objects.bulk_update(batch, ["slug_key", "published_slug_key"])
            batch = []
    Article.objects.bulk_update(batch, ["slug_key", "published_slug_key"])


class Migration(migrations.Migration):
    dependencies = [
        ("publishing", "0006_dead_unalerted_idx"),
    ]

    operations = [
        migrations.AddField(
            model_name="article",
            name="slug_key",
            field=models.CharField(default="", editable=False, max_length=800),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="article",
            name="published_slug_key",
            field=models.CharField(blank=True, default="", editable=False, max_length=800),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
