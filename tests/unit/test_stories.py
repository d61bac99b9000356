"""The rules of a story's draft (issue 22), on the run's database, with no worker: ids
shared with articles, the slug reserved, bad input refused with nothing stored, and a
save over a newer version refused."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from publishing.exceptions import StoryConflict
from publishing.models import Article, ArticleStatus, Revision, Story
from publishing.services import (
    article_create,
    article_publish_now,
    article_update,
    stories_tidy,
    story_publish,
    story_restore,
    story_save,
    story_trash,
    story_untrash,
    story_withdraw,
)
from publishing.services.importing import articles_import
from publishing.services.stories import diff_lines, revision_diff
from tests.support.import_files import post, run_import, write

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


def test_a_save_of_the_text_saved_since_is_no_conflict():
    """The tab's autosave was in flight when its writer pressed "Save and publish": the
    form names the version before the autosave, with the very text the autosave
    stored. Nothing would be overwritten, so it is no conflict (and no new version)."""
    story = story_save(title="Autosaved", body="Half a thought.")
    opened_at = story.version
    story_save(story_id=story.pk, title="Autosaved", body="A whole thought.", if_version=opened_at)

    same = story_save(
        story_id=story.pk, title="Autosaved", body="A whole thought.", if_version=opened_at
    )

    assert same.version == opened_at + 1
    assert story_publish(story_id=story.pk).body == "A whole thought."


def test_an_edit_made_in_the_article_form_is_not_undone_by_publishing_the_story():
    """An editor fixes the live article in the Article form (or the API's PATCH); the
    story's draft still has the old text. Publishing the story must not put the old
    text back silently: with no changes of its own the draft takes the article's text;
    with changes of other fields, both go out (field by field: the next test)."""
    story = story_save(title="Typo", body="Teh text.")
    article = story_publish(story_id=story.pk)
    article_update(article=article, body="The text.")

    story_publish(story_id=story.pk)  # nothing changed in the draft

    assert Article.objects.get(pk=story.pk).body == "The text."
    assert Story.objects.get(pk=story.pk).body == "The text."

    article_update(article=Article.objects.get(pk=story.pk), body="The text, edited.")
    story_save(story_id=story.pk, title="Typo fixed", body="The text.")
    story_publish(story_id=story.pk)  # the writer's own change

    live = Article.objects.get(pk=story.pk)
    assert (live.title, live.body) == ("Typo fixed", "The text, edited.")


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


def test_the_clock_purges_the_trash_after_its_days_and_prunes_old_revisions(settings):
    settings.STORY_TRASH_DAYS = 30
    settings.STORY_REVISIONS_KEEP_DAYS = 90
    settings.STORY_REVISIONS_KEEP_COUNT = 2
    long_ago = timezone.now() - timedelta(days=91)
    kept, binned, fresh_bin = (story_save(title=t) for t in ("Kept", "Binned", "Fresh bin"))
    for n in range(2, 6):
        story_save(story_id=kept.pk, title=f"Kept v{n}")
    Revision.objects.filter(story=kept, number__lte=4).update(saved_at=long_ago)
    story_trash(story_id=binned.pk)
    story_trash(story_id=fresh_bin.pk)
    Story.objects.filter(pk=binned.pk).update(trashed_at=timezone.now() - timedelta(days=31))

    purged, pruned = stories_tidy(limit=100)

    assert (purged, pruned) == (1, 3)
    assert set(Story.objects.values_list("pk", flat=True)) == {kept.pk, fresh_bin.pk}
    # v4 is old too, but one of the newest two; v5 is new.
    assert list(kept.revisions.order_by("number").values_list("number", flat=True)) == [4, 5]


def test_the_version_published_last_is_never_pruned(settings):
    """A publish compares the article with it, to keep an edit made since in the
    Article form or the API: pruned (50 autosaves and 90 days), the next publish undid
    that edit, kept nowhere (a review's finding)."""
    settings.STORY_REVISIONS_KEEP_DAYS = 0
    settings.STORY_REVISIONS_KEEP_COUNT = 2
    story = story_save(title="Pruned", body="Published text.", slug="pruned")
    story_publish(story_id=story.pk)
    for n in range(3):
        story_save(story_id=story.pk, title="Pruned", body=f"Draft {n}.", slug="pruned")
    article_update(article=Article.objects.get(pk=story.pk), body="Published, with a fix.")
    Revision.objects.update(saved_at=timezone.now() - timedelta(days=1))

    stories_tidy(limit=100)
    story_publish(story_id=story.pk)

    assert Revision.objects.filter(story=story, body="Published, with a fix.").exists()


def test_a_trashed_story_is_refused_edits_until_restored():
    story = story_save(title="In the bin", body="Text.", slug="in-the-bin")
    story_trash(story_id=story.pk)

    with pytest.raises(ValidationError, match="trash"):
        story_save(story_id=story.pk, title="Edited", body="Text.")
    assert article_create(title="Free again", body="Text.", slug="in-the-bin").slug == "in-the-bin"


def test_import_keeps_draft_files_as_drafts_by_slug(tmp_path):
    write(tmp_path, "later.md", post("Later", "First words.", draft="true"))
    write(tmp_path, "clash.md", post("Clash", "x", slug="taken", draft="true"))
    article_create(title="Live", body="Live text.", slug="taken")

    first = articles_import([tmp_path])
    again = articles_import([tmp_path])
    write(tmp_path, "later.md", post("Later", "Second words.", draft="true"))
    edited = articles_import([tmp_path])

    assert (first.counts["created"], first.counts["failed"]) == (1, 1)
    assert "an article has this slug" in first.failures[0].reason
    assert again.counts["unchanged"] == 1 and edited.counts["updated"] == 1
    story = Story.objects.get(slug="later")
    assert (story.body, story.version, story.state) == ("Second words.", 2, "draft")
    assert not Article.objects.filter(slug="later").exists()


def clock_ahead(monkeypatch, **delta) -> None:
    """The clock `delta` ahead of the real one (an hour later, a day later)."""
    real = timezone.now
    monkeypatch.setattr(timezone, "now", lambda: real() + timedelta(**delta))


def settled(story_id: int) -> Article:
    """The article as a worker leaves it published."""
    Article.objects.filter(pk=story_id).update(status=ArticleStatus.PUBLISHED)
    return Article.objects.get(pk=story_id)


def test_an_undated_story_keeps_the_date_of_its_first_publish(monkeypatch):
    """An empty date means "when published": the first publish. Publishing again (an
    edit; after a withdraw, after the trash) keeps that date, as Ghost and WordPress
    keep a post's, so the article never jumps to the top of the front page and the
    feeds; a date the writer sets is the date."""
    story = story_save(title="Undated", body="One.", slug="undated")
    first = story_publish(story_id=story.pk).publish_at
    assert abs(first - timezone.now()) < timedelta(seconds=5)
    settled(story.pk)

    clock_ahead(monkeypatch, hours=1)
    story_save(story_id=story.pk, title="Undated", body="Two.", slug="undated")
    assert story_publish(story_id=story.pk).publish_at == first
    assert Article.objects.get(pk=story.pk).body == "Two."

    story_withdraw(article_id=story.pk)
    clock_ahead(monkeypatch, days=1)
    assert story_publish(story_id=story.pk).publish_at == first
    story_trash(story_id=story.pk)
    story_untrash(story_id=story.pk)
    assert story_publish(story_id=story.pk).publish_at == first

    chosen = (timezone.now() - timedelta(days=30)).replace(microsecond=0)
    story_save(story_id=story.pk, title="Undated", body="Two.", slug="undated", publish_at=chosen)
    assert story_publish(story_id=story.pk).publish_at == chosen


def test_publishing_an_unchanged_undated_story_again_changes_nothing(monkeypatch):
    """A second "Publish" (a double click, or with no change since) writes nothing:
    no new version, the article still published with its message, nothing sent."""
    story = story_save(title="Said once", body="Once.", slug="said-once")
    story_publish(story_id=story.pk)
    before = settled(story.pk)
    clock_ahead(monkeypatch, minutes=5)

    again = story_publish(story_id=story.pk)

    after = Article.objects.get(pk=story.pk)
    assert again.publish_at == before.publish_at
    assert (after.status, after.message_id, after.content_hash, after.updated_at) == (
        ArticleStatus.PUBLISHED,
        before.message_id,
        before.content_hash,
        before.updated_at,
    )
    assert Story.objects.get(pk=story.pk).version == story.version
    assert Revision.objects.filter(story_id=story.pk).count() == 1


def test_an_undated_draft_of_a_scheduled_article_publishes_now(monkeypatch):
    """A date still ahead was never a publish: the draft's date set for next week, then
    cleared ("when published"), publishes now."""
    next_week = (timezone.now() + timedelta(days=7)).replace(microsecond=0)
    story = story_save(title="Soon", body="Text.", slug="soon", publish_at=next_week)
    assert story_publish(story_id=story.pk).publish_at == next_week

    story_save(story_id=story.pk, title="Soon", body="Text.", slug="soon")
    published = story_publish(story_id=story.pk)

    assert abs(published.publish_at - timezone.now()) < timedelta(seconds=5)
    assert not published.is_scheduled


def test_a_schedule_is_no_first_publish(monkeypatch):
    """The date an undated draft keeps is the one it went out with, never a schedule it
    did not keep (a review's findings): scheduled, withdrawn before it, published
    undated once it had passed, it was back-dated to the schedule; scheduled, then
    published undated at once and withdrawn, it took the schedule's date again."""
    later = (timezone.now() + timedelta(hours=1)).replace(microsecond=0)
    kept = story_save(title="Kept back", body="Text.", slug="kept-back", publish_at=later)
    story_publish(story_id=kept.pk)
    story_withdraw(article_id=kept.pk)
    moved = story_save(title="Moved", body="Text.", slug="moved", publish_at=later)
    story_publish(story_id=moved.pk)
    story_save(story_id=moved.pk, title="Moved", body="Text.", slug="moved")
    went_out = story_publish(story_id=moved.pk).publish_at
    settled(moved.pk)
    kept_out = story_save(title="Kept out", body="Text.", slug="kept-out", publish_at=later)
    story_publish(story_id=kept_out.pk)

    clock_ahead(monkeypatch, hours=2)
    # The schedule kept: it went out at `later` (as a worker leaves it), then withdrawn.
    Article.objects.filter(pk=kept_out.pk).update(
        status=ArticleStatus.PUBLISHED, published_publish_at=later
    )
    for story in (kept, moved, kept_out):
        if Article.objects.filter(pk=story.pk).exists():
            story_withdraw(article_id=story.pk)
        current = Story.objects.get(pk=story.pk)
        story_save(story_id=story.pk, title=current.title, body="Again.", slug=current.slug)
    assert abs(story_publish(story_id=kept.pk).publish_at - timezone.now()) < timedelta(seconds=5)
    assert story_publish(story_id=moved.pk).publish_at == went_out
    assert story_publish(story_id=kept_out.pk).publish_at == later


def test_what_only_the_article_changed_since_its_publish_comes_into_the_draft():
    """Three ways from the version published last: an editor's Publish now moved the
    scheduled article's date, the writer then fixed a typo in the draft; publishing it
    put the article back under its embargo (a review's finding). A field only the
    article changed comes into the draft; one both changed is the draft's, the
    article's kept as a version."""
    later = (timezone.now() + timedelta(days=7)).replace(microsecond=0)
    story = story_save(title="Embargo", body="A typo.", slug="embargo", publish_at=later)
    story_publish(story_id=story.pk)
    article_publish_now(article_id=story.pk)  # the editor: "Publish now"
    now = Article.objects.get(pk=story.pk).publish_at
    story_save(
        story_id=story.pk, title="Embargo", body="No typo.", slug="embargo", publish_at=later
    )

    published = story_publish(story_id=story.pk)

    assert (published.publish_at, published.body) == (now, "No typo.")
    assert not published.is_scheduled
    article_update(article=published, title="Embargo (editor's)", body="The editor's text.")
    story_save(
        story_id=story.pk,
        title="Embargo",
        body="The writer's text.",
        slug="embargo",
        publish_at=now,
    )
    published = story_publish(story_id=story.pk)
    assert (published.title, published.body) == ("Embargo (editor's)", "The writer's text.")
    assert Revision.objects.filter(story_id=story.pk, body="The editor's text.").exists()


def test_an_undated_drafts_publish_keeps_an_editors_new_schedule():
    """An editor moved a live undated article's date to later (a schedule for its
    edit); the writer's typo fix then published it at once, the editor's date kept
    nowhere (a review's finding). The date the article was live with is no change."""
    story = story_save(title="Undated", body="A typo.", slug="undated-kept")
    live_at = story_publish(story_id=story.pk).publish_at
    Article.objects.filter(pk=story.pk).update(
        status=ArticleStatus.PUBLISHED, published_publish_at=live_at
    )
    later = (timezone.now() + timedelta(days=2)).replace(microsecond=0)
    article_update(article=Article.objects.get(pk=story.pk), publish_at=later)
    story_save(story_id=story.pk, title="Undated", body="No typo.", slug="undated-kept")

    published = story_publish(story_id=story.pk)

    assert (published.publish_at, published.body) == (later, "No typo.")
    assert published.is_scheduled


KEPT = "slug: a draft (a story never published, or withdrawn) keeps this address"


def test_import_refuses_the_addresses_that_drafts_and_withdrawn_stories_keep(tmp_path):
    """The admin and the API refuse a draft's address to any other article, and a
    withdrawn story's (it publishes there again): so does the import, by file, with
    the reason; the stories can still be saved and published at their addresses."""
    draft = story_save(title="Draft", body="Mine.", slug="draft-address")
    gone = story_save(title="Gone", body="Mine.", slug="withdrawn-address")
    story_publish(story_id=gone.pk)
    story_withdraw(article_id=gone.pk)
    binned = story_save(title="Binned", body="Mine.", slug="trashed-address")
    story_trash(story_id=binned.pk)  # the trash frees an address
    write(tmp_path, "a.md", post("Intruder", "Theirs.", slug="DRAFT-ADDRESS"))  # same key
    write(tmp_path, "b.md", post("Intruder", "Theirs.", slug="withdrawn-address"))
    write(tmp_path, "c.md", post("Taker", "Theirs.", slug="trashed-address"))
    write(tmp_path, "d.md", post("Fresh", "Theirs.", slug="fresh-address"))

    dry = articles_import([tmp_path], dry_run=True)
    out, err, code = run_import(str(tmp_path))

    summary = "created 2, updated 0, unchanged 0, skipped 0, failed 2"
    assert dry.summary == summary and out.splitlines()[-1] == f"import_articles: {summary}"
    assert code == 1
    assert f"a.md: {KEPT}" in err and f"b.md: {KEPT}" in err
    assert set(Article.objects.values_list("slug", flat=True)) == {
        "trashed-address",
        "fresh-address",
    }
    story_save(story_id=draft.pk, title="Draft", body="Mine, edited.", slug="draft-address")
    assert story_publish(story_id=draft.pk).slug == "draft-address"
    assert story_publish(story_id=gone.pk).slug == "withdrawn-address"


def test_import_updates_the_article_a_story_published_at_its_address(tmp_path):
    """A story's own article is an article as any other: a file of its slug updates it
    (publishing the story later keeps that edit: docs/writing.md)."""
    story = story_save(title="Published", body="Mine.", slug="published-address")
    story_publish(story_id=story.pk)
    write(tmp_path, "p.md", post("Published", "Edited by file.", slug="published-address"))

    report = articles_import([tmp_path])

    assert report.counts["updated"] == 1 and not report.failures
    assert Article.objects.get(pk=story.pk).body == "Edited by file."


def test_a_draft_file_updates_only_a_draft_on_no_page(tmp_path):
    """A `draft: true` file of a published story's slug fails, as for any article on
    the blog, and leaves the story's draft alone; of a withdrawn story's, it updates
    that story's draft (docs/import.md)."""
    live = story_save(title="Live", body="Mine.", slug="live-story")
    story_publish(story_id=live.pk)
    gone = story_save(title="Gone", body="Mine.", slug="gone-story")
    story_publish(story_id=gone.pk)
    story_withdraw(article_id=gone.pk)
    write(tmp_path, "live.md", post("Live", "From a file.", slug="live-story", draft="true"))
    write(tmp_path, "gone.md", post("Gone", "From a file.", slug="gone-story", draft="true"))

    report = articles_import([tmp_path])

    assert (report.counts["failed"], report.counts["updated"]) == (1, 1)
    assert report.failures[0].path.name == "live.md"
    assert "an article has this slug" in report.failures[0].reason
    live_story = Story.objects.get(pk=live.pk)
    assert (live_story.body, live_story.version) == ("Mine.", live.version)
    assert not live_story.has_unpublished_changes
    assert Story.objects.get(pk=gone.pk).body == "From a file."


def test_a_diff_shows_a_change_of_the_reader_fields_alone():
    story = story_save(title="Tagged", body="Same body.", tags=["garden"], byline="Ann")
    story = story_save(
        story_id=story.pk, title="Tagged", body="Same body.", tags=["garden", "spring"], byline="Bo"
    )
    first, second = story.revisions.order_by("number")

    lines = revision_diff(first, second)

    assert ("-", "Tags: garden") in lines and ("+", "Tags: garden, spring") in lines
    assert ("-", "Byline: Ann") in lines and ("+", "Byline: Bo") in lines
    assert not any(text.startswith("Same body") for kind, text in lines if kind in "+-")
