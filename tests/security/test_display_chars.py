"""Issue 19, finding 10: titles and slugs refuse bidirectional overrides and isolates
and control characters, naming the character and its position, at every way in
(full_clean, which the admin, the API and the import run); ZWJ, ZWNJ, LRM and RLM
stay allowed."""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import ValidationError

from publishing.models import Article
from tests.support.admin_forms import ADD_URL, article_form
from tests.support.import_files import post, run_import, write

pytestmark = pytest.mark.django_db

TRICKS = [
    ("\u202a", "U+202A LEFT-TO-RIGHT EMBEDDING"),
    ("\u202b", "U+202B RIGHT-TO-LEFT EMBEDDING"),
    ("\u202c", "U+202C POP DIRECTIONAL FORMATTING"),
    ("\u202d", "U+202D LEFT-TO-RIGHT OVERRIDE"),
    ("\u202e", "U+202E RIGHT-TO-LEFT OVERRIDE"),
    ("\u2066", "U+2066 LEFT-TO-RIGHT ISOLATE"),
    ("\u2067", "U+2067 RIGHT-TO-LEFT ISOLATE"),
    ("\u2068", "U+2068 FIRST STRONG ISOLATE"),
    ("\u2069", "U+2069 POP DIRECTIONAL ISOLATE"),
    ("\x7f", "U+007F a control character"),
    ("\x80", "U+0080 a control character"),
    ("\x85", "U+0085 a control character"),
    ("\x9f", "U+009F a control character"),
]


def trick_message(name: str, position: int) -> str:
    return (
        f"{name} at position {position} is an invisible control character that changes how "
        "the text is shown; remove it."
    )


@pytest.mark.parametrize(("char", "name"), TRICKS)
def test_a_title_with_a_trick_is_refused_naming_it(char, name):
    with pytest.raises(ValidationError) as refused:
        Article(title=f"invoice{char}gpj.exe", body="b").full_clean()
    assert trick_message(name, 8) in refused.value.message_dict["title"]


@pytest.mark.parametrize(("char", "name"), [TRICKS[4], TRICKS[11]])
def test_a_slug_with_a_trick_is_refused_naming_it(char, name):
    with pytest.raises(ValidationError) as refused:
        Article(title="T", slug=f"ab{char}c", body="b").full_clean()
    assert trick_message(name, 3) in refused.value.message_dict["slug"]


def test_a_title_with_a_trick_is_refused_by_save_too():
    with pytest.raises(ValidationError):
        Article.objects.create(title="a\u202eb", body="b")
    assert not Article.objects.exists()


@pytest.mark.parametrize(
    "title",
    [
        "می\u200cخواهم",  # ZWNJ: Persian
        "क्\u200dष",  # ZWJ: Devanagari
        "👩\u200d💻 at work",  # ZWJ: an emoji sequence
        "abc \u200e(1)",  # LRM
        "עברית \u200f(2)",  # RLM
    ],
)
def test_joiners_and_marks_stay_allowed(title):
    Article(title=title, body="b").full_clean()


def test_the_api_refuses_a_trick_with_the_message(api):
    response = api.post(
        "/api/articles",
        json.dumps({"title": "pay\u202eto", "body": "b"}),
        content_type="application/json",
    )
    assert response.status_code == 400, response.content
    assert trick_message("U+202E RIGHT-TO-LEFT OVERRIDE", 4) in response.json()["errors"]["title"]
    assert not Article.objects.exists()


def test_the_import_refuses_a_trick_naming_the_file(tmp_path):
    bad = write(tmp_path, "bad.md", post("pay\u202eto", slug="sec-bidi"))
    write(tmp_path, "good.md", post("Fine", slug="sec-fine"))
    _out, err, code = run_import(str(tmp_path))
    assert code == 1
    assert f"failed: {bad}: title: {trick_message('U+202E RIGHT-TO-LEFT OVERRIDE', 4)}" in err
    assert list(Article.objects.values_list("slug", flat=True)) == ["sec-fine"]


def test_the_admin_form_refuses_a_trick(admin_client):
    response = admin_client.post(ADD_URL, article_form(title="pay\u202eto"))
    assert response.status_code == 200  # the form again, with the error
    assert "U+202E RIGHT-TO-LEFT OVERRIDE at position 4" in response.content.decode()
    assert not Article.objects.exists()
