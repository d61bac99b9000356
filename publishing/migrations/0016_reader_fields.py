"""Issue 21: what readers see beside the text (description, language, byline, tags) on
the article, its live version, the story's draft and its revisions; the live tags'
index (Tag, ArticleTag; docs/site.md, "Tags")."""

import django.db.models.deletion
import publishing.reader_fields
import publishing.text_limits
import importlib

from django.db import migrations, models

# Adding a NOT NULL column makes Django rebuild the article table on SQLite, and the
# dropped table takes the count triggers with it: made again, as 0013 does.
reinstall_on_sqlite = importlib.import_module(
    "publishing.migrations.0013_article_count_triggers_after_sqlite_rebuild"
).reinstall_on_sqlite


class Migration(migrations.Migration):

    dependencies = [
        ('publishing', '0015_stories'),
    ]

    operations = [
        migrations.CreateModel(
            name='Tag',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=100)),
                ('key', models.CharField(max_length=400, unique=True)),
            ],
        ),
        migrations.AddField(
            model_name='article',
            name='byline',
            field=models.CharField(blank=True, default='', help_text="The author's name as readers see it.", max_length=200, validators=[publishing.reader_fields.validate_byline, publishing.text_limits.validate_xml_chars, publishing.text_limits.validate_display_chars]),
        ),
        migrations.AddField(
            model_name='article',
            name='description',
            field=models.CharField(blank=True, default='', help_text='What search results and link cards show. Empty: the first lines.', max_length=1000, validators=[publishing.reader_fields.validate_description, publishing.text_limits.validate_xml_chars, publishing.text_limits.validate_display_chars]),
        ),
        migrations.AddField(
            model_name='article',
            name='language',
            field=models.CharField(blank=True, default='', help_text="The language tag (en, fr, zh-Hans). Empty: the site's language.", max_length=35, validators=[publishing.reader_fields.validate_language]),
        ),
        migrations.AddField(
            model_name='article',
            name='published_byline',
            field=models.CharField(blank=True, default='', editable=False, max_length=200),
        ),
        migrations.AddField(
            model_name='article',
            name='published_description',
            field=models.CharField(blank=True, default='', editable=False, max_length=1000),
        ),
        migrations.AddField(
            model_name='article',
            name='published_language',
            field=models.CharField(blank=True, default='', editable=False, max_length=35),
        ),
        migrations.AddField(
            model_name='article',
            name='published_tags',
            field=models.JSONField(blank=True, default=list, editable=False),
        ),
        migrations.AddField(
            model_name='article',
            name='tags',
            field=models.JSONField(blank=True, default=list, validators=[publishing.reader_fields.validate_tags]),
        ),
        migrations.AddField(
            model_name='revision',
            name='byline',
            field=models.CharField(blank=True, default='', max_length=200),
        ),
        migrations.AddField(
            model_name='revision',
            name='description',
            field=models.CharField(blank=True, default='', max_length=1000),
        ),
        migrations.AddField(
            model_name='revision',
            name='language',
            field=models.CharField(blank=True, default='', max_length=35),
        ),
        migrations.AddField(
            model_name='revision',
            name='tags',
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.AddField(
            model_name='story',
            name='byline',
            field=models.CharField(blank=True, default='', help_text="The author's name as readers see it.", max_length=200, validators=[publishing.reader_fields.validate_byline, publishing.text_limits.validate_xml_chars, publishing.text_limits.validate_display_chars]),
        ),
        migrations.AddField(
            model_name='story',
            name='description',
            field=models.CharField(blank=True, default='', help_text='What search results and link cards show. Empty: the first lines.', max_length=1000, validators=[publishing.reader_fields.validate_description, publishing.text_limits.validate_xml_chars, publishing.text_limits.validate_display_chars]),
        ),
        migrations.AddField(
            model_name='story',
            name='language',
            field=models.CharField(blank=True, default='', help_text="The language tag (en, fr, zh-Hans). Empty: the site's language.", max_length=35, validators=[publishing.reader_fields.validate_language]),
        ),
        migrations.AddField(
            model_name='story',
            name='tags',
            field=models.JSONField(blank=True, default=list, validators=[publishing.reader_fields.validate_tags]),
        ),
        migrations.CreateModel(
            name='ArticleTag',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('publish_at', models.DateTimeField()),
                ('article', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='live_tags', to='publishing.article')),
                ('tag', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='articles', to='publishing.tag')),
            ],
            options={
                'indexes': [models.Index(fields=['tag', 'publish_at', 'article'], name='tag_listed_idx')],
                'constraints': [models.UniqueConstraint(fields=('article', 'tag'), name='articletag_once')],
            },
        ),
        migrations.RunPython(reinstall_on_sqlite, migrations.RunPython.noop),
    ]
