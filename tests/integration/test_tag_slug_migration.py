"""Migration 0023: a Tag row whose page folder name was too long for a file name gets
the slug reader_fields.tag_slug now gives it; the others are left as they are.
Migration 0026: the rows of spellings that are now one tag (tag_key) are merged, and a
tag named like a hash gets a folder of its own."""

from __future__ import annotations

import importlib
import unicodedata

import pytest
from django.apps import apps

from publishing.models import Article, ArticleTag, Tag, TagRefresh
from publishing.reader_fields import tag_key, tag_slug
from publishing.validators import SLUG_MAX_BYTES

pytestmark = pytest.mark.django_db

migration = importlib.import_module("publishing.migrations.0023_tag_slugs_fit_a_file_name")
one_per_slug = importlib.import_module("publishing.migrations.0026_tags_one_per_slug")


def test_the_tags_whose_folder_did_not_fit_get_a_slug_that_does():
    long, short = "数" * 100, "数据库"
    Tag.objects.create(kind="tag", key=tag_key(long), name=long, slug=tag_key(long))
    Tag.objects.create(kind="tag", key=tag_key(short), name=short, slug="kept-as-it-was")

    migration.slugs_that_fit(apps, None)

    slugs = dict(Tag.objects.values_list("name", "slug"))
    assert slugs[long] == tag_slug(long) and len(slugs[long].encode()) <= SLUG_MAX_BYTES
    assert slugs[short] == "kept-as-it-was"


def old_tag(name: str, kind: str = "tag") -> Tag:
    """A row as the release before 0026 made it: its key without the words' breaks made
    one, its folder the key made a slug (when that was the key with hyphens)."""
    from django.utils.text import slugify

    key = unicodedata.normalize("NFKC", name).casefold().strip()
    slug = slugify(key, allow_unicode=True)
    if slug != "-".join(key.split()):
        slug = tag_slug(name)
    return Tag.objects.create(kind=kind, key=key, name=name, slug=slug)


def live_article(slug: str, *tags: Tag) -> Article:
    article = Article(title=slug, slug=slug, body="Text.")
    article.full_clean()
    article.save()  # the test's transaction is rolled back: its message is never sent
    for tag in tags:
        ArticleTag.objects.create(article=article, tag=tag, publish_at=article.publish_at)
    return article


def test_the_spellings_of_one_tag_become_one_row_with_every_article():
    spaced, hyphened = old_tag("Machine learning"), old_tag("machine-learning")
    author, other_author = old_tag("Ann Lee", "author"), old_tag("ann-lee", "author")
    hashlike = old_tag(tag_slug("c++"))  # "c-…": the folder of "c++" too, until now
    cpp, python = old_tag("c++"), old_tag("Python")
    assert spaced.slug == hyphened.slug and hashlike.slug == cpp.slug  # the shared folders
    both = live_article("both", spaced, hyphened, python)
    one = live_article("one", hyphened, author)
    two = live_article("two", other_author, hashlike)

    one_per_slug.one_row_per_tag(apps, None)

    rows = {(t.kind, t.key): (t.pk, t.name, t.slug) for t in Tag.objects.all()}
    assert rows == {
        ("tag", "machine-learning"): (spaced.pk, "Machine learning", "machine-learning"),
        ("author", "ann-lee"): (author.pk, "Ann Lee", "ann-lee"),
        ("tag", tag_key(hashlike.name)): (hashlike.pk, hashlike.name, tag_slug(hashlike.name)),
        ("tag", "c++"): (cpp.pk, "c++", cpp.slug),
        ("tag", "python"): (python.pk, "Python", "python"),
    }
    assert tag_slug(hashlike.name) not in {cpp.slug, hashlike.slug}
    live = set(ArticleTag.objects.values_list("article__slug", "tag_id"))
    assert live == {
        ("both", spaced.pk),
        ("both", python.pk),
        ("one", spaced.pk),
        ("one", author.pk),
        ("two", author.pk),
        ("two", hashlike.pk),
    }
    # Their pages are written again: the merged ones' and the moved one's, whole.
    asked = set(TagRefresh.objects.values_list("tag_id", "since"))
    assert asked == {(spaced.pk, None), (author.pk, None), (hashlike.pk, None)}
    assert {both.pk, one.pk, two.pk} == set(Article.objects.values_list("pk", flat=True))


def test_a_second_run_changes_nothing():
    old_tag("Machine learning"), old_tag("machine-learning"), old_tag("Go")
    one_per_slug.one_row_per_tag(apps, None)
    before = list(Tag.objects.order_by("pk").values_list("pk", "key", "slug"))
    TagRefresh.objects.all().delete()

    one_per_slug.one_row_per_tag(apps, None)

    assert list(Tag.objects.order_by("pk").values_list("pk", "key", "slug")) == before
    assert not TagRefresh.objects.exists()
