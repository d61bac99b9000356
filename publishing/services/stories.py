"""What a writer does with a story (issue 22): save a draft, publish it, withdraw it.

The draft is the `Story`; the pipeline knows only the `Article`. "Publish" copies the
story's text to the Article of the same id, through `article_create` or
`article_update`, so the pipeline sees an ordinary save: a pending row, dispatched
after the commit (docs/design.md, "Drafts"). "Withdraw" deletes that Article row, as a
delete does (its page and listings go, by the same signal and task), marked
`withdrawn` so the targets say so, and the story is a draft again, its slug kept.
Every save that changes the draft is a `Revision`; any two can be diffed, and an old
one restored as the current draft.
"""

from __future__ import annotations

import difflib
import logging
import secrets
from collections.abc import Iterable
from datetime import datetime, timedelta

from django.conf import settings
from django.core import signing
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from publishing.exceptions import NotOnTheBlog, StoryConflict
from publishing.models import (
    CONTENT_FIELDS,
    Article,
    Revision,
    Story,
    StoryState,
    key_of,
    slug_from_title,
)
from publishing.services.authoring import article_create, article_update
from publishing.services.operator import article_requeue
from work.db import address_lock

logger = logging.getLogger(__name__)

# What a story's draft holds of an article's content.
DRAFT_FIELDS = CONTENT_FIELDS  # title, slug, body, publish_at and the reader fields


def _next_article_id() -> int:
    """An id from the Article table's own sequence, so that a story's id is never an
    article's (an article written in the Article form takes the next one)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT nextval(pg_get_serial_sequence('publishing_article', 'id'))")
            return int(cursor.fetchone()[0])
        # SQLite: the table is AUTOINCREMENT, so a new row's id is above both the
        # largest id and sqlite_sequence's; raising the latter reserves one. A write, so
        # SQLite's one writer at a time makes it atomic.
        cursor.execute(
            "INSERT INTO sqlite_sequence (name, seq) SELECT 'publishing_article', 0 "
            "WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'publishing_article')"
        )
        cursor.execute(
            "UPDATE sqlite_sequence SET seq = 1 + MAX(seq, "
            "(SELECT COALESCE(MAX(id), 0) FROM publishing_article), "
            "(SELECT COALESCE(MAX(id), 0) FROM publishing_story)) "
            "WHERE name = 'publishing_article' RETURNING seq"
        )
        return int(cursor.fetchone()[0])


def _new_story_id() -> int:
    for _try in range(100):
        story_id = _next_article_id()
        # A sequence reset by hand (or a restore) could hand out a taken id: skip it.
        if not (
            Article.objects.filter(pk=story_id).exists()
            or Story.objects.filter(pk=story_id).exists()
        ):
            return story_id
    raise RuntimeError("the article id sequence hands out taken ids; reset it above max(id)")


def _check_slug_free(story: Story) -> None:
    """No other article or story has this slug up to case, or its live page there."""
    key = story.slug_key
    articles = Article.objects.exclude(pk=story.pk).filter(
        Q(slug_key=key) | Q(published_slug_key=key)
    )
    if articles.exists() or Story.objects.exclude(pk=story.pk).filter(slug_key=key).exists():
        raise _slug_taken()


def _slug_taken() -> ValidationError:
    return ValidationError(
        {"slug": "Another article or draft has this address (slug); choose another."},
        code="unique",
    )


def _store(story: Story, *, derived: bool) -> None:
    """Save the story. Two saves of one address at once both pass _check_slug_free,
    and the unique index decides: a derived address moves on to a free one (as an
    article's does, Article._save_new), a given one is refused by field."""
    for _try in range(5):
        try:
            with transaction.atomic():
                story.save()
            return
        except IntegrityError:
            if not Story.objects.exclude(pk=story.pk).filter(slug_key=story.slug_key).exists():
                raise
            if not derived:
                raise _slug_taken() from None
            story.slug = _free_slug(story)
            story.slug_key = key_of(story.slug)
    raise ValidationError({"slug": "Could not find a free slug; please choose one."})


def _free_slug(story: Story) -> str:
    """A slug made from the title, free among articles and stories (Article's rule)."""
    probe = Article(pk=story.pk, title=story.title)
    return probe._unique_slug(slug_from_title(story.title))


def _content(story: Story | Revision) -> dict:
    return {name: getattr(story, name) for name in DRAFT_FIELDS}


def _same(live: dict, draft: dict) -> bool:
    """The article's content is the draft's; a draft without a date means "when
    published", so any date matches it."""
    if draft["publish_at"] is None:
        live = {**live, "publish_at": None}
    return live == draft


def _record(story: Story, *, saved_by: str, note: str = "") -> Revision:
    return Revision.objects.create(
        story=story, number=story.version, saved_by=saved_by, note=note, **_content(story)
    )


def story_save(
    *,
    story_id: int | None = None,
    title: str,
    body: str = "",
    slug: str = "",
    publish_at: datetime | None = None,
    description: str = "",
    language: str = "",
    byline: str = "",
    tags: list[str] | str | None = None,
    saved_by: str = "",
    if_version: int | None = None,
    note: str = "",
    autosave: bool = False,
) -> Story:
    """Save the draft (a new story when `story_id` is None): nothing is published.

    ValidationError (nothing stored) for content that could not be published either;
    StoryConflict when `if_version` is given and the story was saved since (another
    tab, another writer) with other text than this. A save that changes nothing keeps
    the version. An `autosave` (the desk's, as the writer types) is folded into the
    version before it when that one is the same writer's autosave of the last
    AUTOSAVE_FOLD_SECONDS, not published: a new version, one revision."""
    with transaction.atomic():
        if story_id is None:
            story = Story(id=_new_story_id())
        else:
            story = Story.objects.select_for_update().get(pk=story_id)
            if story.trashed_at is not None:
                raise ValidationError("This story is in the trash; restore it first.")
        before = _content(story) if story_id is not None else None
        story.title, story.body, story.slug, story.publish_at = title, body, slug, publish_at
        story.description, story.language, story.byline = description, language, byline
        story.tags = tags or []
        story.clean()
        story.full_clean(exclude=["slug_key"], validate_unique=False)
        derived = not story.slug
        if derived:
            story.slug = _free_slug(story)
        story.slug_key = key_of(story.slug)
        address_lock(story.slug_key)  # an article's save of this address waits for ours
        try:
            _check_slug_free(story)
        except ValidationError:
            if not derived:
                raise
            # Taken by a save this one waited for: a derived address moves on.
            story.slug = _free_slug(story)
            story.slug_key = key_of(story.slug)
            address_lock(story.slug_key)
            _check_slug_free(story)
        if before == _content(story):
            # Nothing to save: also when another save stored this very text since (the
            # tab's own autosave, in flight when its form was sent).
            return story
        if if_version is not None and story.version != if_version:
            raise StoryConflict(current=story.version, given=if_version)
        story.version += 1
        _store(story, derived=derived)
        if autosave and before is not None and _fold_autosave(story, saved_by=saved_by):
            return story
        note = note or ("created" if before is None else AUTOSAVED if autosave else "")
        _record(story, saved_by=saved_by, note=note)
    return story


AUTOSAVED = "autosaved"
# The same writer's autosaves within this many seconds of the first of them are one
# version: each autosave was a revision of the whole text (a review's finding: 61 of a
# 200 KB draft in two minutes, 12 MB; a writer's hour of 1 MiB, 1.8 GB kept 90 days),
# and the version published last fell out of the 50 the history shows. So one version a
# ten minutes of typing, besides every explicit save, publish and restore.
AUTOSAVE_FOLD_SECONDS = 600


def _fold_autosave(story: Story, *, saved_by: str) -> bool:
    """The story's previous version, when it is the same writer's autosave begun within
    AUTOSAVE_FOLD_SECONDS and not the version published last, becomes this one (its
    number and its text). Its time stays the one it began at: moved at each fold, the
    window never closed while the writer typed, and hours were one version (a review's
    finding)."""
    previous = story.version - 1
    return bool(
        Revision.objects.filter(
            story=story,
            number=previous,
            note=AUTOSAVED,
            saved_by=saved_by,
            saved_at__gte=timezone.now() - timedelta(seconds=AUTOSAVE_FOLD_SECONDS),
        )
        .exclude(number=story.published_version)
        .update(number=story.version, **_content(story))
    )


def story_of_article(article: Article) -> Story:
    """The article's story, made from the article's content when it has none (an
    article written in the Article form, or before stories); the one another request
    made meanwhile when both make it at once."""
    story = Story.objects.filter(pk=article.pk).first()
    if story is not None:
        return story
    story = Story(
        id=article.pk,
        state=StoryState.PUBLISHED,
        version=1,
        published_version=1,
        first_publish_at=article.published_publish_at or _went_out(article.publish_at),
        slug_key=key_of(article.slug),
        **{name: getattr(article, name) for name in DRAFT_FIELDS},
    )
    try:
        with transaction.atomic():
            story.save(force_insert=True)
            _record(story, saved_by="", note="from the article")
    except IntegrityError:
        # Another request made it at the same moment (a withdraw, a delete, a publish
        # of the same article): theirs is the story.
        made = Story.objects.filter(pk=article.pk).first()
        if made is None:
            raise
        return made
    return story


def story_publish(*, story_id: int) -> Article:
    """Make the draft the article's content: the Article of the same id is made, or
    updated, through the authoring services, so the pipeline publishes it as any save
    (a dead article whose content is the draft's already is requeued). An undated
    draft keeps the date of its first publish (_date_of_undated). A publish of the
    content that is live already writes nothing and sends nothing. ValidationError
    (nothing changed) when the content cannot be published."""
    with transaction.atomic():
        story = Story.objects.select_for_update().get(pk=story_id)
        if story.trashed_at is not None:
            raise ValidationError("This story is in the trash; restore it first.")
        article = Article.objects.select_for_update().filter(pk=story.pk).first()
        if article is not None and _edited_elsewhere(story, article):
            # Not undone silently: the draft takes it, or it is kept as a revision.
            _take_in(story, article, saved_by="", when="edited elsewhere")
        content = _content(story)
        if content["publish_at"] is None:
            content["publish_at"] = _date_of_undated(story, article)
        if article is None:
            article = article_create(article_id=story.pk, **content)
        else:
            if {name: getattr(article, name) for name in DRAFT_FIELDS} != content:
                article_update(article=article, **content)
            # The same content, dead: "Publish" is the writer asking again.
            if article_requeue(article_id=article.pk):
                article.refresh_from_db()
        Story.objects.filter(pk=story.pk).update(
            state=StoryState.PUBLISHED,
            published_version=story.version,
            # Only a date it goes out at now: a schedule is no first publish (withdrawn
            # before it, or published undated instead, the draft took that date later:
            # a review's finding). A scheduled one's is kept as it leaves the blog.
            first_publish_at=story.first_publish_at or _went_out(article.publish_at),
            updated_at=timezone.now(),
        )
    logger.info("story %s published (version %s)", story.pk, story.version)
    return article


def _went_out(when: datetime | None) -> datetime | None:
    return when if when is not None and when <= timezone.now() else None


def _keep_first_publish(story_id: int, article: Article) -> None:
    """As the article leaves the blog (a withdraw, the trash): the date it was live
    with, when its story has none yet (its first publish was scheduled)."""
    if article.published_publish_at is not None:
        Story.objects.filter(pk=story_id, first_publish_at__isnull=True).update(
            first_publish_at=article.published_publish_at
        )


def story_undated_date(*, story_id: int | None) -> datetime:
    """The date the story, undated, would be published with now (_date_of_undated):
    what its previews show, so a draft published before is previewed at the date it
    keeps, not today's. Now for no story (a new one, not saved yet)."""
    if story_id is None:
        return timezone.now()
    story = Story.objects.filter(pk=story_id).only("first_publish_at").first()
    article = Article.objects.filter(pk=story_id).only("publish_at").first()
    return _date_of_undated(story, article)


def _date_of_undated(story: Story | None, article: Article | None) -> datetime:
    """The date an undated draft is published with: the one it has had since its first
    publish (its article's, which an edit in the Article form may have changed; after
    a withdraw or the trash, the one recorded then), so publishing it again (an edit, a
    second click) never moves it to the top of the front page and the feeds, as Ghost
    and WordPress keep a post's date. Now at its first publish, and while that date is
    still ahead (scheduled, never out: "when published" is now)."""
    now = timezone.now()
    kept: datetime | None = None
    if article is not None:
        kept = article.publish_at
    elif story is not None:
        kept = story.first_publish_at
    return kept if kept is not None and kept <= now else now


def _take_in(story: Story, article: Article, *, saved_by: str, when: str) -> None:
    """Keep the article's content when it is not the draft's (an edit made in the
    Article form or the API): it becomes the draft unless the draft has unpublished
    changes, else it is a revision with the draft again on top of it."""
    live = {name: getattr(article, name) for name in DRAFT_FIELDS}
    if _same(live, _content(story)):
        return
    if story.has_unpublished_changes:
        # Three ways, field by field, from the version published last: what only the
        # article changed (an editor's Publish now, which moved its date; a title fixed
        # in the API) comes into the draft, or the writer's next publish undid it (a
        # scheduled article pulled forward went back under its embargo with a typo fix:
        # a review's finding). Where both changed a field, the draft's goes out and the
        # article's is kept as a version.
        theirs = _changed_only_there(story, live, article.published_publish_at)
        if not _same(live, {**_content(story), **theirs}):
            story.version += 1
            Revision.objects.create(
                story=story,
                number=story.version,
                saved_by=saved_by,
                note=f"the article as {when}",
                **live,
            )
        for name, value in theirs.items():
            setattr(story, name, value)
        story.slug_key = key_of(story.slug)
        story.version += 1
        taken = f" with the article's {', '.join(theirs)}" if theirs else ""
        _record(story, saved_by=saved_by, note=f"the draft{taken}, kept when {when}")
    else:
        for name, value in live.items():
            setattr(story, name, value)
        story.slug_key = key_of(story.slug)
        story.version += 1
        _record(story, saved_by=saved_by, note=f"the article as {when}")
    story.save()


def _changed_only_there(story: Story, live: dict, live_date: datetime | None) -> dict:
    """The fields the article changed since the version published last and the draft
    did not. An undated draft's date is "when published", which the article's date is
    once it went out: only a date moved since (`live_date`, the one it is live with: an
    editor's new schedule) is a change (a review's finding: a writer's typo fix undid
    it)."""
    published = story.revisions.filter(number=story.published_version).first()
    if published is None:
        return {}
    base, ours = _content(published), _content(story)
    undated = ours["publish_at"] is None and base["publish_at"] is None
    return {
        name: live[name]
        for name in DRAFT_FIELDS
        if ours[name] == base[name]
        and live[name] != base[name]
        and not (name == "publish_at" and undated and live[name] == live_date)
    }


def _edited_elsewhere(story: Story, article: Article) -> bool:
    """The article's content is not what the story last published: it was edited in
    the Article form or the API since (unknown when that version was pruned)."""
    published = story.revisions.filter(number=story.published_version).first()
    if published is None:
        return False
    base = _content(published)
    if not _same({name: getattr(article, name) for name in DRAFT_FIELDS}, base):
        return True
    # Undated, any date is "when published", but not one moved since it went out (an
    # editor's new schedule: _changed_only_there).
    went_out = article.published_publish_at
    return base["publish_at"] is None and went_out is not None and article.publish_at != went_out


def story_withdraw(*, article_id: int, saved_by: str = "") -> Story:
    """Take the article off the blog without losing it: its Article row is deleted as
    a delete does it (page, listings, feeds, sitemap; `article.withdrawn` on the
    webhook), and its story is a draft again, with its slug. The article's content is
    kept as a revision when the story's draft differs from it (an edit made in the
    Article form); it becomes the draft unless the draft has unpublished changes.
    NotOnTheBlog when there is no article (also when another withdraw or a delete took
    it while this one waited for it)."""
    with transaction.atomic():
        # The story's row first, then the article's, as story_publish and story_trash
        # take them: two of them at once wait for each other instead of deadlocking.
        Story.objects.select_for_update().filter(pk=article_id).first()
        article = Article.objects.select_for_update().filter(pk=article_id).first()
        if article is None:  # never published, or withdrawn or deleted meanwhile
            raise NotOnTheBlog()
        story = story_of_article(article)
        story = Story.objects.select_for_update().get(pk=story.pk)
        _take_in(story, article, saved_by=saved_by, when="withdrawn")
        # Reserve the address the readers knew, too: the story keeps the slug it had.
        Story.objects.filter(pk=story.pk).update(
            state=StoryState.DRAFT, published_version=story.version, updated_at=timezone.now()
        )
        _keep_publish_log(story, article)
        _keep_first_publish(story.pk, article)
        article.deleted_as = "withdrawn"
        article.delete()
    logger.info("article %s withdrawn: its story is a draft again", article_id)
    story.refresh_from_db()
    return story


# Attempts a story keeps from the articles it was (withdrawn), the newest.
PUBLISH_LOG_KEPT = 200


def _keep_publish_log(story: Story, article: Article) -> None:
    """The article's attempts, into its story's history, before its row (and theirs)
    goes: how and when it was published, and what failed on the way."""
    attempts = article.publish_attempts.order_by("started_at", "id").values(
        "number", "started_at", "finished_at", "outcome", "error", "worker"
    )
    kept = [
        {
            **attempt,
            "started_at": attempt["started_at"].isoformat(),
            "finished_at": attempt["finished_at"] and attempt["finished_at"].isoformat(),
            "error": attempt["error"][:500],
        }
        for attempt in attempts
    ]
    log = [*Story.objects.values_list("publish_log", flat=True).get(pk=story.pk), *kept]
    Story.objects.filter(pk=story.pk).update(publish_log=log[-PUBLISH_LOG_KEPT:])


def story_restore(*, story_id: int, number: int, saved_by: str = "") -> Story:
    """Make revision `number` the current draft (a new revision, noted as a restore);
    publishing it is then a normal publish."""
    revision = Revision.objects.get(story_id=story_id, number=number)
    story = Story.objects.get(pk=story_id)
    return story_save(
        story_id=story_id,
        saved_by=saved_by,
        note=f"restored from version {number}",
        # A restore keeps the address the story has: the old slug may be another's now.
        **{**{name: getattr(revision, name) for name in DRAFT_FIELDS}, "slug": story.slug},
    )


# The most lines a body may have for the diff to compare it line by line: difflib's
# matching grows with the product of the two versions' lines (two bodies of 100,000
# shuffled lines, 0.5 MB each, took 14.7 s of the web process and made 17.8 MB of HTML).
# 10,000 was the first bound, and a review of it found bodies of about 120 distinct
# lines, each repeated under difflib's 1 % "popular" threshold (a table, code), at
# 5.3 s for 10,000 lines; the same shape takes 0.06 s at 2,000, 0.8 s at 5,000.
DIFF_MAX_LINES = 2_000


def revision_diff(old: Revision | Story, new: Revision | Story) -> list[tuple[str, str]]:
    """The lines of a unified diff from `old` to `new` (title, slug, date, then the body),
    each as (kind, text): kind " " same, "-" only in old, "+" only in new, "@" a hunk's
    place; of what is besides the body only, when the bodies are too large to compare
    (diff_too_large). Pure: the desk renders it."""
    if diff_too_large(old, new):
        return diff_lines(_head(old), _head(new))
    return diff_lines(_head(old) + old.body.split("\n"), _head(new) + new.body.split("\n"))


def diff_too_large(old: Revision | Story, new: Revision | Story) -> bool:
    """Whether either body has more than DIFF_MAX_LINES lines."""
    return max(body_lines(old.body), body_lines(new.body)) > DIFF_MAX_LINES


def body_lines(body: str) -> int:
    return body.count("\n") + 1


def _head(version: Revision | Story) -> list[str]:
    """What readers see besides the body, as the diff reads it (the reader fields too: a
    re-tag or a new byline is a change), and the line that parts it from the body."""
    when = version.publish_at.isoformat() if version.publish_at else "(when published)"
    return [
        f"Title: {version.title}",
        f"Slug: {version.slug}",
        f"Date: {when}",
        f"Description: {version.description}",
        f"Language: {version.language}",
        f"Byline: {version.byline}",
        f"Tags: {', '.join(version.tags or [])}",
        "",
    ]


def diff_lines(old: list[str], new: list[str], *, context: int = 3) -> list[tuple[str, str]]:
    lines = difflib.unified_diff(old, new, lineterm="", n=context)
    out = []
    for line in lines:
        if line.startswith(("---", "+++")):
            continue
        out.append(("@", line) if line.startswith("@@") else (line[:1], line[1:]))
    return out


# --- shareable previews ----------------------------------------------------------------

PREVIEW_SALT = "blogpublish.story-preview"


def story_share(*, story_id: int) -> str:
    """A new preview link's token for the story (the links given out before stop
    working), valid for STORY_PREVIEW_SECONDS."""
    key = secrets.token_hex(16)
    expires = timezone.now() + timedelta(seconds=settings.STORY_PREVIEW_SECONDS)
    Story.objects.filter(pk=story_id).update(preview_key=key, preview_expires_at=expires)
    return _token(story_id, key)


def _token(story_id: int, key: str) -> str:
    signer = signing.Signer(salt=PREVIEW_SALT)
    return signer.sign_object({"id": story_id, "k": key}, compress=True)


def story_preview_token(story: Story) -> str | None:
    """The token of the story's preview link while it works, else None."""
    if not story.preview_key or not story.preview_expires_at:
        return None
    if story.preview_expires_at <= timezone.now():
        return None
    return _token(story.pk, story.preview_key)


def story_unshare(*, story_id: int) -> bool:
    """Revoke the story's preview links; False when it had none."""
    return bool(
        Story.objects.filter(pk=story_id)
        .exclude(preview_key="")
        .update(preview_key="", preview_expires_at=None)
    )


def story_by_preview_token(token: str) -> Story | None:
    """The story a preview token shows, or None: forged, revoked, expired, or in the
    trash (all look the same to whoever holds the link)."""
    try:
        data = signing.Signer(salt=PREVIEW_SALT).unsign_object(token)
        story_id, key = int(data["id"]), str(data["k"])
    except (signing.BadSignature, KeyError, TypeError, ValueError):
        return None
    return Story.objects.filter(
        pk=story_id,
        preview_key=key,
        preview_expires_at__gt=timezone.now(),
        trashed_at__isnull=True,
    ).first()


# --- the trash -------------------------------------------------------------------------


def _trash_key(story: Story) -> str:
    """A trashed story's key frees its slug (as WordPress frees a trashed post's): no
    other article or story compares equal to `<key>#trashed-<id>`."""
    return f"{key_of(story.slug)}#trashed-{story.pk}"


def _to_trash(story: Story) -> None:
    Story.objects.filter(pk=story.pk).update(
        trashed_at=timezone.now(),
        state=StoryState.DRAFT,
        slug_key=_trash_key(story),
        # A shared preview of a trashed story says "not published yet"; the link goes.
        preview_key="",
        preview_expires_at=None,
        updated_at=timezone.now(),
    )


def story_trash(*, story_id: int) -> Story:
    """Move the story to the trash for STORY_TRASH_DAYS: its Article, if it has one, is
    deleted as any delete is (its page and listings go, `article.deleted` once)."""
    with transaction.atomic():
        story = Story.objects.select_for_update().get(pk=story_id)
        if story.trashed_at is None:
            _to_trash(story)
            article = Article.objects.select_for_update().filter(pk=story_id).first()
            if article is not None:
                article.delete()  # the signal finds the story in the trash already
    logger.info("story %s moved to the trash", story_id)
    story.refresh_from_db()
    return story


def article_to_trash(*, article: Article) -> None:
    """Inside an article's delete (publishing.signals): its story, made from the
    article's content when it has none, goes to the trash. A withdraw is no delete."""
    if article.deleted_as != "deleted":
        return
    story = Story.objects.select_for_update().filter(pk=article.pk).first()
    if story is None:
        story = story_of_article(article)
    _keep_first_publish(story.pk, article)
    if story.trashed_at is None:
        _to_trash(story)


def story_untrash(*, story_id: int) -> tuple[Story, bool] | None:
    """Back from the trash as a draft: (story, whether its slug had to change, since
    another article or story took it meanwhile); None when it is not in the trash
    (never was, or restored meanwhile): nothing restored."""
    with transaction.atomic():
        story = Story.objects.select_for_update().get(pk=story_id)
        if story.trashed_at is None:
            return None
        story.slug_key = key_of(story.slug)
        # As every save of an address: an article created at it meanwhile waits for
        # this commit and finds it taken, or this finds the article (a review's finding:
        # both were let through, and the draft could never be published).
        address_lock(story.slug_key)
        try:
            _check_slug_free(story)
            renamed = False
        except ValidationError:
            story.slug = Article(pk=story.pk, title=story.title)._unique_slug(story.slug)
            story.slug_key = key_of(story.slug)
            address_lock(story.slug_key)
            renamed = True
        story.trashed_at = None
        story.state = StoryState.DRAFT
        story.save(update_fields=["slug", "slug_key", "trashed_at", "state", "updated_at"])
    return story, renamed


def _purge(stories: QuerySet[Story], *, limit: int | None = None) -> list[int]:
    """Delete for good those of `stories` that are in the trash; their ids. Locked
    while still in the trash, so a restore from the trash either went first (then the
    story is not picked) or waits and finds it gone; one being restored right now is
    skipped."""
    with transaction.atomic():
        trashed = stories.filter(trashed_at__isnull=False).select_for_update(skip_locked=True)
        ids = list(trashed.order_by("pk").values_list("pk", flat=True)[:limit])
        Story.objects.filter(pk__in=ids).delete()
    return ids


def story_delete(*, story_id: int) -> bool:
    """A delete (the admin's, one or selected): a story in the trash is deleted for good,
    as "Delete forever" does and as WordPress's delete in its trash does; any other goes
    to the trash (story_trash). True when it was deleted for good (or is gone already:
    purged meanwhile)."""
    if _purge(Story.objects.filter(pk=story_id)):
        return True
    try:
        # Not in the trash (or restored from it since the delete was confirmed): as asked.
        story_trash(story_id=story_id)
    except Story.DoesNotExist:
        return True
    return False


def stories_purge(*, story_ids: Iterable[int]) -> int:
    """ "Delete forever" in the trash's list: those of these stories that are in the
    trash now (the others are left alone); how many."""
    return len(_purge(Story.objects.filter(pk__in=list(story_ids))))


def stories_tidy(*, limit: int) -> tuple[int, int]:
    """The clock's part (the catch-up runs it): purge what has been in the trash for
    STORY_TRASH_DAYS (sending nothing: the delete was announced when it was trashed),
    and prune revisions older than STORY_REVISIONS_KEEP_DAYS beyond each story's
    newest STORY_REVISIONS_KEEP_COUNT. At most `limit` of each per run. Returns
    (stories purged, revisions pruned)."""
    now = timezone.now()
    purge_before = now - timedelta(days=settings.STORY_TRASH_DAYS)
    stale = _purge(Story.objects.filter(trashed_at__lt=purge_before), limit=limit)
    keep = settings.STORY_REVISIONS_KEEP_COUNT
    old = Revision.objects.filter(
        saved_at__lt=now - timedelta(days=settings.STORY_REVISIONS_KEEP_DAYS),
        number__lte=F("story__version") - keep,
    ).exclude(
        # The version published last is what a publish compares the article with, to
        # keep an edit made since in the Article form or the API: pruned, that edit was
        # undone by the next publish, kept nowhere (a review's finding).
        number=F("story__published_version")
    )
    pruned = list(old.values_list("pk", flat=True)[:limit])
    Revision.objects.filter(pk__in=pruned).delete()
    if stale or pruned:
        logger.info(
            "stories: %d purged from the trash, %d old revisions pruned", *map(len, (stale, pruned))
        )
    return len(stale), len(pruned)
