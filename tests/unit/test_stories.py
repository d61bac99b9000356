"""The rules of a story's draft (issue 22), on the run's database, with no worker: ids
shared with articles, the slug reserved, bad input refused with nothing stored, and a
save over a newer version refused."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from publishing.exceptions import StoryConflict
from publishing.models import Article, Revision, Story
from publishing.services import article_create, story_publish, story_restore, story_save
from publishing.services.stories import diff_lines

pytestmark = pytest.mark.django_db


def test_story_ids_come_from_the_article_sequence_so_form_articles_never_take_them():
    first = story_save(title="Draft one")
    written = article_create(title="From the form", body="Text.")
    second = story_save(title="Draft two", body="Ready.")

    ids = [first.pk, written.pk, second.pk]
    assert len(set(ids)) == 3 and ids == sorted(ids)
    article = story_publish(story_id=second.pk)
    assert article.pk == second.pk
    assert article_create(title="Next from the form", body="Text.").pk > second.pk


def test_a_drafts_slug_is_reserved_for_it():
    story_save(title="Reserved", slug="reserved")

    with pytest.raises(ValidationError, match="slug"):
        article_create(title="Another", body="Text.", slug="RESERVED")  # the same key
    derived = article_create(title="Reserved", body="Text.")
    assert derived.slug == "reserved-2"
    with pytest.raises(ValidationError, match="slug"):
        story_save(title="Yet another", slug="reserved")


# Bad drafts: each refused with its field named, and nothing stored.
BAD_DRAFTS = [
    ({"title": ""}, "title"),  # a draft needs a name to be found again
    ({"title": "Two\nlines"}, "title"),
    ({"title": "x" * 201}, "title"),
    ({"title": "Fine", "slug": "a/b"}, "slug"),
    ({"title": "Fine", "slug": "admin"}, "slug"),
    ({"title": "Fine", "body": "x" * (2**20 + 1)}, "body"),
]


@pytest.mark.parametrize(("fields", "field"), BAD_DRAFTS)
def test_a_bad_draft_is_refused_by_field_and_stores_nothing(fields, field):
    with pytest.raises(ValidationError) as refused:
        story_save(**fields)

    assert field in refused.value.message_dict
    assert not Story.objects.exists() and not Revision.objects.exists()


def test_publishing_a_draft_without_a_body_is_refused_and_changes_nothing():
    story = story_save(title="Empty so far")

    with pytest.raises(ValidationError, match="body"):
        story_publish(story_id=story.pk)

    assert not Article.objects.filter(pk=story.pk).exists()
    assert Story.objects.get(pk=story.pk).state == "draft"


def test_a_save_over_a_newer_version_is_refused_and_loses_nothing():
    story = story_save(title="Two tabs", body="Tab one's text.")
    tab_one = story.version
    story_save(story_id=story.pk, title="Two tabs", body="Tab two's text.", if_version=tab_one)

    with pytest.raises(StoryConflict) as conflict:
        story_save(story_id=story.pk, title="Two tabs", body="Tab one again.", if_version=tab_one)

    assert conflict.value.current == tab_one + 1
    assert Story.objects.get(pk=story.pk).body == "Tab two's text."


def test_every_save_that_changes_the_draft_is_a_revision_with_who_and_when():
    story = story_save(title="History", body="One.", saved_by="ann")
    story_save(story_id=story.pk, title="History", body="One.", saved_by="bob")  # no change
    story_save(story_id=story.pk, title="History", body="Two.", saved_by="bob")

    revisions = list(Revision.objects.filter(story=story).order_by("number"))
    assert [(r.number, r.body, r.saved_by) for r in revisions] == [
        (1, "One.", "ann"),
        (2, "Two.", "bob"),
    ]
    assert all(r.saved_at for r in revisions)


def test_diff_lines_say_what_went_and_what_came_with_context():
    old = ["Title: T", "", "one", "two", "three"]
    new = ["Title: T", "", "one", "2", "three", "four"]

    lines = diff_lines(old, new, context=1)

    assert lines == [
        ("@", "@@ -3,3 +3,4 @@"),
        (" ", "one"),
        ("-", "two"),
        ("+", "2"),
        (" ", "three"),
        ("+", "four"),
    ]
    assert diff_lines(old, old) == []


def test_restore_makes_an_old_version_the_draft_at_the_storys_address():
    story = story_save(title="Restorable", body="Old words.", slug="restorable")
    story_save(story_id=story.pk, title="Renamed", body="New words.", slug="moved")

    restored = story_restore(story_id=story.pk, number=1, saved_by="ann")

    assert (restored.title, restored.body, restored.slug) == ("Restorable", "Old words.", "moved")
    assert restored.version == 3
    assert Revision.objects.get(story=story, number=3).note == "restored from version 1"
