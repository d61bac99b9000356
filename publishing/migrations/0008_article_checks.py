"""Check constraints on articles (issue 8): what the validators say that SQL can say,
for writes that bypass save() (bulk_create, update(), raw SQL).

Rows stored before these rules (from the shell, or with a slug reserved since) stop the
migration with a list of them and what is wrong, before any change: fix them (a new
slug, a shorter body) and migrate again. Nothing is changed or deleted behind the
writer's back.
"""

import django.db.models.functions.text
import django.db.models.lookups
from django.db import migrations, models

import publishing.db

TITLE_MAX_LENGTH = 200
BODY_MAX_BYTES = 2**20
RESERVED = [
    ".staging",
    "admin",
    "api",
    "assets",
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
]


def problems_of(article) -> list[str]:
    found = []
    if not article.title:
        found.append("the title is blank")
    if len(article.title) > TITLE_MAX_LENGTH:
        found.append(f"the title has {len(article.title)} characters (at most 200)")
    if len(article.body.encode("utf-8")) > BODY_MAX_BYTES:
        found.append(f"the body is {len(article.body.encode('utf-8')):,} bytes (at most 1 MiB)")
    if not article.slug:
        found.append("the slug is blank")
    if any(ch in article.slug for ch in "/\\."):
        found.append("the slug has '/', '\\' or '.'")
    if article.slug in RESERVED or article.slug_key in RESERVED:
        found.append(f"the slug {article.slug!r} is reserved for the site's own use")
    return found


def refuse_rows_that_break_the_rules(apps, schema_editor):
    Article = apps.get_model("publishing", "Article")
    lines = []
    fields = ("pk", "title", "slug", "slug_key", "body")
    for article in Article.objects.only(*fields).iterator(chunk_size=500):
        lines += [f"  article {article.pk}: {p}" for p in problems_of(article)]
    if lines:
        raise RuntimeError(
            "These articles break rules the database is about to enforce; fix them "
            "(e.g. in `manage.py shell`, with Article.objects.filter(pk=…).update(…)) "
            "and migrate again:\n" + "\n".join(lines)
        )


class Migration(migrations.Migration):
    dependencies = [
        ("publishing", "0007_slug_keys"),
    ]

    operations = [
        migrations.RunPython(refuse_rows_that_break_the_rules, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="article",
            name="published_slug_key",
            field=models.CharField(
                blank=True, db_index=True, default="", editable=False, max_length=800
            ),
        ),
        migrations.AlterField(
            model_name="article",
            name="slug_key",
            field=models.CharField(editable=False, max_length=800, unique=True),
        ),
        migrations.AddConstraint(
            model_name="article",
            constraint=models.CheckConstraint(
                condition=models.Q(("title", ""), _negated=True), name="article_title_not_blank"
            ),
        ),
        migrations.AddConstraint(
            model_name="article",
            constraint=models.CheckConstraint(
                condition=django.db.models.lookups.LessThanOrEqual(
                    django.db.models.functions.text.Length("title"), 200
                ),
                name="article_title_max_length",
            ),
        ),
        migrations.AddConstraint(
            model_name="article",
            constraint=models.CheckConstraint(
                condition=django.db.models.lookups.LessThanOrEqual(
                    publishing.db.OctetLength("body"), 1048576
                ),
                name="article_body_max_bytes",
            ),
        ),
        migrations.AddConstraint(
            model_name="article",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("slug", ""), _negated=True), models.Q(("slug_key", ""), _negated=True)
                ),
                name="article_slug_not_blank",
            ),
        ),
        migrations.AddConstraint(
            model_name="article",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("slug__contains", "/"), _negated=True),
                    models.Q(("slug__contains", "\\"), _negated=True),
                    models.Q(("slug__contains", "."), _negated=True),
                ),
                name="article_slug_one_plain_name",
            ),
        ),
        migrations.AddConstraint(
            model_name="article",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("slug__in", RESERVED), _negated=True),
                    models.Q(("slug_key__in", RESERVED), _negated=True),
                ),
                name="article_slug_not_reserved",
            ),
        ),
    ]
