"""Bad input gets a clear error and stores nothing."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import DataError, IntegrityError, transaction

from publishing.models import Article, cut_to_bytes, slug_from_title
from publishing.services import article_create, article_update, articles_create_many
from publishing.validators import BODY_MAX_BYTES

pytestmark = pytest.mark.django_db


def build(**fields) -> Article:
    values = {"title": "A title", "slug": "a-slug", "body": "Body."} | fields
    return Article(**values)


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        # empty and too long titles
        ({"title": ""}, "title", "cannot be blank"),
        ({"title": "   "}, "title", "cannot be blank"),
        ({"title": "x" * 201}, "title", "at most 200 characters (it has 201)"),
        ({"title": "two\nlines"}, "title", "one line"),
        ({"title": "two\u2028lines"}, "title", "one line"),  # the line separator
        # text that shows nothing: a link with no text on the front page
        ({"title": "\u200b\u200b"}, "title", "It shows nothing"),
        ({"title": "\u00ad\ufeff\u2800\u3164"}, "title", "It shows nothing"),
        ({"byline": "\u200b"}, "byline", "It shows nothing"),
        ({"description": "\u2060"}, "description", "It shows nothing"),
        ({"tags": ["python", "\u200b"]}, "tags", "It shows nothing"),
        # slugs that would leave their directory or break a URL
        ({"slug": "a/b"}, "slug", "valid “slug”"),
        ({"slug": ".."}, "slug", "valid “slug”"),
        ({"slug": "../etc"}, "slug", "valid “slug”"),
        ({"slug": "with space"}, "slug", "valid “slug”"),
        ({"slug": "admin"}, "slug", "used by the site itself"),
        ({"slug": "文" * 100}, "slug", "bytes in UTF-8"),
        # bodies
        ({"body": ""}, "body", "cannot be blank"),
        ({"body": " \n\t\n  "}, "body", "only blank lines and spaces"),
        ({"body": "x" * (BODY_MAX_BYTES + 1)}, "body", "the limit is 1,048,576 bytes"),
        ({"body": "文" * (BODY_MAX_BYTES // 3 + 1)}, "body", "the limit is 1,048,576 bytes"),
    ],
)
def test_bad_input_is_refused_with_a_clear_message(fields, field, message):
    article = build(**fields)

    with pytest.raises(ValidationError) as caught:
        article.full_clean()

    assert message in " ".join(caught.value.message_dict[field])
    assert Article.objects.count() == 0


@pytest.mark.parametrize(
    "title", ["नमस्ते दुनिया", "ภาษาไทย", "e\u0301 with a mark", "\u200bZero-width first", "·"]
)
def test_a_title_that_shows_something_is_accepted(title):
    build(title=title, slug="shows").full_clean()


@pytest.mark.parametrize("slug", ["हिन्दी", "नमस्ते-दुनिया", "ภาษาไทย", "مُحَمَّد", "e\u0301t\u00e9"])
def test_a_slug_in_a_script_with_marks_is_accepted_by_the_model_and_the_form(slug):
    from publishing.admin import ArticleAdmin

    build(slug=slug).full_clean()
    field = Article._meta.get_field("slug").formfield()
    assert field.clean(slug) == slug
    assert ArticleAdmin  # the admin's form is made from the same field


def test_the_forms_slug_field_still_refuses_what_is_not_a_slug():
    field = Article._meta.get_field("slug").formfield()
    for bad in ("with space", "a/b", "dot.ted"):
        with pytest.raises(ValidationError):
            field.clean(bad)


def test_duplicate_slug_is_refused():
    first = build(slug="same")
    first.full_clean()
    first.save()

    with pytest.raises(ValidationError) as caught:
        build(slug="same", title="Other").full_clean()

    assert "already exists" in " ".join(caught.value.message_dict["slug"])
    assert Article.objects.count() == 1


def test_body_of_exactly_one_mebibyte_is_accepted():
    build(body="x" * BODY_MAX_BYTES).full_clean()


@pytest.mark.parametrize(
    ("title", "slug"),
    [
        ("Hello, World!", "hello-world"),
        ("你好，世界", "你好世界"),
        ("Ünïcödé Straße", "ünïcödé-straße"),
        # the marks letters carry stay (Django's slugify dropped them: हनद-समचर)
        ("हिन्दी समाचार", "हिन्दी-समाचार"),
        ("ภาษาไทย ง่าย", "ภาษาไทย-ง่าย"),
        ("Café  --  crème", "café-crème"),
        ("!!!", "article"),
        ("Admin", "admin-1"),
        ("Sitemap", "article-sitemap"),  # sitemap-1 is a sitemap chunk's name
        ("Sitemap 2", "sitemap-2-1"),
        # an emoji's variation selector (a mark) is not kept once the emoji is dropped,
        # nor a mark after what is (the slug began with an invisible U+FE0F)
        ("☕️ Coffee break", "coffee-break"),
        ("❤️", "article"),
        ("a ☕️ b", "a-b"),
        ("- \u0301x", "x"),
    ],
)
def test_slug_from_title(title, slug):
    assert slug_from_title(title) == slug


def test_blank_slug_is_derived_and_made_unique():
    first = build(title="你好，世界", slug="")
    first.full_clean()
    first.save()
    second = build(title="你好，世界", slug="")
    second.full_clean()
    second.save()

    assert (first.slug, second.slug) == ("你好世界", "你好世界-2")


def test_long_chinese_title_gives_a_slug_that_fits_a_file_name():
    article = build(title="标题" * 100, slug="")
    article.full_clean()

    assert 0 < len(article.slug.encode("utf-8")) <= 200


# --- every way in validates (issue 8, item 3) --------------------------------------


@pytest.mark.parametrize(
    ("slug", "message"),
    [
        # the site's own names under SITE_ROOT, published as folders before
        ("page", "used by the site itself"),
        ("index.html", "used by the site itself"),
        ("feed.xml", "used by the site itself"),
        ("sitemap", "used by the site itself"),
        ("sitemap.xml", "used by the site itself"),
        ("sitemap-9", "used by the site itself"),
        ("sitemap-9.xml", "used by the site itself"),
        (".staging", "used by the site itself"),
        (".lock", "used by the site itself"),
        # the web app's own paths, in any case or width
        ("api", "used by the site itself"),
        ("ＡＤＭＩＮ", "used by the site itself"),  # stored as "admin" before
        ("Page", "used by the site itself"),
        ("aßets", "used by the site itself"),  # casefolds to "assets"
    ],
)
def test_reserved_slugs_are_refused_in_every_spelling(slug, message):
    with pytest.raises(ValidationError) as caught:
        build(slug=slug).full_clean()

    assert message in " ".join(caught.value.message_dict["slug"])


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        # a 5 MiB body was saved and published from the shell
        ({"body": "x" * 5 * 2**20}, "body", "the limit is 1,048,576 bytes"),
        # NFKC-normalised to "admin" after validation would have run
        ({"slug": "ＡＤＭＩＮ"}, "slug", "used by the site itself"),
        # published as folders of SITE_ROOT
        ({"slug": "page"}, "slug", "used by the site itself"),
        ({"slug": "sitemap-9.xml"}, "slug", "used by the site itself"),
        ({"slug": ".staging"}, "slug", "used by the site itself"),
        ({"slug": "index.html"}, "slug", "used by the site itself"),
        ({"slug": "../etc"}, "slug", "valid “slug”"),
        ({"title": ""}, "title", "cannot be blank"),
        ({"title": "x" * 201}, "title", "at most 200 characters (it has 201)"),
    ],
)
def test_plain_save_refuses_invalid_content_and_stores_nothing(fields, field, message):
    with pytest.raises(ValidationError) as caught:
        build(**fields).save()

    assert message in " ".join(caught.value.message_dict[field])
    assert Article.objects.count() == 0


def test_objects_create_refuses_a_reserved_slug():
    with pytest.raises(ValidationError):
        Article.objects.create(title="Sneaky", slug="ＡＤＭＩＮ", body="x")

    assert Article.objects.count() == 0


def test_edit_saved_from_the_shell_is_validated_too():
    article = build(slug="fine")
    article.save()
    article.body = "x" * (BODY_MAX_BYTES + 1)

    with pytest.raises(ValidationError):
        article.save()

    assert Article.objects.get(pk=article.pk).body == "Body."


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("straße", "strasse"),
        ("straße", "STRASSE"),
        ("strasse", "straße"),
        ("λόγος", "λόγοσ"),  # final and medial sigma
        ("ﬁle", "file"),  # NFKC: the ligature is two letters
    ],
)
def test_slugs_equal_up_to_case_are_duplicates(first, second):
    build(slug=first).save()

    with pytest.raises(ValidationError) as caught:
        build(title="Other", slug=second).full_clean()
    assert "already exists" in " ".join(caught.value.message_dict["slug"])
    with pytest.raises(ValidationError):
        build(title="Other", slug=second).save()
    assert Article.objects.count() == 1


def test_slug_is_stored_as_typed_and_compared_by_its_key():
    article = build(slug="Straße")
    article.save()

    assert (article.slug, article.slug_key) == ("straße", "strasse")


def test_a_live_page_is_compared_by_its_key_too():
    live = build(slug="live-page")
    live.save()
    Article.objects.filter(pk=live.pk).update(published_slug="straße", published_hash="x")

    with pytest.raises(ValidationError) as caught:
        build(title="Other", slug="STRASSE").full_clean()

    assert "live page" in " ".join(caught.value.message_dict["slug"])


def test_derived_slugs_skip_taken_keys():
    build(title="x", slug="straße").save()
    article = build(title="Strasse", slug="")
    article.save()

    assert article.slug == "strasse-2"


# --- the database refuses what bypasses save() (bulk_create, update) ---------------


@pytest.mark.parametrize(
    "fields",
    [
        {"slug": "page"},
        {"slug": "ＡＤＭＩＮ"},  # its key is "admin"
        {"slug": "sitemap-9.xml"},
        {"slug": ".staging"},
        {"slug": "a/b"},
        {"slug": ""},
        {"title": ""},
        {"title": "x" * 201},
        {"body": "x" * (BODY_MAX_BYTES + 1)},
        {"body": "文" * (BODY_MAX_BYTES // 3 + 1)},  # bytes, not characters
    ],
)
def test_bulk_create_of_invalid_content_fails_at_the_database(fields):
    # DataError: PostgreSQL's varchar(200) answers before the check constraint.
    with pytest.raises((IntegrityError, DataError)), transaction.atomic():
        Article.objects.bulk_create([build(**fields)])

    assert Article.objects.count() == 0


def test_bulk_create_fills_the_slug_keys_and_keeps_them_unique():
    [article] = Article.objects.bulk_create([build(slug="Straße")])
    assert Article.objects.get(pk=article.pk).slug_key == "strasse"

    with pytest.raises(IntegrityError), transaction.atomic():
        Article.objects.bulk_create([build(slug="strasse")])


def test_update_to_a_reserved_slug_fails_at_the_database():
    article = build(slug="fine")
    article.save()

    with pytest.raises(IntegrityError), transaction.atomic():
        Article.objects.filter(pk=article.pk).update(slug="page")

    Article.objects.filter(pk=article.pk).update(slug="Fine-Again")
    assert Article.objects.get(pk=article.pk).slug_key == "fine-again"


# --- the validated paths: services, the admin --------------------------------------


def test_article_create_normalises_validates_and_saves():
    article = article_create(title="  Hello world  ", body="a\r\nb")

    assert (article.title, article.slug, article.body) == ("Hello world", "hello-world", "a\nb")
    with pytest.raises(ValidationError):
        article_create(title="Hello", body="x", slug="ＡＤＭＩＮ")


def test_article_update_validates_the_edit():
    article = article_create(title="Hello", body="x")

    with pytest.raises(ValidationError):
        article_update(article=article, slug="sitemap-2.xml")
    article_update(article=article, title="Hello again")

    assert Article.objects.get(pk=article.pk).title == "Hello again"


def test_articles_create_many_validates_every_row_and_stores_all_or_nothing():
    rows = [
        {"title": "Hello world", "body": "x"},
        {"title": "Hello world", "body": "x"},  # a slug of its own
        {"title": "Bad", "body": "x", "slug": "page"},
        {"title": "Also bad", "body": "x" * (BODY_MAX_BYTES + 1)},
    ]
    with pytest.raises(ValidationError) as caught:
        articles_create_many(rows)
    assert Article.objects.count() == 0
    assert [m.split(":")[0] for m in caught.value.messages] == ["row 3", "row 4"]

    created = articles_create_many(rows[:2])

    assert [a.slug for a in created] == ["hello-world", "hello-world-2"]
    assert Article.objects.count() == 2


def test_admin_add_goes_through_the_service(admin_client):
    response = admin_client.post(
        "/admin/publishing/article/add/",
        {
            "title": "From the admin",
            "slug": "",
            "body": "Hello.",
            "publish_at_0": "2026-01-01",
            "publish_at_1": "10:00:00",
            "publish_attempts-TOTAL_FORMS": "0",
            "publish_attempts-INITIAL_FORMS": "0",
            "publish_attempts-MIN_NUM_FORMS": "0",
            "publish_attempts-MAX_NUM_FORMS": "0",
        },
    )

    assert response.status_code == 302, response.content[:2000]
    article = Article.objects.get()
    assert (article.slug, article.slug_key) == ("from-the-admin", "from-the-admin")


# --- linear time (a 200,000-character title took 17.7 s; the 2,001st "Hello world"
# --- took 2,004 queries) ------------------------------------------------------------


@pytest.mark.timeout(10)
def test_slug_from_a_huge_title_takes_linear_time():
    slug = slug_from_title("ab " * 700_000)  # 2.1 MB: hours when trimmed a character at a time

    assert slug == cut_to_bytes("ab-" * 70, 200).strip("-")
    assert cut_to_bytes("文" * 100, 200) == "文" * 66  # never half a character


@pytest.mark.timeout(10)
def test_a_huge_title_fails_fast_with_a_clear_message():
    with pytest.raises(ValidationError) as caught:
        build(title="x" * 200_000, slug="").full_clean()

    assert "at most 200 characters (it has 200000)" in caught.value.message_dict["title"][0]


def test_the_2001st_hello_world_takes_a_bounded_number_of_queries(django_assert_max_num_queries):
    slugs = ["hello-world"] + [f"hello-world-{n}" for n in range(2, 2001)]
    Article.objects.bulk_create([build(title="Hello world", slug=s) for s in slugs])

    # (12: the derived slug is checked again under its address's lock, two queries.)
    with django_assert_max_num_queries(12):
        article = article_create(title="Hello world", body="Body.")
    with django_assert_max_num_queries(12):
        again = build(title="Hello world", slug="")
        again.save()

    assert (article.slug, again.slug) == ("hello-world-2001", "hello-world-2002")


def test_a_nul_in_the_slug_is_a_field_error_not_a_database_error():
    # PostgreSQL refuses NUL in a query parameter; the check for a free slug must not
    # send it (found by the API's schemathesis run).
    with pytest.raises(ValidationError) as caught:
        article_create(title="Title", slug="a\x00b", body="Body.")
    assert "slug" in caught.value.message_dict
    assert not Article.objects.exists()


def test_publish_at_with_a_large_offset_is_stored_as_the_same_instant():
    from datetime import UTC, datetime, timedelta, timezone

    when = datetime(2026, 3, 1, 12, 0, tzinfo=timezone(timedelta(hours=23)))
    article = article_create(title="Far east", slug="far-east", body="Body.", publish_at=when)
    article.refresh_from_db()
    assert article.publish_at == when
    assert article.publish_at.utcoffset() == timedelta(0)
    assert article.publish_at == datetime(2026, 2, 28, 13, 0, tzinfo=UTC)
