"""Issue 19, finding 9: every name the site uses for itself is refused by the database
too, for writes that bypass validation (QuerySet.update, bulk_create, raw SQL), and
the validation's message stays the clear one."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction

from blogpublish.site import paths
from publishing.models import Article
from publishing.validators import RESERVED_SLUGS, is_reserved_slug

pytestmark = pytest.mark.django_db

# Names a slug could take (no ".": the database refuses any dotted slug already).
SITE_NAMES = sorted(
    {name for name in RESERVED_SLUGS if "." not in name}
    | {paths.ARCHIVE_DIR, "sitemap", "sitemap-0", "sitemap-9", "sitemap-12345"}
)


@pytest.fixture
def article() -> Article:
    return Article.objects.create(title="Plain", slug="sec-plain", body="Text.")


@pytest.mark.parametrize("name", [*SITE_NAMES, "SITEMAP-9", "Sitemap-1"])
def test_update_to_a_reserved_name_is_refused_by_the_database(article, name):
    assert is_reserved_slug(name)
    with pytest.raises(IntegrityError), transaction.atomic():
        Article.objects.filter(pk=article.pk).update(slug=name)
    article.refresh_from_db()
    assert article.slug == "sec-plain"


def test_bulk_create_of_a_sitemap_chunk_name_is_refused_by_the_database():
    with pytest.raises(IntegrityError), transaction.atomic():
        Article.objects.bulk_create([Article(title="T", slug="sitemap-3", body="b")])


@pytest.mark.parametrize("name", ["sitemaps", "sitemap-", "sitemap-9a", "my-sitemap-9", "page-2"])
def test_names_near_the_reserved_ones_are_stored(article, name):
    Article.objects.filter(pk=article.pk).update(slug=name)
    article.refresh_from_db()
    assert article.slug == name


def test_validation_still_says_it_clearly():
    with pytest.raises(ValidationError) as refused:
        Article(title="T", slug="sitemap-9", body="b").full_clean()
    assert refused.value.message_dict["slug"] == [
        "“sitemap-9” is used by the site itself; choose another slug."
    ]


def test_the_sqlite_constraint_needs_no_function_of_djangos():
    """`manage.py dbshell` (the sqlite3 shell) has no REGEXP: a constraint using it
    would make every write to the table fail there."""
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's own functions only")
    with connection.cursor() as cursor:
        cursor.execute("SELECT sql FROM sqlite_master WHERE name = 'publishing_article'")
        (schema,) = cursor.fetchone()
    assert "article_slug_not_sitemap_chunk" in schema
    assert "REGEXP" not in schema.upper()
