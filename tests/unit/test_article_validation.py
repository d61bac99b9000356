"""Bad input gets a clear error and stores nothing."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from publishing.models import Article, slug_from_title
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
        # slugs that would leave their directory or break a URL
        ({"slug": "a/b"}, "slug", "valid “slug”"),
        ({"slug": ".."}, "slug", "valid “slug”"),
        ({"slug": "../etc"}, "slug", "valid “slug”"),
        ({"slug": "with space"}, "slug", "valid “slug”"),
        ({"slug": "admin"}, "slug", "used by the site itself"),
        ({"slug": "文" * 100}, "slug", "bytes in UTF-8"),
        # bodies
        ({"body": ""}, "body", "cannot be blank"),
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
        ("!!!", "article"),
        ("Admin", "admin-1"),
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
