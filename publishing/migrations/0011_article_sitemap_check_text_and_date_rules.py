"""Issue 19: the database refuses the sitemap's chunk names (`sitemap-<n>`) as slugs, as
the validators do; the validators refuse bidirectional overrides and control
characters in titles and slugs, and a publish_at outside the years 1900-9000.

A row with such a slug, stored past validation, stops the migration with a list of
them before any change (as 0008 does): give it another slug and migrate again.
"""

import re

import django.utils.timezone
from django.db import migrations, models
from django.db.models import Q, Value
from django.db.models.functions import Length, Replace, Substr
from django.db.models.lookups import Exact, GreaterThan

import publishing.text_limits
import publishing.validators


def sitemap_chunk_name(field):
    """`field` is `sitemap-<digits>`, any case (as publishing.models says it today)."""
    rest = Substr(field, 9)
    for digit in "0123456789":
        rest = Replace(rest, Value(digit), Value(""))
    return (
        Q(**{f"{field}__istartswith": "sitemap-"})
        & GreaterThan(Length(field), 8)
        & Exact(rest, Value(""))
    )


SITEMAP_CHUNK = re.compile(r"sitemap-[0-9]+", re.IGNORECASE)


def refuse_sitemap_slugs(apps, schema_editor):
    Article = apps.get_model("publishing", "Article")
    lines = [
        f"  article {pk}: the slug {slug!r} is the name of a sitemap chunk"
        for pk, slug, key in Article.objects.values_list("pk", "slug", "slug_key").iterator()
        if SITEMAP_CHUNK.fullmatch(slug) or SITEMAP_CHUNK.fullmatch(key)
    ]
    if lines:
        raise RuntimeError(
            "These articles have slugs the database is about to refuse; give them others "
            "(e.g. in `manage.py shell`, with Article.objects.filter(pk=…).update(slug=…)) "
            "and migrate again:\n" + "\n".join(lines)
        )


class Migration(migrations.Migration):
    dependencies = [
        ("publishing", "0010_metrics_rollup"),
    ]

    operations = [
        migrations.RunPython(refuse_sitemap_slugs, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="article",
            name="publish_at",
            field=models.DateTimeField(
                default=django.utils.timezone.now,
                help_text="Not published before this time.",
                validators=[publishing.validators.validate_publish_at],
            ),
        ),
        migrations.AlterField(
            model_name="article",
            name="slug",
            field=models.SlugField(
                allow_unicode=True,
                blank=True,
                help_text="The page's address: letters (any script), digits, - and _. Left blank, it is made from the title.",
                max_length=200,
                unique=True,
                validators=[
                    publishing.validators.validate_slug_bytes,
                    publishing.validators.validate_not_reserved,
                    publishing.text_limits.validate_display_chars,
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
                ],
            ),
        ),
        migrations.AddConstraint(
            model_name="article",
            constraint=models.CheckConstraint(
                condition=~sitemap_chunk_name("slug") & ~sitemap_chunk_name("slug_key"),
                name="article_slug_not_sitemap_chunk",
            ),
        ),
    ]
