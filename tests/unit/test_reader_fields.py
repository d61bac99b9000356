"""The reader fields (issue 21): normalised and validated alike on every way in, and
part of the content (its hash), so changing one republishes the article."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.core.exceptions import ValidationError
from hypothesis import given
from hypothesis import strategies as st

from publishing.models import Article, content_hash_of
from publishing.reader_fields import (
    normalize_tags,
    validate_byline,
    validate_language,
    validate_tags,
)
from publishing.validators import SLUG_MAX_BYTES

MOMENT = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
BASE = {"title": "T", "slug": "t", "body": "B", "publish_at": MOMENT}


def test_hash__unchanged_for_an_article_without_reader_fields():
    """Rows saved before the fields existed keep their hash: the upgrade publishes nothing."""
    import hashlib
    import json

    before = json.dumps(["T", "t", "B", MOMENT.isoformat()], separators=(",", ":"))

    assert content_hash_of(**BASE) == hashlib.sha256(before.encode()).hexdigest()


@pytest.mark.parametrize(
    "field, value",
    [("description", "d"), ("language", "fr"), ("byline", "Ann"), ("tags", ["x"])],
)
def test_hash__each_reader_field_is_content(field, value):
    assert content_hash_of(**BASE, **{field: value}) != content_hash_of(**BASE)


def test_tags__normalised_one_spelling_each_in_order():
    assert normalize_tags(" Python ,python, 数据库,, ＰＹＴＨＯＮ, web  dev") == [
        "Python",
        "数据库",
        "web dev",
    ]
    assert normalize_tags(None) == []


@pytest.mark.parametrize(
    "tags",
    [
        pytest.param("python", id="not a list"),
        pytest.param([1, 2], id="not text"),
        pytest.param(["x" * 101], id="too long"),
        pytest.param([f"t{n}" for n in range(51)], id="too many"),
        pytest.param(["a\u202eb"], id="bidirectional override"),
        # 100 characters, 1,800 once NFKC-normalised: longer than the Tag key's column.
        pytest.param(["\ufdfa" * 100], id="a key too long once normalised"),
    ],
)
def test_tags__refused_with_a_reason(tags):
    with pytest.raises(ValidationError):
        validate_tags(tags)


def test_a_tag_whose_key_outgrows_its_column_is_refused_for_that():
    with pytest.raises(ValidationError) as refused:
        validate_tags(["\ufdfa" * 100])  # 100 characters, 1,800 once normalised
    assert refused.value.code == "key_long"
    validate_tags(["\ufdfa" * 44])  # 792 once normalised: fits


def test_a_byline_whose_key_outgrows_its_column_is_refused_and_a_long_one_is_not():
    """A byline is a Tag of its own (its author page): its key must fit the column too,
    as the tags' must; "ﷺ" is 18 characters once normalised."""
    with pytest.raises(ValidationError) as refused:
        validate_byline("\ufdfa" * 50)
    assert refused.value.code == "key_long"
    validate_byline("\ufdfa" * 44)  # 792 once normalised: fits
    validate_byline("x" * 200)


@pytest.mark.parametrize(
    "tag",
    [
        "en",
        "pt-BR",
        "zh-Hans",
        "i-klingon",
        "",
        "arz",
        "sr-Latn-RS",
        "es-419",
        "de-CH-1901",
        "ar-EG-u-nu-latn",
        "en-US-x-twain",
        "x-private",
        "zh-yue-HK",
    ],
)
def test_language__bcp47_shapes_accepted(tag):
    validate_language(tag)


@pytest.mark.parametrize(
    "tag",
    [
        "english language",
        "en_GB",
        "ververylongtag",
        "中文",
        # Well-formed for Atom's looser shape, not BCP 47 tags (the Nu checker refuses
        # them in `lang`: a review's finding).
        "english",
        "a",
        "en-x",
        "en-u",
        "en-GB-",
    ],
)
def test_language__other_text_refused(tag):
    with pytest.raises(ValidationError, match="not a language tag"):
        validate_language(tag)


def test_article_full_clean__keeps_the_no_break_spaces_a_writer_typed():
    """One line, single spaces, but a no-break space stays one: "M.\u00a0Dupont",
    "Bonjour\u202f!" and "10\u00a0km" were made plain spaces, places a line may break."""
    article = Article(
        title="T",
        body="B",
        slug="t",
        byline=" M.\u00a0Dupont \n",
        description="Bonjour\u202f!  10\u00a0km\u2007/ h\n\tensuite",
        tags=["10\u00a0km", " a \u00a0 b "],
    )

    article.clean_fields()

    assert article.byline == "M.\u00a0Dupont"
    assert article.description == "Bonjour\u202f! 10\u00a0km\u2007/ h ensuite"
    assert article.tags == ["10\u00a0km", "a \u00a0 b"]


def test_article_full_clean__normalises_and_names_the_bad_field():
    article = Article(
        title="T",
        body="B",
        slug="t",
        byline="  Ann \n Writer ",
        description="Two\nlines",
        tags="a, A, b",
        language="en GB",
    )

    with pytest.raises(ValidationError) as caught:
        article.clean_fields()

    assert set(caught.value.message_dict) == {"language"}
    article.language = " en_GB "  # a locale, as Jekyll sites write it
    article.clean_fields()
    assert article.language == "en-GB"
    assert (article.byline, article.description, article.tags) == (
        "Ann Writer",
        "Two lines",
        ["a", "b"],
    )


def test_tag_slug__readable_when_it_can_be_and_never_shared():
    from publishing.reader_fields import tag_slug

    assert tag_slug("Python") == tag_slug("ＰＹＴＨＯＮ") == "python"
    assert tag_slug("Web Dev") == "web-dev"
    assert tag_slug("数据库") == "数据库"
    assert tag_slug("हिन्दी") == "हिन्दी"  # the marks kept, as an article's slug keeps them
    assert tag_slug("c++") != tag_slug("c#") != tag_slug("c")
    assert tag_slug("c++").startswith("c-")
    for hostile in ("../etc", "a/b", ".", "?x#y"):
        assert all(ch not in tag_slug(hostile) for ch in "/.?#\\")
    # A folder's name: at most an article slug's bytes however long the name's UTF-8.
    long = [tag_slug("数" * 100), tag_slug("数" * 99 + "据"), tag_slug("王" * 200)]
    assert all(len(slug.encode()) <= SLUG_MAX_BYTES for slug in long)
    assert len(set(long)) == 3 and long[0].startswith("数" * 60)
    assert tag_slug("数" * 66) == "数" * 66  # 198 bytes: fits, kept whole


def test_tag_key__spaces_and_hyphens_between_words_are_one():
    """As Hugo (its taxonomy pages are by the term made a URL) and WordPress (terms by
    slug) take them: the spellings that shared a folder are one tag."""
    from publishing.reader_fields import distinct_tags, normalize_tags, tag_key

    spellings = [
        "machine learning",
        "Machine-Learning",
        " machine  -  learning ",
        "MACHINE\tLEARNING",
    ]
    assert {tag_key(s) for s in spellings} == {"machine-learning"}
    assert tag_key("c++") != tag_key("c#") and tag_key("数 据") == "数-据"
    assert normalize_tags("machine learning, Machine-Learning, ml") == ["machine learning", "ml"]
    assert distinct_tags(["Web Dev", "web-dev", "Go", "go"]) == ["Web Dev", "Go"]


NAMES = ["c++", "c#", "c", "machine learning", "2024", "数据库", "数" * 100, "-", "_x", "Ω"]


@given(st.lists(st.text(min_size=1, max_size=12), max_size=20))
def test_tag_slug__two_tags_never_share_a_folder(extra):
    """Distinct keys, distinct slugs, also when a tag is named as another's hashed slug
    (the slug of "c++") or ends as a hash does."""
    from publishing.reader_fields import tag_key, tag_slug

    names = [*NAMES, *extra, "2024123120241231", "deadbeefdeadbeef", "a-0123abcd0123abcd"]
    names += [tag_slug(n) for n in names]  # each one's folder, written as a tag of its own
    by_slug: dict[str, set[str]] = {}
    for name in names:
        if tag_key(name):
            by_slug.setdefault(tag_slug(name), set()).add(tag_key(name))
    assert {slug: keys for slug, keys in by_slug.items() if len(keys) > 1} == {}
    assert tag_slug(tag_slug("c++")) != tag_slug("c++")  # the guard of a hash-like key
    assert tag_slug("deadbeefdeadbeef") != "deadbeefdeadbeef"
    assert tag_slug("deadbeef") == "deadbeef" and tag_slug("20241231") == "20241231"


@pytest.mark.parametrize("slug", ["TAG", "author"])
def test_tag_and_author_are_reserved_slugs_now(slug):
    """tag/ and author/ hold the tag and byline pages: no article may take them."""
    with pytest.raises(ValidationError, match="used by the site itself"):
        Article(title="T", slug=slug, body="b").clean_fields()


@pytest.mark.parametrize(
    "tags",
    [
        ["python", "数据库", "web"],
        ["Hello, World", "C, the language", 'say "hi"', '"quoted" first'],
        ['a "q", b', "plain"],
    ],
)
def test_tags_text__a_form_shows_tags_it_reads_back_whole(tags):
    from publishing.reader_fields import normalize_tags, tags_text

    assert normalize_tags(tags_text(tags)) == tags


def test_normalize_tags__text_is_split_at_commas_outside_quotes():
    from publishing.reader_fields import normalize_tags

    assert normalize_tags("a, b ,,c") == ["a", "b", "c"]
    assert normalize_tags('"Hello, World", python') == ["Hello, World", "python"]


@pytest.mark.parametrize(
    ("text", "rest"),
    [
        ('python, "Hello, World', '"Hello, World'),
        ('"Hello, World", "C, the', '"C, the'),
        ('python, "', '"'),
        ('  "a""b', '"a""b'),
        ('"' + "x" * 60, '"' + "x" * 38 + "…"),
        ('"Hello, World", python', None),
        ('say "hi", b', None),  # a quote inside a tag opens nothing
        ('"a""b", c', None),
        ("python, 数据库", None),
        ("", None),
    ],
)
def test_unclosed_quote__a_quote_opened_at_a_tags_start_and_never_closed(text, rest):
    from publishing.reader_fields import unclosed_quote

    assert unclosed_quote(text) == rest


def test_a_tags_field_refuses_an_unclosed_quote_naming_it():
    """Read as CSV reads it, 'python, "Hello, World' made "Hello, World" one tag: the
    form says what is wrong instead, and the line stays as typed to mend."""
    from django import forms

    from publishing.forms import TagsField

    field = TagsField()
    with pytest.raises(forms.ValidationError) as refused:
        field.clean('python, "Hello, World')
    assert refused.value.code == "tags_quote"
    assert 'not closed: "Hello, World.' in str(refused.value.messages)
    assert field.has_changed(["python"], 'python, "Hello, World')
    assert field.clean('python, "Hello, World"') == ["python", "Hello, World"]

    class Form(forms.Form):
        tags = TagsField()

    form = Form(data={"tags": 'python, "Hello, World'})
    assert not form.is_valid() and "tags" in form.errors
    assert 'value="python, &quot;Hello, World"' in str(form["tags"])


def test_normalize_tags__a_field_past_csvs_limit_is_read_not_an_error():
    """Python's csv refuses a field over 128 KiB; the form's line can be 8 MiB: the tag
    is read, and the validator names its length (a review's finding: a 500)."""
    from publishing.reader_fields import normalize_tags

    assert normalize_tags("x" * 140_000) == ["x" * 140_000]
