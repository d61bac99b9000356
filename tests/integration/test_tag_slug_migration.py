"""Migration 0023: a Tag row whose page folder name was too long for a file name gets
the slug reader_fields.tag_slug now gives it; the others are left as they are.
Migration 0026: the rows of spellings that are now one tag (tag_key) are merged, and a
tag named like a hash gets a folder of its own.
Migration 0030: a tag whose letters carry marks (Hindi, Thai) gets them in its folder.
Migration 0031: a tag whose folder began with an emoji's variation selector loses it."""

from __future__ import annotations

import hashlib
import importlib
import unicodedata
from types import SimpleNamespace

import pytest
from django.apps import apps
from django.db import connection

from publishing.models import Article, ArticleTag, Tag, TagRefresh
from publishing.reader_fields import tag_key, tag_slug
from publishing.validators import SLUG_MAX_BYTES

pytestmark = pytest.mark.django_db

migration = importlib.import_module("publishing.migrations.0023_tag_slugs_fit_a_file_name")
one_per_slug = importlib.import_module("publishing.migrations.0026_tags_one_per_slug")
keep_marks = importlib.import_module("publishing.migrations.0030_tag_slugs_keep_marks")
no_stray_marks = importlib.import_module("publishing.migrations.0031_tag_slugs_without_stray_marks")
# What the migration uses of its schema editor: the connection, and running a statement.
EDITOR = SimpleNamespace(
    connection=connection, execute=lambda sql: connection.cursor().execute(sql)
)


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
    one, its folder the key made a slug when that was the key with hyphens, else with
    an 8-character hash."""
    from django.utils.text import slugify

    key = unicodedata.normalize("NFKC", name).casefold().strip()
    slug = slugify(key, allow_unicode=True)
    if slug != "-".join(key.split()):
        digest = hashlib.sha256(key.encode()).hexdigest()[:8]
        slug = f"{slug}-{digest}" if slug else digest
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
    cpp = old_tag("c++")
    hashlike = old_tag(cpp.slug)  # "c-…": named as the folder of "c++", so it shared it
    python = old_tag("Python")
    assert spaced.slug == hyphened.slug and hashlike.slug == cpp.slug  # the shared folders
    both = live_article("both", spaced, hyphened, python)
    one = live_article("one", hyphened, author)
    two = live_article("two", other_author, hashlike, cpp)

    one_per_slug.one_row_per_tag(apps, EDITOR)

    rows = {(t.kind, t.key): (t.pk, t.name, t.slug) for t in Tag.objects.all()}
    assert rows == {
        ("tag", "machine-learning"): (spaced.pk, "Machine learning", "machine-learning"),
        ("author", "ann-lee"): (author.pk, "Ann Lee", "ann-lee"),
        ("tag", hashlike.key): (hashlike.pk, hashlike.name, hashlike.slug),
        ("tag", "c++"): (cpp.pk, "c++", tag_slug("c++")),
        ("tag", "python"): (python.pk, "Python", "python"),
    }
    assert len(tag_slug("c++")) == len("c-") + 16  # its hash is 16 characters now
    live = set(ArticleTag.objects.values_list("article__slug", "tag_id"))
    assert live == {
        ("both", spaced.pk),
        ("both", python.pk),
        ("one", spaced.pk),
        ("one", author.pk),
        ("two", author.pk),
        ("two", hashlike.pk),
        ("two", cpp.pk),
    }
    # Their pages are written again, whole: the merged ones', the moved one's, and the
    # one whose folder the moved one left (it may have been the last to write there).
    asked = set(TagRefresh.objects.values_list("tag_id", "since"))
    assert asked == {(spaced.pk, None), (author.pk, None), (cpp.pk, None), (hashlike.pk, None)}
    assert {both.pk, one.pk, two.pk} == set(Article.objects.values_list("pk", flat=True))


def test_a_tag_whose_key_changes_and_folder_does_not_is_not_written_again():
    spaced = old_tag("Go lang")

    one_per_slug.one_row_per_tag(apps, EDITOR)

    assert Tag.objects.get(pk=spaced.pk).key == "go-lang"
    assert Tag.objects.get(pk=spaced.pk).slug == spaced.slug == "go-lang"
    assert not TagRefresh.objects.exists()


def test_a_second_run_changes_nothing():
    old_tag("Machine learning"), old_tag("machine-learning"), old_tag("Go")
    one_per_slug.one_row_per_tag(apps, EDITOR)
    before = list(Tag.objects.order_by("pk").values_list("pk", "key", "slug"))
    TagRefresh.objects.all().delete()

    one_per_slug.one_row_per_tag(apps, EDITOR)

    assert list(Tag.objects.order_by("pk").values_list("pk", "key", "slug")) == before
    assert not TagRefresh.objects.exists()


def test_a_tag_whose_letters_carry_marks_moves_to_a_folder_with_them():
    """Before 0030 a tag's folder was its key through Django's slugify, which drops the
    marks: "हिन्दी" (Hindi) was "हनद" and a hash. Its row moves, its pages are asked
    for; a tag without marks keeps its folder and asks for nothing."""
    from django.utils.text import slugify

    hindi = Tag.objects.create(kind="tag", key="हिन्दी", name="हिन्दी", slug="")
    digest = hashlib.sha256("हिन्दी".encode()).hexdigest()[:16]
    Tag.objects.filter(pk=hindi.pk).update(slug=f"{slugify('हिन्दी', allow_unicode=True)}-{digest}")
    thai = Tag.objects.create(kind="author", key="สมชาย-ใจดี", name="สมชาย ใจดี", slug="")
    Tag.objects.filter(pk=thai.pk).update(slug=f"{slugify(thai.key, allow_unicode=True)}-x")
    plain = Tag.objects.create(kind="tag", key="python", name="Python", slug="python")
    live_article("hindi", hindi, plain)

    keep_marks.folders_keep_marks(apps, EDITOR)

    slugs = dict(Tag.objects.values_list("pk", "slug"))
    assert slugs == {hindi.pk: "हिन्दी", thai.pk: "สมชาย-ใจดี", plain.pk: "python"}
    assert set(TagRefresh.objects.values_list("tag_id", flat=True)) == {hindi.pk, thai.pk}


def test_a_tag_whose_folder_kept_an_emojis_variation_selector_moves():
    """Before 0031 "☕️ coffee" had the folder "\ufe0f-coffee-<hash>": the emoji dropped,
    its variation selector (a mark) kept. The row moves to "coffee-<hash>", its pages
    are asked for; "हिन्दी" keeps its folder."""
    key = tag_key("☕️ coffee")
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    coffee = Tag.objects.create(kind="tag", key=key, name="☕️ coffee", slug="")
    Tag.objects.filter(pk=coffee.pk).update(slug=f"\ufe0f-coffee-{digest}")
    hindi = Tag.objects.create(kind="tag", key="हिन्दी", name="हिन्दी", slug="हिन्दी")
    live_article("coffee", coffee, hindi)

    no_stray_marks.folders_without_stray_marks(apps, EDITOR)

    slugs = dict(Tag.objects.values_list("pk", "slug"))
    assert slugs == {coffee.pk: f"coffee-{digest}", hindi.pk: "हिन्दी"}
    assert set(TagRefresh.objects.values_list("tag_id", flat=True)) == {coffee.pk}
