"""A story's services racing each other, deletes and the clock (issue 22 review), on
PostgreSQL's row locks: a delete and a publish, withdraw or trash take a story's row
and its article's in one order (else the database kills one as a deadlock); a purge
never takes a story restored meanwhile; a second withdraw, a second new draft of one
address and a second request making an article's story end with a clear answer, not
a server error. Each race is made certain: one side holds its locks until the other
waits for them. No worker: the races are in the database, before anything is sent."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.db import connection, connections, transaction
from django.db.models.signals import pre_delete
from django.test import Client
from django.utils import timezone

from publishing import signals
from publishing.exceptions import NotOnTheBlog
from publishing.models import Article, Story
from publishing.services import (
    article_create,
    stories_tidy,
    story_publish,
    story_save,
    story_trash,
    story_untrash,
    story_withdraw,
)
from publishing.services.authoring import article_update
from publishing.services.importing import articles_import
from tests.support.import_files import post, write
from tests.support.waiting import wait_for

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="row locks: SQLite has one writer at a time"
    ),
]


def another_is_waiting_on_a_lock() -> bool:
    """Some other session of the test database waits for a lock. (The statistics are
    read once per transaction unless cleared: the caller is inside one.)"""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'"
        )
        return cursor.fetchone()[0] > 0


class Racer(threading.Thread):
    """Runs `action` on a connection of its own; its outcome or error kept."""

    def __init__(self, action: Callable[[], object]):
        super().__init__(daemon=True)
        self.action, self.error, self.result = action, None, None

    def run(self) -> None:
        try:
            self.result = self.action()
        except Exception as exc:  # kept for the assertion
            self.error = exc
        finally:
            connections.close_all()


def race_while_held(held: Callable[[], object], action: Callable[[], object]):
    """Run `held` in a transaction; run `action` on a connection of its own once it
    waits for a lock that transaction holds; commit. (`held`'s result, the ended racer)."""
    racer = Racer(action)
    with transaction.atomic():
        result = held()
        racer.start()
        wait_for(another_is_waiting_on_a_lock, timeout=20, what="the racer to wait on a lock")
    racer.join(timeout=30)
    assert not racer.is_alive()
    return result, racer


def published_story(slug: str) -> Story:
    story = story_save(title=f"Story {slug}", body="Text.", slug=slug)
    story_publish(story_id=story.pk)
    return Story.objects.get(pk=story.pk)


@pytest.mark.parametrize(
    "service",
    [
        pytest.param(lambda pk: story_publish(story_id=pk), id="publish"),
        pytest.param(lambda pk: story_withdraw(article_id=pk), id="withdraw"),
        pytest.param(lambda pk: story_trash(story_id=pk), id="trash"),
    ],
)
@pytest.mark.parametrize("bulk", [False, True], ids=["one", "bulk"])
def test_an_article_delete_racing_a_story_service_is_no_deadlock(monkeypatch, service, bulk):
    """The Article list's delete takes the article's row (its cascade's order), then the
    story's (the trash); the story services take the story's, then the article's. The
    service starts while the delete holds its first lock and the delete goes on once
    the service waits for a lock: with opposite orders that is a deadlock."""
    story = published_story("raced")
    story_save(story_id=story.pk, title="Raced, edited", body="New text.", slug="raced")
    racer = Racer(lambda: service(story.pk))
    real = signals.article_to_trash

    def trash_once_the_service_waits(*, article):
        racer.start()
        wait_for(another_is_waiting_on_a_lock, timeout=20, what="the service to wait on a lock")
        real(article=article)

    monkeypatch.setattr(signals, "article_to_trash", trash_once_the_service_waits)
    if bulk:  # the Article list's "Delete selected", the shell's QuerySet.delete()
        Article.objects.filter(pk=story.pk).delete()
    else:  # the article's own Delete, the API's
        Article.objects.get(pk=story.pk).delete()
    racer.join(timeout=30)

    assert not racer.is_alive()
    # After the delete the story is in the trash: the service is refused, or (withdraw)
    # finds no article; never killed as a deadlock.
    assert racer.error is None or isinstance(racer.error, ValidationError | NotOnTheBlog), repr(
        racer.error
    )
    assert not Article.objects.filter(pk=story.pk).exists()
    assert Story.objects.get(pk=story.pk).trashed_at is not None


def purge_by_clock() -> None:
    stories_tidy(limit=10)


@pytest.mark.parametrize(
    "purge",
    [
        pytest.param(lambda client, pk: purge_by_clock(), id="the clock"),
        pytest.param(
            lambda client, pk: client.post(
                "/admin/publishing/story/?state=trash",
                {"action": "purge", "_selected_action": [pk], "index": "0"},
            ),
            id="delete forever",
        ),
    ],
)
def test_a_purge_never_deletes_a_story_restored_from_the_trash_meanwhile(
    settings, admin_client, purge
):
    """A purge (the clock's, or "Delete forever" in the trash's list) picks the stories
    in the trash, then deletes them: a writer who restores one in between must find
    it, not lose it for good."""
    settings.STORY_TRASH_DAYS = 1
    story = story_save(title="Nearly purged", body="Keep me.", slug="nearly-purged")
    story_trash(story_id=story.pk)
    Story.objects.filter(pk=story.pk).update(trashed_at=timezone.now() - timedelta(days=2))
    racer = Racer(lambda: story_untrash(story_id=story.pk))

    def restore_before_the_delete(sender, instance, **kwargs):
        racer.start()
        wait_for(
            lambda: not racer.is_alive() or another_is_waiting_on_a_lock(),
            timeout=20,
            what="the restore to end, or to wait for the purge",
        )

    pre_delete.connect(restore_before_the_delete, sender=Story, weak=False)
    try:
        purge(admin_client, story.pk)
    finally:
        pre_delete.disconnect(restore_before_the_delete, sender=Story)
    racer.join(timeout=30)

    assert not racer.is_alive()
    restored = Story.objects.filter(pk=story.pk, trashed_at__isnull=True).exists()
    if racer.error is None:
        assert restored, "restored from the trash, then purged"
    else:  # the purge went first: the restore finds nothing, and says so
        assert isinstance(racer.error, Story.DoesNotExist), repr(racer.error)
        assert not Story.objects.filter(pk=story.pk).exists()


@pytest.mark.parametrize("way", ["api", "admin"])
def test_a_withdraw_that_finds_the_article_withdrawn_meanwhile_says_so(
    make_token, admin_client, way
):
    """Two writers press Withdraw at once: the second finds the article there, then
    gone once the first's transaction ends. It is told so, not given a server error."""
    story = published_story("twice")
    if way == "api":
        client = Client(headers={"Authorization": f"Bearer {make_token('withdrawer')[1]}"})
        url = f"/api/articles/{story.pk}/withdraw"
    else:
        client, url = admin_client, f"/admin/publishing/story/{story.pk}/withdraw/"
    _, racer = race_while_held(
        lambda: story_withdraw(article_id=story.pk), lambda: client.post(url)
    )

    assert racer.error is None, repr(racer.error)
    if way == "api":
        assert racer.result.status_code == 409, racer.result.content
    else:
        assert racer.result.status_code == 302
        page = admin_client.get(racer.result["Location"]).content.decode()
        assert "nothing to withdraw" in page
    assert Story.objects.get(pk=story.pk).state == "draft"


@pytest.mark.parametrize("slug", ["", "weekly-notes"], ids=["derived", "given"])
def test_two_new_drafts_of_one_address_at_once(slug):
    """Two writers (or a new story's first autosave and its Save draft) save a new draft
    with the same title at once: the unique index decides. A derived address moves
    on to a free one, as an article's does; a given one is refused by field, never a
    server error."""
    first, racer = race_while_held(
        lambda: story_save(title="Weekly notes", body="First.", slug=slug),
        lambda: story_save(title="Weekly notes", body="Second.", slug=slug),
    )

    assert first.slug == "weekly-notes"
    if slug:
        assert isinstance(racer.error, ValidationError), repr(racer.error)
        assert "slug" in racer.error.message_dict
        assert Story.objects.count() == 1
    else:
        assert racer.error is None, repr(racer.error)
        assert racer.result.slug.startswith("weekly-notes-")
        assert Story.objects.get(pk=racer.result.pk).body == "Second."


def test_publish_of_an_article_without_a_story_while_another_request_makes_its_story(
    make_token,
):
    """An article written in the Article form has no story until a writer needs one:
    a withdraw makes it while the API's publish of the same article makes it too. The
    second insert meets the first's row, and takes it instead of failing."""
    article = article_create(title="From the form", body="Text.")
    client = Client(headers={"Authorization": f"Bearer {make_token('publisher')[1]}"})
    _, racer = race_while_held(
        lambda: story_withdraw(article_id=article.pk),
        lambda: client.post(f"/api/articles/{article.pk}/publish"),
    )

    assert racer.error is None, repr(racer.error)
    assert racer.result.status_code == 200, racer.result.content  # published again
    assert Story.objects.filter(pk=article.pk).count() == 1


def test_a_draft_and_an_article_of_one_address_at_once_are_not_both_kept():
    """A writer saves a draft at /shared-address/ while another writes an article there
    in the Article form: the address is reserved for one of them, never both (the two
    saves take turns on the address's lock: work.db.address_lock)."""
    story, racer = race_while_held(
        lambda: story_save(title="Draft", body="Text.", slug="shared-address"),
        lambda: article_create(title="Form", body="Text.", slug="shared-address"),
    )

    assert Story.objects.filter(pk=story.pk).exists()
    assert isinstance(racer.error, ValidationError) and "slug" in racer.error.message_dict
    assert not Article.objects.filter(slug="shared-address").exists()


def test_a_draft_saved_while_an_import_plans_its_address_keeps_it(tmp_path):
    """An import plans a chunk (its address free), then a writer saves a draft there
    before the chunk is written: the chunk takes the addresses' locks before it
    writes, sees the draft and refuses that file (docs/import.md)."""
    write(tmp_path, "a.md", post("Imported", "Text.", slug="raced-import"))
    write(tmp_path, "b.md", post("Other", "Text.", slug="raced-import-other"))

    story, racer = race_while_held(
        lambda: story_save(title="Draft", body="Text.", slug="raced-import"),
        lambda: articles_import([tmp_path]),
    )

    assert racer.error is None, repr(racer.error)
    assert racer.result.summary == "created 1, updated 0, unchanged 0, skipped 0, failed 1"
    assert "keeps this address" in racer.result.failures[0].reason
    assert not Article.objects.filter(slug="raced-import").exists()
    assert Story.objects.get(pk=story.pk).slug == "raced-import"


def race_a_form_save(
    held: Racer, holding: threading.Event, go_on: threading.Event, *, article_id: int
) -> Racer:
    """Start `held` (a service that sets `holding` once it holds its first locks, then
    waits for `go_on`), then an Article form's save of `article_id` (the row's lock,
    then the address's); let `held` go on once the save waits for a lock. The form's save's
    racer, both ended."""
    held.start()
    assert holding.wait(30)
    form_save = Racer(
        lambda: article_update(article=Article.objects.get(pk=article_id), body="Form body.")
    )
    form_save.start()
    wait_for(another_is_waiting_on_a_lock, timeout=20, what="the form's save to wait on a lock")
    go_on.set()
    held.join(30)
    form_save.join(30)
    return form_save


def test_a_story_publish_beside_an_article_form_save_of_its_article_is_no_deadlock(monkeypatch):
    """A story's publish takes the story's row, the article's, then the address's in
    the article's save; an Article form's save took the address, then the row: one
    waited for the other's second lock, a deadlock (a review). Every save now locks the
    row before the address (Article.save), and both land."""
    from publishing.services import stories

    story = published_story("side-by-side")
    story_save(story_id=story.pk, title="Draft title", body="Text.", slug="side-by-side")
    real_content = stories._content
    content_read, go_on = threading.Event(), threading.Event()

    def held_in_the_publish(story_row):
        content = real_content(story_row)
        if threading.current_thread().name == "publish":
            content_read.set()
            go_on.wait(30)
        return content

    monkeypatch.setattr(stories, "_content", held_in_the_publish)
    publish = Racer(lambda: story_publish(story_id=story.pk))
    publish.name = "publish"
    form_save = race_a_form_save(publish, content_read, go_on, article_id=story.pk)

    assert (publish.error, form_save.error) == (None, None)
    assert Article.objects.get(pk=story.pk).body == "Form body."


def test_publish_now_beside_an_article_form_save_is_no_deadlock(monkeypatch):
    """ "Publish now" of a scheduled article saves its new date: it locks the row, then
    its save the address; an Article form's save took the address, then the row. Every
    save now locks the row first (Article.save), and both land."""
    from publishing.services import operator
    from work import lease

    article = article_create(
        title="Tomorrow",
        body="Text.",
        slug="tomorrow",
        publish_at=timezone.now() + timedelta(days=1),
    )
    row_locked, go_on = threading.Event(), threading.Event()

    db_now = lease.db_now

    def now_held_in_publish_now():  # it reads the database's clock once it holds the row
        if threading.current_thread().name == "publish-now":
            row_locked.set()
            go_on.wait(30)
        return db_now()

    monkeypatch.setattr(lease, "db_now", now_held_in_publish_now)
    publish_now = Racer(lambda: operator.article_publish_now(article_id=article.pk))
    publish_now.name = "publish-now"
    form_save = race_a_form_save(publish_now, row_locked, go_on, article_id=article.pk)

    assert (publish_now.error, form_save.error) == (None, None)
    assert Article.objects.get(pk=article.pk).body == "Form body."


def test_an_article_made_at_the_address_of_a_draft_being_restored_waits_and_is_refused():
    """A restore from the trash takes the address's lock, as every save of an address
    does: an article made at it meanwhile waits, then finds the draft keeps it (a
    review's finding: both went through, and the draft could never be published)."""
    story = story_save(title="Restored", body="Back.", slug="restored-here")
    story_trash(story_id=story.pk)

    (restored, renamed), racer = race_while_held(
        lambda: story_untrash(story_id=story.pk),
        lambda: article_create(title="Newcomer", slug="restored-here", body="Mine."),
    )

    assert (restored.slug, renamed) == ("restored-here", False)
    assert isinstance(racer.error, ValidationError), repr(racer.error)
    assert not Article.objects.filter(slug="restored-here").exists()


def test_an_article_without_a_slug_whose_derived_one_a_draft_takes_meanwhile_moves_on():
    """The API validates (full_clean makes the slug from the title) before it saves: a
    draft saved at that slug in between made the save refuse the writer, who gave no
    slug, over the one made for them (a review's finding). It moves on, as a slug made
    by the save itself does."""
    made, racer = race_while_held(
        lambda: story_save(title="Draft first", body="Mine.", slug="made-from-title"),
        lambda: article_create(title="Made from title", body="Text."),
    )

    assert made.slug == "made-from-title"
    assert racer.error is None, repr(racer.error)
    assert racer.result.slug == "made-from-title-2"
