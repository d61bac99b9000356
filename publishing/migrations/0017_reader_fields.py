"""Issue 21: what readers see beside the text (description, language, byline, tags) on
the article, its live version, the story's draft and its revisions; the live tags'
index (Tag, ArticleTag; docs/site.md, "Tags") and the tag pages' refresh requests
(TagRefresh), of tags and of bylines (Tag.kind); `tag` and `author` become reserved
slugs (the folders of their pages).

An article or story whose slug is `tag` or `author` stops the migration with a list of
them before any change (as 0011 does for the sitemap's names): give it another slug and
migrate again.
"""

import importlib

import django.db.models.deletion
from django.contrib.postgres.operations import AddConstraintNotValid
from django.db.migrations.operations import AddConstraint
import publishing.reader_fields
import publishing.text_limits
from django.db import migrations, models

# Adding a NOT NULL column makes Django rebuild the article table on SQLite, and the
# dropped table takes the count triggers with it: made again, as 0013 does.
reinstall_on_sqlite = importlib.import_module(
    "publishing.migrations.0013_article_count_triggers_after_sqlite_rebuild"
).reinstall_on_sqlite


def refuse_tag_slugs(apps, schema_editor):
    lines = [
        f"  {model} {pk}: the slug {slug!r} is the folder of the tag or author pages"
        for model in ("Article", "Story")
        for pk, slug in apps.get_model("publishing", model)
        .objects.filter(slug_key__in=["tag", "author"])
        .values_list("pk", "slug")
    ]
    if lines:
        raise RuntimeError(
            "These have a slug the site is about to use itself; give them others (the "
            "admin, or Article.objects.filter(pk=…).update(slug=…) in `manage.py shell`) "
            "and migrate again:\n" + "\n".join(lines)
        )


class AddCheckNotValid(AddConstraintNotValid):
    """On PostgreSQL the check is added NOT VALID, so that adding it takes the article
    table's lock for an instant instead of for a scan of every row while saves and
    claims wait (0018 validates it without blocking them; docs/operations.md,
    "Upgrades"). Elsewhere (SQLite: a table rebuild anyway) an AddConstraint."""

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "postgresql":
            super().database_forwards(app_label, schema_editor, from_state, to_state)
        else:
            AddConstraint.database_forwards(self, app_label, schema_editor, from_state, to_state)


class Migration(migrations.Migration):
    # refuse_tag_slugs reads the article table (two keys, by its index) before any DDL
    # and writes nothing: no backfill.
    deploy_accepted = {"backfill-in-ddl": "refuse_tag_slugs only reads two slug keys"}

    dependencies = [
        ("publishing", "0016_story_publish_log"),
    ]

    operations = [
        migrations.RunPython(refuse_tag_slugs, migrations.RunPython.noop),
        migrations.CreateModel(
            name="ArticleTag",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("publish_at", models.DateTimeField()),
            ],
        ),
        migrations.CreateModel(
            name="Tag",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "kind",
                    models.CharField(
                        choices=[("tag", "Tag"), ("author", "Author")], default="tag", max_length=8
                    ),
                ),
                ("name", models.CharField(max_length=200)),
                ("key", models.CharField(max_length=800)),
                ("slug", models.CharField(max_length=809)),
            ],
        ),
        migrations.CreateModel(
            name="TagRefresh",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
            ],
        ),
        migrations.RemoveConstraint(
            model_name="article",
            name="article_slug_not_reserved",
        ),
        migrations.AddField(
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
                ],
            ),
        ),
        migrations.AddField(
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
                ],
            ),
        ),
        migrations.AddField(
            model_name="article",
            name="language",
            field=models.CharField(
                blank=True,
                db_default="",
                default="",
                help_text="The language tag (en, fr, zh-Hans). Empty: the site's language.",
                max_length=35,
                validators=[publishing.reader_fields.validate_language],
            ),
        ),
        migrations.AddField(
            model_name="article",
            name="published_byline",
            field=models.CharField(
                blank=True, db_default="", default="", editable=False, max_length=200
            ),
        ),
        migrations.AddField(
            model_name="article",
            name="published_description",
            field=models.CharField(
                blank=True, db_default="", default="", editable=False, max_length=1000
            ),
        ),
        migrations.AddField(
            model_name="article",
            name="published_language",
            field=models.CharField(
                blank=True, db_default="", default="", editable=False, max_length=35
            ),
        ),
        migrations.AddField(
            model_name="article",
            name="published_tags",
            field=models.JSONField(
                blank=True,
                db_default=models.Value([], models.JSONField()),
                default=list,
                editable=False,
            ),
        ),
        migrations.AddField(
            model_name="article",
            name="tags",
            field=models.JSONField(
                blank=True,
                db_default=models.Value([], models.JSONField()),
                default=list,
                validators=[publishing.reader_fields.validate_tags],
            ),
        ),
        migrations.AddField(
            model_name="revision",
            name="byline",
            field=models.CharField(blank=True, db_default="", default="", max_length=200),
        ),
        migrations.AddField(
            model_name="revision",
            name="description",
            field=models.CharField(blank=True, db_default="", default="", max_length=1000),
        ),
        migrations.AddField(
            model_name="revision",
            name="language",
            field=models.CharField(blank=True, db_default="", default="", max_length=35),
        ),
        migrations.AddField(
            model_name="revision",
            name="tags",
            field=models.JSONField(
                blank=True, db_default=models.Value([], models.JSONField()), default=list
            ),
        ),
        migrations.AddField(
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
                ],
            ),
        ),
        migrations.AddField(
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
                ],
            ),
        ),
        migrations.AddField(
            model_name="story",
            name="language",
            field=models.CharField(
                blank=True,
                db_default="",
                default="",
                help_text="The language tag (en, fr, zh-Hans). Empty: the site's language.",
                max_length=35,
                validators=[publishing.reader_fields.validate_language],
            ),
        ),
        migrations.AddField(
            model_name="story",
            name="tags",
            field=models.JSONField(
                blank=True,
                db_default=models.Value([], models.JSONField()),
                default=list,
                validators=[publishing.reader_fields.validate_tags],
            ),
        ),
        AddCheckNotValid(
            model_name="article",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(
                        (
                            "slug__in",
                            [
                                ".staging",
                                "admin",
                                "api",
                                "assets",
                                "author",
                                "favicon.ico",
                                "feed",
                                "feed.xml",
                                "healthz",
                                "index.html",
                                "media",
                                "metrics",
                                "page",
                                "robots.txt",
                                "sitemap",
                                "sitemap.xml",
                                "static",
                                "status",
                                "status.json",
                                "tag",
                            ],
                        ),
                        _negated=True,
                    ),
                    models.Q(
                        (
                            "slug_key__in",
                            [
                                ".staging",
                                "admin",
                                "api",
                                "assets",
                                "author",
                                "favicon.ico",
                                "feed",
                                "feed.xml",
                                "healthz",
                                "index.html",
                                "media",
                                "metrics",
                                "page",
                                "robots.txt",
                                "sitemap",
                                "sitemap.xml",
                                "static",
                                "status",
                                "status.json",
                                "tag",
                            ],
                        ),
                        _negated=True,
                    ),
                ),
                name="article_slug_not_reserved",
            ),
        ),
        migrations.AddField(
            model_name="articletag",
            name="article",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="live_tags",
                to="publishing.article",
            ),
        ),
        migrations.AddConstraint(
            model_name="tag",
            constraint=models.UniqueConstraint(fields=("kind", "key"), name="tag_kind_key"),
        ),
        migrations.AddField(
            model_name="articletag",
            name="tag",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="articles",
                to="publishing.tag",
            ),
        ),
        migrations.AddField(
            model_name="tagrefresh",
            name="tag",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE, related_name="+", to="publishing.tag"
            ),
        ),
        migrations.AddIndex(
            model_name="articletag",
            index=models.Index(fields=["tag", "publish_at", "article"], name="tag_listed_idx"),
        ),
        migrations.AddConstraint(
            model_name="articletag",
            constraint=models.UniqueConstraint(fields=("article", "tag"), name="articletag_once"),
        ),
        migrations.RunPython(reinstall_on_sqlite, migrations.RunPython.noop),
    ]
