"""Tags and bylines by their keys of now (reader_fields.tag_key: spaces and hyphens
between words are one, so "machine learning" and "machine-learning" are one tag, whose
pages they shared already) and their folders (tag_slug: a key that ends as a hash does
gets one, so a tag named "c-cedb1bac" no longer shares the folder of "c++").

Two rows that are now one tag are merged into the older (its name, its folder): the
other's articles join it (an article that carried both keeps one row), its refresh
requests go, and the kept row's pages are asked for again (every page: `since` null).
A row whose folder changes is asked for again too; its old folder is removed by the
next full check, as is every folder no tag has (docs/site.md, "Tags"). The pages that
link to a tag are written again by the look's change (look.PAGE_FORMAT 2, SHARED_FORMAT 4).

A release before this one still running beside it (a rolling deploy) makes rows by
the old keys meanwhile; running `migrate publishing 0025` and then `migrate` again
after the deploy merges them too.
"""

from django.db import migrations

from publishing.reader_fields import tag_key, tag_slug


def one_row_per_tag(apps, schema_editor):
    Tag = apps.get_model("publishing", "Tag")
    ArticleTag = apps.get_model("publishing", "ArticleTag")
    TagRefresh = apps.get_model("publishing", "TagRefresh")
    kept: dict[tuple[str, str], int] = {}
    changed: dict[int, tuple[str, str]] = {}
    asked: set[int] = set()
    # The merges first: the kept row may take the key a newer row holds.
    for tag in Tag.objects.only("id", "kind", "name", "key", "slug").order_by("pk").iterator():
        key, slug = tag_key(tag.name), tag_slug(tag.name)
        into = kept.setdefault((tag.kind, key), tag.pk)
        if into != tag.pk:  # an older row has the key: its articles join that one
            theirs = ArticleTag.objects.filter(tag_id=into).values("article_id")
            ArticleTag.objects.filter(tag_id=tag.pk, article_id__in=theirs).delete()
            ArticleTag.objects.filter(tag_id=tag.pk).update(tag_id=into)
            TagRefresh.objects.filter(tag_id=tag.pk).delete()
            Tag.objects.filter(pk=tag.pk).delete()
            asked.add(into)
        elif (tag.key, tag.slug) != (key, slug):
            changed[tag.pk] = (key, slug)
    for pk, (key, slug) in changed.items():
        Tag.objects.filter(pk=pk).update(key=key, slug=slug)
        asked.add(pk)
    TagRefresh.objects.bulk_create(TagRefresh(tag_id=pk, since=None) for pk in sorted(asked))


class Migration(migrations.Migration):
    dependencies = [
        ("publishing", "0025_story_first_publish_at"),
    ]

    operations = [
        migrations.RunPython(one_row_per_tag, migrations.RunPython.noop, elidable=True),
    ]
