"""`manage.py import_articles` and `export_articles` against a real worker, Redis and
database: the summary and the exit status, idempotency, edits, the round trip; the
rows are published by batch tasks, never one message per article."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import threading
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from blogpublish.models import PageNote
from publishing.models import (
    READER_FIELDS,
    Article,
    ArticleStatus,
    AttemptOutcome,
    PublishAttempt,
    Story,
    content_hash_of,
)
from publishing.services import story_save
from tests.support.chaos import journal_entries
from tests.support.import_files import post, run_import, write
from tests.support.settling import wait_settled
from tests.support.site import moved_pages
from tests.support.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def published(slugs: list[str]) -> bool:
    rows = Article.objects.filter(slug__in=slugs, status=ArticleStatus.PUBLISHED)
    return rows.count() == len(slugs)


@pytest.fixture
def blog(tmp_path) -> Path:
    """A folder of unique slugs (a prefix per test, so journal lines never mix)."""
    return tmp_path / f"blog-{uuid.uuid4().hex[:6]}"


def test_import_of_good_bad_draft_and_duplicate_files(worker, blog, sent_tasks):
    p = blog.name
    write(
        blog,
        f"2024-03-01-{p}-hello.md",
        post("Hello", date="2024-03-01 10:00:00 +0100", tags="[a]", layout="post"),
    )
    write(blog, "hugo/index.md", post("A Hugo bundle", slug=f"{p}-hugo", date="2024-03-02"))
    write(blog, "cn.md", post("你好，世界", "中文正文。", slug=f"{p}-你好"))
    write(blog, "draft.md", post("Not yet", slug=f"{p}-draft", draft="true"))
    write(blog, "no-title.md", f"---\nslug: {p}-nt\n---\nbody\n")
    write(blog, "bad-yaml.md", "---\ntitle: [unclosed\n---\nbody\n")
    write(blog, "reserved.md", post("Admin", slug="admin"))
    write(blog, "bad-slug.md", post("Slash", slug="a/b"))
    write(blog, "huge.md", post("Huge", "x" * (2**20 + 1), slug=f"{p}-huge"))
    write(blog, "dup-1.md", post("One", slug=f"{p}-dup"))
    write(blog, "sub/dup-2.md", post("Two", slug=f"{p}-DUP"))

    out, err, code = run_import(str(blog))

    assert code == 1
    assert out.splitlines()[-1] == (
        "import_articles: created 4, updated 0, unchanged 0, skipped 0, failed 7"
    )
    assert "ignored front matter keys: layout" in out
    for name, reason in [
        ("no-title.md", "no title"),
        ("bad-yaml.md", "not valid YAML"),
        ("reserved.md", "is used by the site itself"),
        ("bad-slug.md", "slug: Enter a valid"),
        ("huge.md", "the limit is 1,048,576 bytes"),
        ("dup-1.md", "is also the slug of"),
        ("sub/dup-2.md", "is also the slug of"),
    ]:
        [line] = [line for line in err.splitlines() if line.startswith(f"failed: {blog / name}:")]
        assert reason in line, line
    good = [f"{p}-hello", f"{p}-hugo", f"{p}-你好"]
    assert set(Article.objects.filter(slug__startswith=p).values_list("slug", flat=True)) == set(
        good
    )
    # The draft is kept as a story's draft, and nothing publishes it (issue 22).
    draft = Story.objects.get(slug=f"{p}-draft")
    assert (draft.title, draft.state, draft.body) == ("Not yet", "draft", "Some *Markdown*.")
    hello = Article.objects.get(slug=f"{p}-hello")
    assert hello.publish_at.isoformat() == "2024-03-01T09:00:00+00:00"
    assert Article.objects.get(slug=f"{p}-hugo").publish_at.isoformat() == (
        "2024-03-02T00:00:00+00:00"
    )
    wait_for(lambda: published(good), timeout=60, what="the imported articles to be published")
    assert sent_tasks == []  # batches, not one publish_article message per article
    assert set(
        PublishAttempt.objects.filter(article__slug__in=good).values_list("task_id", flat=True)
    ) != {""}


def test_reimport_changes_nothing_and_an_edited_file_republishes_once(worker, blog):
    p = blog.name
    for i in range(12):
        write(blog, f"{p}-{i}.md", post(f"Post {i}", f"Body {i}."))
    slugs = [f"{p}-{i}" for i in range(12)]
    assert run_import(str(blog))[2] == 0
    wait_for(lambda: published(slugs), timeout=60, what="12 articles to be published")
    wait_settled()
    attempts = PublishAttempt.objects.filter(article__slug__startswith=p).count()
    assert attempts == 12

    out, _err, code = run_import(str(blog))

    assert code == 0
    assert out.splitlines()[-1] == (
        "import_articles: created 0, updated 0, unchanged 12, skipped 0, failed 0"
    )
    wait_settled()
    assert PublishAttempt.objects.filter(article__slug__startswith=p).count() == attempts
    assert all(len(journal_entries(slug)) == 1 for slug in slugs)

    write(blog, f"{p}-3.md", post("Post 3, edited", "Body 3, edited."))
    out, _err, code = run_import(str(blog))

    assert code == 0
    assert out.splitlines()[-1] == (
        "import_articles: created 0, updated 1, unchanged 11, skipped 0, failed 0"
    )
    edited = Article.objects.get(slug=f"{p}-3")
    wait_for(
        lambda: Article.objects.filter(
            pk=edited.pk, status=ArticleStatus.PUBLISHED, published_title="Post 3, edited"
        ).exists(),
        timeout=60,
        what="the edit to be published",
    )
    wait_settled()
    assert PublishAttempt.objects.filter(article__slug__startswith=p).count() == attempts + 1
    assert [e[1] for e in journal_entries(f"{p}-3")][-1] == Article.objects.get(
        pk=edited.pk
    ).content_hash
    assert len(journal_entries(f"{p}-3")) == 2
    assert edited.publish_attempts.filter(outcome=AttemptOutcome.OK).count() == 2


def test_dry_run_writes_and_sends_nothing(blog, transactional_db, sent_tasks):
    p = blog.name
    write(blog, "a.md", post("A", slug=f"{p}-a"))
    write(blog, "b.md", post("B", slug=f"{p}-b"))

    out, _err, code = run_import("--dry-run", str(blog))

    assert code == 0
    assert f"would create: {blog / 'a.md'} ({p}-a)" in out
    assert out.splitlines()[-1].endswith("created 2, updated 0, unchanged 0, skipped 0, failed 0")
    assert not Article.objects.filter(slug__startswith=p).exists()
    assert sent_tasks == []


def test_export_then_import_into_an_empty_database_gives_the_same_articles(
    worker, make_article, tmp_path
):
    make_article(title="Plain", body="Some *Markdown*\n\n- a\n- b")
    make_article(title="你好，世界", slug="你好-世界", body="中文正文。\n\n<script>x</script>")
    make_article(title="yes", body="A title YAML would read as a boolean.")
    make_article(title="Quotes: 'single' \"double\" # hash", body="---\n\nA rule first.")
    # Blank lines before the text and whitespace after it (an API client's file, a
    # textarea's): stored without them, as an imported file's are.
    make_article(title="Spaced", body="  \n\n    code first\n\ntext  \n\n\n")
    make_article(
        title="Later", body="Scheduled.", publish_at=datetime(2031, 5, 1, 10, 30, tzinfo=UTC)
    )
    # The reader fields (issue 21) go out and come back too.
    make_article(
        title="Bylined",
        byline="王小明",
        description="One line: with a colon, # and 'quotes'.",
        language="zh-Hans",
        tags=["数据库", "yes", "2024", "a, b"],
    )
    fields = ("title", "slug", "body", "publish_at", *READER_FIELDS, "content_hash")
    before = sorted(Article.objects.values_list(*fields))
    folder = tmp_path / "export"

    call_command("export_articles", str(folder), stdout=io.StringIO())
    out, err, code = run_import(str(folder))  # over the same articles: nothing changes

    assert code == 0, err
    assert out.splitlines()[-1].startswith(
        f"import_articles: created 0, updated 0, unchanged {len(before)}"
    )
    Article.objects.all().delete()
    out, err, code = run_import(str(folder))

    assert code == 0, err
    assert out.splitlines()[-1].startswith(f"import_articles: created {len(before)}, updated 0")
    assert sorted(Article.objects.values_list(*fields)) == before


@pytest.mark.parametrize("draft", [False, True], ids=["article", "draft"])
def test_a_date_whose_zone_has_an_unknown_name_is_imported_as_utc_and_said(blog, draft):
    meta = {"draft": "true"} if draft else {}
    write(blog, "moscow.md", post("Moscow", date="2020-05-01 10:00:00 MSK", **meta))

    out, err, code = run_import("--dry-run", str(blog))

    assert code == 0, err
    assert f"note: {blog / 'moscow.md'}: date '2020-05-01 10:00:00 MSK': its zone" in out
    assert "read as UTC" in out


def test_a_draft_files_aliases_are_said_not_kept(blog):
    write(blog, "later.md", post("Later", draft="true", aliases="[/old-later/]"))

    out, err, code = run_import("--dry-run", str(blog))

    assert code == 0, err
    assert "later.md: old-later (a draft has no page)" in out


def test_an_undated_draft_file_imported_again_keeps_the_date_set_since(blog):
    """An article keeps its own date when its file gives none; a draft does too (a
    review's finding: importing the same undated file again undid a date the writer had
    set in the desk)."""
    write(blog, "later.md", post("Later", slug="later-draft", draft="true"))
    _out, err, code = run_import(str(blog))
    assert code == 0, err
    story = Story.objects.get(slug="later-draft")
    when = datetime(2030, 1, 1, tzinfo=UTC)
    story_save(
        story_id=story.pk, title="Later", slug="later-draft", body=story.body, publish_at=when
    )

    out, err, code = run_import(str(blog))

    assert code == 0, err
    assert "unchanged 1" in out.splitlines()[-1]
    assert Story.objects.get(pk=story.pk).publish_at == when


def test_a_file_named_and_found_in_a_folder_named_is_imported_once(blog):
    """Overlapping paths (a folder and a file in it) read the file twice, which then
    failed as its own duplicate slug (a review's finding)."""
    path = write(blog, "twice.md", post("Twice", slug="twice-draft", draft="true"))

    out, err, code = run_import(str(blog), str(path.parent / "." / path.name))

    assert code == 0, err + out
    assert out.splitlines()[-1].startswith("import_articles: created 1, updated 0, unchanged 0")
    assert Story.objects.filter(slug="twice-draft").count() == 1


def test_a_multilingual_bundles_pages_are_each_imported(blog, settings):
    """Hugo's `my-post/index.en.md` and `index.fr.md`: the page in the site's language
    takes the folder's name, the other adds its language, and each is in its file's
    language (a review's finding: both took the folder's name and failed as each other's
    duplicates, so the bundle imported nothing)."""
    settings.SITE_LANGUAGE = "en"
    write(blog, "my-post/index.en.md", post("Hello", draft="true"))
    write(blog, "my-post/index.fr.md", post("Bonjour", draft="true"))

    out, err, code = run_import(str(blog))

    assert code == 0, err + out
    assert sorted(Story.objects.values_list("slug", "title", "language")) == [
        ("my-post", "Hello", "en"),
        ("my-post-fr", "Bonjour", "fr"),
    ]


def test_a_file_name_that_is_not_utf8_gives_no_slug_without_saying_so(blog):
    """`caf\\xe9.md` (Latin-1) became the slug `caf` without a word (a review's
    finding): without `slug:` it fails, saying why; with one it is imported."""
    blog.mkdir(parents=True)
    for name, text in (
        (b"caf\xe9.md", post("Caf", draft="true")),
        (b"th\xe9.md", post("The", slug="the-draft", draft="true")),
    ):
        with open(os.path.join(os.fsencode(blog), name), "wb") as fh:
            fh.write(text.encode())

    out, err, code = run_import(str(blog))

    assert code == 1
    assert "its file name is not UTF-8: set `slug:` in the front matter" in out + err
    assert list(Story.objects.values_list("slug", flat=True)) == ["the-draft"]


def test_a_folder_named_again_through_a_link_is_read_once(blog, tmp_path):
    """`import_articles blog link-to-blog`: the same files by two paths were each
    refused as the other's duplicate (a review's finding)."""
    write(blog, "once.md", post("Once", slug="once-draft", draft="true"))
    link = tmp_path / "link-to-blog"
    link.symlink_to(blog, target_is_directory=True)

    out, err, code = run_import(str(blog), str(link), str(link / "once.md"))

    assert code == 0, err + out
    assert out.splitlines()[-1].startswith("import_articles: created 1, updated 0, unchanged 0")


@pytest.mark.parametrize("dry_run", [True, False], ids=["dry-run", "import"])
@pytest.mark.parametrize("second_a_draft", [True, False], ids=["two drafts", "draft, article"])
def test_a_draft_file_sharing_its_slug_fails_with_the_other_as_articles_do(
    blog, dry_run, second_a_draft
):
    """Which one is meant is not ours to guess: neither is kept, each names the other,
    and the dry run says what the import does (a review's: the last draft won, or the
    draft took the address and the article failed, while the dry run said created 2)."""
    write(blog, "a.md", post("First", slug="same", draft="true"))
    second = {"draft": "true"} if second_a_draft else {}
    write(blog, "b.md", post("Second", slug="same", **second))

    out, err, code = run_import(*(["--dry-run"] if dry_run else []), str(blog))

    assert code == 1, out
    assert f"{blog / 'a.md'}: slug: 'same' is also the slug of {blog / 'b.md'}" in err + out
    assert f"{blog / 'b.md'}: slug: 'same' is also the slug of {blog / 'a.md'}" in err + out
    assert "created 0, updated 0" in out
    assert not Story.objects.exists() and not Article.objects.exists()


def test_a_new_alias_of_an_article_left_unchanged_is_written_by_the_next_pass(
    worker, blog, settings
):
    """A re-import that adds an alias and changes nothing else publishes nothing: the
    import asks for the pass that writes the alias's page (it waited for the full
    check, up to PUBLISH_RECONCILE_EVERY, an hour)."""
    p = blog.name
    # The oldest of a site with an archive page (50 a page): it is listed there.
    write(blog, "post.md", post("Stays", slug=f"{p}-stays", date="2020-01-01"))
    for n in range(55):
        write(blog, f"newer-{n}.md", post(f"Newer {n}", slug=f"{p}-newer-{n}", date="2021-01-01"))
    assert run_import(str(blog))[2] == 0
    wait_for(lambda: published([f"{p}-stays"]), what="the first import published")
    wait_for(
        lambda: Article.objects.filter(status=ArticleStatus.PUBLISHED).count() == 56,
        what="the first import published",
    )
    wait_settled()
    root = Path(settings.SITE_ROOT)
    assert f"{p}-was" not in moved_pages(root)

    # (The front page and the feeds are written by every pass, the last of it.)
    archive = list(root.glob("page/*/index.html"))
    before = {path: path.stat().st_mtime_ns for path in archive}
    write(
        blog,
        "post.md",
        post("Stays", slug=f"{p}-stays", date="2020-01-01", aliases=f'["/{p}-was/"]'),
    )
    out, err, code = run_import(str(blog))

    assert code == 0, err
    assert out.splitlines()[-1].startswith("import_articles: created 0, updated 0, unchanged 56")
    wait_for(
        lambda: moved_pages(root).get(f"{p}-was") == f"{p}-stays",
        what="the new alias's page, from a pass (no full check runs here)",
    )
    wait_settled()
    # Its listing is as it was: no archive page written again, not even with the same
    # bytes (a review's finding: every one was).
    assert archive
    assert {path: path.stat().st_mtime_ns for path in archive} == before
    # Again, with nothing new: no note, no pass asked for.
    out, err, code = run_import(str(blog))
    article = Article.objects.get(slug=f"{p}-stays")
    assert code == 0 and not PageNote.objects.filter(article_id=article.pk).exists()


def test_aliases_come_in_as_former_addresses_and_go_out_again(worker, blog, settings):
    """Hugo's `aliases` and Jekyll's `redirect_from`: each one folder of the site sends
    readers on to the article (docs/site.md, "Former addresses"); one this layout cannot
    serve, or a slug the site refuses, is named and the article imported all the same;
    the export lists them, and its import into an empty database gives them back."""
    p = blog.name
    aliases = (
        f'["/{p}-old/", "/2019/05/{p}-older/", "feed", "https://example.com/{p}-x.html", '
        # its own address, and one of the others, in capitals: the same folders (as
        # slugs are stored: lowercase), on a file system that ignores case too
        f'"/{p.upper()}-NOW/", "/{p.upper()}-OLD/"]'
    )
    write(
        blog,
        "moved.md",
        post("Moved twice", slug=f"{p}-now", aliases=aliases, redirect_from=f"/{p}-jekyll/"),
    )

    out, err, code = run_import(str(blog))

    assert code == 0, err
    assert f"alias not kept: {blog / 'moved.md'}: /2019/05/{p}-older/ (not one folder" in out
    assert f"alias not kept: {blog / 'moved.md'}: feed (" in out
    kept = {f"{p}-old", f"{p}-x", f"{p}-jekyll"}
    article = Article.objects.get(slug=f"{p}-now")
    assert set(article.former_addresses.values_list("slug", flat=True)) == kept
    root = Path(settings.SITE_ROOT)
    wait_for(
        lambda: (
            {slug: moved_pages(root).get(slug) for slug in kept} == dict.fromkeys(kept, f"{p}-now")
        ),
        what="the aliases' pages",
    )

    folder = blog.parent / f"{p}-export"
    call_command("export_articles", str(folder), stdout=io.StringIO())
    text = (folder / f"{p}-now.md").read_text(encoding="utf-8")
    assert f"aliases:\n- /{p}-jekyll/\n- /{p}-old/\n- /{p}-x/\n" in text, text

    Article.objects.all().delete()
    out, err, code = run_import(str(folder))

    assert code == 0, err
    again = Article.objects.get(slug=f"{p}-now")
    assert set(again.former_addresses.values_list("slug", flat=True)) == kept


def test_a_row_saved_before_a_newer_rule_imports_its_export_unchanged(
    worker, make_article, tmp_path
):
    """A row as an earlier release stored it (its body's trailing newline, two spellings
    of one tag): the import of its own export finds the same content once the row is
    normalised as a save now would, and changes nothing (nothing republished)."""
    article = make_article(title="Older", body="Old body.", tags=["Deep learning"])
    wait_for(
        lambda: Article.objects.filter(pk=article.pk, status=ArticleStatus.PUBLISHED).exists(),
        what="the article published",
    )
    old = {"body": "Old body.\n\n", "tags": ["Deep learning", "deep-learning"]}
    Article.objects.filter(pk=article.pk).update(
        **old,
        content_hash=content_hash_of(
            title="Older",
            slug=article.slug,
            body=old["body"],
            publish_at=article.publish_at,
            description="",
            language="",
            byline="",
            tags=old["tags"],
        ),
    )
    before = Article.objects.values_list("content_hash", "status", "message_id").get(pk=article.pk)
    folder = tmp_path / "export"
    call_command("export_articles", str(folder), stdout=io.StringIO())

    out, err, code = run_import(str(folder))

    assert code == 0, err
    assert out.splitlines()[-1].startswith("import_articles: created 0, updated 0, unchanged 1")
    assert (
        Article.objects.values_list("content_hash", "status", "message_id").get(pk=article.pk)
        == before
    )


def test_drafts_and_withdrawn_stories_are_exported_and_come_back_as_drafts(worker, tmp_path):
    """A draft never published (no date) and a withdrawn story are on no page: they are
    exported with `draft: true`, and an import into an empty database makes them drafts
    again, as they were (a writer's review: the export left them out). The trash is not
    exported."""
    from publishing.services import story_publish, story_trash, story_withdraw

    story_save(title="草稿", slug="cao-gao", body="Not yet.", tags=["ideas"])
    gone = story_save(title="Gone", slug="gone", body="Was live.")
    story_publish(story_id=gone.pk)
    wait_for(
        lambda: Article.objects.filter(pk=gone.pk, status=ArticleStatus.PUBLISHED).exists(),
        what="the story published",
    )
    story_withdraw(article_id=gone.pk)
    story_trash(story_id=story_save(title="Binned", slug="binned", body="x").pk)
    # Undated drafts whose slugs begin as Jekyll's file names do: no date from the file
    # name (one of them not a date at all), as they had none (a review's finding).
    story_save(title="Notes for May", slug="2024-05-01-notes", body="Undated.")
    story_save(title="Plans", slug="2024-02-30-plans", body="Undated too.")
    fields = ("title", "slug", "body", "publish_at", "first_publish_at", "tags", "state")
    before = sorted(Story.objects.filter(trashed_at__isnull=True).values_list(*fields))
    assert Story.objects.get(pk=gone.pk).first_publish_at is not None  # its date, kept
    folder = tmp_path / "export"

    out = io.StringIO()
    call_command("export_articles", str(folder), stdout=out)

    assert "0 article(s) and 4 draft(s)" in out.getvalue()
    assert sorted(p.name for p in folder.iterdir()) == [
        "2024-02-30-plans.md",
        "2024-05-01-notes.md",
        "cao-gao.md",
        "gone.md",
    ]
    out, err, code = run_import(str(folder))  # into the same database: nothing changes
    assert out.splitlines()[-1].startswith("import_articles: created 0, updated 0, unchanged 4")
    Story.objects.all().delete()
    out, err, code = run_import(str(folder))
    assert code == 0, err
    assert sorted(Story.objects.values_list(*fields)) == before
    assert not Article.objects.exists()
    out, err, code = run_import(str(folder))  # again: nothing changes
    assert out.splitlines()[-1].startswith("import_articles: created 0, updated 0, unchanged 4")


def test_the_export_names_articles_whose_drafts_hold_unpublished_changes(worker, tmp_path):
    """The export writes an article as readers see it; a draft's changes not published
    yet are in no file, so it names those articles (a review's finding: a move by export
    lost them without a word)."""
    from publishing.services import story_publish

    story = story_save(title="Desk story", slug="desk-story", body="Version one, live.")
    story_publish(story_id=story.pk)
    wait_for(
        lambda: Article.objects.filter(pk=story.pk, status=ArticleStatus.PUBLISHED).exists(),
        what="the story published",
    )
    folder = tmp_path / "export"
    out, err = io.StringIO(), io.StringIO()
    call_command("export_articles", str(folder), stdout=out, stderr=err)
    assert err.getvalue() == ""  # nothing unpublished yet

    story_save(
        story_id=story.pk,
        title="Desk story",
        slug="desk-story",
        body="Version two, not published.",
    )
    call_command("export_articles", str(folder), stdout=out, stderr=err)

    assert "1 article(s) have draft changes not published" in err.getvalue()
    assert "desk-story." in err.getvalue()
    assert "Version one, live." in (folder / "desk-story.md").read_text(encoding="utf-8")


JEKYLL_BLOG = Path(__file__).resolve().parents[1] / "jekyll_corpus" / "_posts"


def test_a_real_jekyll_blog_imports_whole_and_its_export_imports_unchanged(worker, tmp_path):
    """Jekyll's own news blog (tests/jekyll_corpus, MIT): every post, its byline, its
    categories as tags and the date Jekyll gives it, the file name's when it has none."""
    posts = sorted(JEKYLL_BLOG.iterdir())

    out, err, code = run_import(str(JEKYLL_BLOG))

    assert code == 0, err
    assert out.splitlines()[-1].startswith(f"import_articles: created {len(posts)}, updated 0")
    assert "failed 0" in out.splitlines()[-1]
    released = Article.objects.get(slug="jekyll-3-1-1-released")
    assert released.byline == "parkr" and released.tags == ["release"]
    assert released.publish_at == datetime(2016, 1, 29, 1, 21, 50, tzinfo=UTC)  # -0800
    undated = Article.objects.get(slug="jekyll-turns-2-0-0")
    assert undated.publish_at == datetime(2014, 5, 6, tzinfo=UTC)
    assert Article.objects.exclude(byline="").count() == len(posts)

    folder = tmp_path / "export"
    call_command("export_articles", str(folder), stdout=io.StringIO())
    out, err, code = run_import(str(folder))

    assert code == 0, err
    assert out.splitlines()[-1].startswith(
        f"import_articles: created 0, updated 0, unchanged {len(posts)}"
    )


def test_an_empty_folder_and_a_linked_one_are_said(blog, tmp_path):
    """A review's finding: an empty folder ended "created 0, …" with no word of why, and
    a link to a folder inside the import was passed by in silence."""
    blog.mkdir(parents=True)
    out, err, code = run_import(str(blog))

    assert code == 0, err
    assert f"no Markdown files (.md, .markdown) found in {blog}" in out

    elsewhere = tmp_path / "elsewhere"
    write(elsewhere, "post.md", post("Elsewhere", slug=f"{blog.name}-elsewhere"))
    (blog / "linked").symlink_to(elsewhere, target_is_directory=True)
    out, err, code = run_import(str(blog))

    assert code == 0, err
    assert f"skipped: {blog / 'linked'}: a link to a folder, not followed" in out
    assert out.splitlines()[-1].endswith("skipped 1, failed 0")
    assert not Article.objects.filter(slug=f"{blog.name}-elsewhere").exists()


def _live_at(article_id: int, slug: str) -> None:
    wait_for(
        lambda: Article.objects.filter(
            pk=article_id, status=ArticleStatus.PUBLISHED, published_slug=slug
        ).exists(),
        what=f"the article live at {slug}",
    )


def test_a_draft_file_never_edits_the_draft_of_a_published_story(worker, blog):
    """A story published at `old`, its article then moved to `new` in the Article form
    (or the API): the story keeps `old`. A `draft: true` file of `old` edited that live
    story's draft, which the writer's next Publish put live (a review's finding); a file
    of `old` without `draft:` was refused as "a draft (a story never published, or
    withdrawn)". Both fail, saying what keeps the address."""
    from publishing.services import article_update, story_publish

    story = story_save(title="Live", body="Mine.", slug="old")
    story_publish(story_id=story.pk)
    _live_at(story.pk, "old")
    article_update(article=Article.objects.get(pk=story.pk), slug="new")
    _live_at(story.pk, "new")
    draft = write(blog, "draft.md", post("Intruder", "From a file.", slug="old", draft="true"))
    article = write(blog / "b", "article.md", post("Intruder", "From a file.", slug="OLD"))

    out, err, code = run_import(str(draft))
    out2, err2, code2 = run_import(str(article))

    assert (code, code2) == (1, 1), out + err + out2 + err2
    assert (
        f"{draft}: draft: this slug is a published story's, its article now at 'new': a"
        " file updates only a draft on no page" in err
    )
    assert (
        f"{article}: slug: a published story keeps this address (its article is now at"
        " 'new'); choose another" in err2
    )
    after = Story.objects.get(pk=story.pk)
    assert (after.body, after.has_unpublished_changes) == ("Mine.", False)


def test_an_export_into_a_folder_used_before_names_what_it_did_not_write_and_prunes(tmp_path):
    """A nightly `export_articles /backups/blog` into one folder: the files of articles
    deleted, or moved to another slug, since the last export stayed, without a word, and
    an import of the folder brought the deleted article back and the moved one twice (a
    review's finding). The export names them on stderr; `--prune` removes them, and only
    them (no other file, no folder, nothing hidden)."""
    from publishing.services import article_create, article_update

    moved = article_create(title="Moved", body="Same text.", slug="before-move")
    gone = article_create(title="Deleted", body="Taken down.", slug="gone")
    backup = tmp_path / "backup"
    call_command("export_articles", str(backup), stdout=io.StringIO(), stderr=io.StringIO())
    article_update(article=moved, slug="after-move")
    Article.objects.filter(pk=gone.pk).delete()
    for name in ("notes.txt", ".hidden.md", "folder.md/inner.md"):
        write(backup, name, "kept")

    out, err = io.StringIO(), io.StringIO()
    call_command("export_articles", str(backup), stdout=out, stderr=err)

    assert (
        f"export_articles: 2 Markdown file(s) in {backup} are not of this export (articles"
        " deleted or moved since an earlier one?), and an import of the folder would bring"
        " them back: before-move.md, gone.md. --prune removes them." in err.getvalue()
    )
    assert (backup / "gone.md").exists()  # nothing deleted by default

    out, err = io.StringIO(), io.StringIO()
    call_command("export_articles", str(backup), "--prune", stdout=out, stderr=err)

    assert "2 Markdown file(s) not of this export removed" in err.getvalue()
    assert sorted(p.name for p in backup.iterdir()) == [
        ".hidden.md",
        "after-move.md",
        "folder.md",
        "notes.txt",
    ]
    assert (backup / "folder.md" / "inner.md").read_text() == "kept"


def test_the_export_names_and_prunes_every_file_the_import_would_read(tmp_path):
    """The export looked for `*.md` alone, while the import reads `.md` and `.markdown`
    in any case: `old.markdown` and `Older.MD` were neither named nor pruned, and an
    import of the folder brought them back (a review's finding). One test serves both
    (markdown_files.is_markdown_name). DIR's subfolders are not looked in."""
    Article.objects.create(title="Kept", slug="kept", body="The body.")
    backup = tmp_path / "backup"
    write(backup, "old.markdown", post("Old one", slug="old-one", date="2020-01-01"))
    write(backup, "Older.MD", post("Older one", slug="older-one", date="2020-01-01"))
    write(backup, "sub/deeper.md", post("Deeper", slug="deeper", date="2020-01-01"))

    err = io.StringIO()
    call_command("export_articles", str(backup), stdout=io.StringIO(), stderr=err)
    assert ": Older.MD, old.markdown. --prune removes them." in err.getvalue()

    err = io.StringIO()
    call_command("export_articles", str(backup), "--prune", stdout=io.StringIO(), stderr=err)
    assert "2 Markdown file(s) not of this export removed" in err.getvalue()
    assert sorted(p.name for p in backup.iterdir()) == ["kept.md", "sub"]
    assert (backup / "sub" / "deeper.md").exists()


def _meanwhile(monkeypatch, action) -> None:
    """`action()` once, after the export's first file is written, on a connection of its
    own (a thread) and committed before the export goes on: a writer of the blog while
    the export runs."""
    from publishing.management.commands import export_articles

    real, done = export_articles.write_file, []

    def in_thread() -> None:
        try:
            done.append(action())
        finally:
            connection.close()  # the thread's own

    def write_file(dir_fd: int, name: str, text: str) -> None:
        real(dir_fd, name, text)
        if not done:
            thread = threading.Thread(target=in_thread)
            thread.start()
            thread.join()
            assert done, "the writer failed"

    monkeypatch.setattr(export_articles, "write_file", write_file)


def test_a_story_published_during_the_export_is_in_a_file(worker, tmp_path, monkeypatch):
    """The export read the articles, wrote them, then read the drafts with no article: a
    story published between the two reads was in neither, so in no file, and --prune
    removed its copy from an earlier export (a review's finding). Both reads are one
    snapshot now (work.db.read_snapshot): it is written as the draft it was then."""
    from publishing.services import story_publish

    story_publish(story_id=story_save(title="First", slug="snap-first", body="First.").pk)
    draft = story_save(title="Precious", slug="snap-precious", body="The only copy.")
    _meanwhile(monkeypatch, lambda: story_publish(story_id=draft.pk))
    backup = tmp_path / "backup"

    out = io.StringIO()
    call_command("export_articles", str(backup), stdout=out, stderr=io.StringIO())

    assert Article.objects.filter(slug="snap-precious").exists()  # published meanwhile
    assert "1 article(s) and 1 draft(s)" in out.getvalue()
    assert "draft: true" in (backup / "snap-precious.md").read_text()


def test_the_exports_snapshot_holds_up_no_writer_on_a_fresh_connection():
    """A review of the mend above: on a connection not yet open, connecting set SQLite's
    transaction_mode from OPTIONS (IMMEDIATE) after read_snapshot had set DEFERRED, so a
    real export (a fresh process) held the write lock for its whole run, and the mode
    was left None after it."""
    from work.db import read_snapshot

    Article.objects.create(title="Before", slug="snapshot-before", body="Before.")
    mode = getattr(connection, "transaction_mode", None)
    connection.close()
    wrote: list[str] = []

    def writer() -> None:
        try:
            Article.objects.create(title="During", slug="snapshot-during", body="During.")
            wrote.append("written")
        finally:
            connection.close()  # the thread's own

    with read_snapshot():
        assert Article.objects.count() == 1
        thread = threading.Thread(target=writer)
        thread.start()
        thread.join()
        assert wrote == ["written"]
        assert Article.objects.count() == 1  # still the snapshot's

    assert Article.objects.count() == 2
    assert getattr(connection, "transaction_mode", None) == mode


def test_prune_keeps_the_file_of_a_story_saved_during_the_export(tmp_path, monkeypatch):
    """A story saved after the export's snapshot is in none of its files; --prune must
    not remove the file an earlier export wrote of that slug, the only copy the folder
    holds (a review's finding). It is named, kept, and the next export writes it."""
    Article.objects.create(title="Kept", slug="kept", body="The body.")
    backup = tmp_path / "backup"
    write(backup, "late.md", post("Late", slug="late"))
    write(backup, "gone.md", post("Gone", slug="gone"))
    # Another case or extension of a live slug is no file a later export writes: kept, it
    # stayed for good (a review of the mend).
    write(backup, "Late.md", post("Late", slug="late"))
    write(backup, "late.markdown", post("Late", slug="late"))
    _meanwhile(monkeypatch, lambda: story_save(title="Late", slug="late", body="New."))

    err = io.StringIO()
    call_command("export_articles", str(backup), "--prune", stdout=io.StringIO(), stderr=err)

    assert (
        f"1 Markdown file(s) not of this export kept in {backup}: an article or draft of"
        " that slug exists now (saved during the export?); the next export writes it:"
        " late.md." in err.getvalue()
    )
    assert "3 Markdown file(s) not of this export removed" in err.getvalue()
    assert sorted(p.name for p in backup.iterdir()) == ["kept.md", "late.md"]


def test_a_second_run_of_the_same_import_at_once_finds_its_files_unchanged(
    worker, blog, monkeypatch
):
    """Two runs of one import at once (cron overlapping a manual run): the second's
    INSERT met the first's rows and reported every file "another article took this slug
    meanwhile", and exited 1, though each article held that file's content (a review's
    finding). The winner is compared with the file, as an existing row is: the same
    content (an undated file's date is the row's) is unchanged; other content still
    fails."""
    from publishing.services import importing

    write(blog, "race-dated.md", post("Dated", date="2024-03-01 10:00:00"))
    write(blog, "race-undated.md", post("Undated"))
    write(blog, "race-other.md", post("Mine", date="2024-03-01 10:00:00"))
    real, started, done = importing._write_chunk, [], []

    def other_run() -> None:
        try:
            out, err, code = run_import(str(blog / "race-dated.md"), str(blog / "race-undated.md"))
            assert code == 0, out + err
            # A run started in another second: an undated file's article has its time.
            undated = Article.objects.get(slug="race-undated")
            undated.publish_at = datetime(2020, 1, 1, tzinfo=UTC)
            undated.save()
            Article.objects.create(title="Theirs", slug="race-other", body="Not mine.")
            done.append(True)
        finally:
            connection.close()  # the thread's own

    def write_chunk(*args, **kwargs):
        if not started:  # planned: every file new; the other run commits before this writes
            started.append(True)  # (its own chunk comes through here too)
            thread = threading.Thread(target=other_run)
            thread.start()
            thread.join()
            assert done, "the other run failed"
        return real(*args, **kwargs)

    monkeypatch.setattr(importing, "_write_chunk", write_chunk)

    out, err, code = run_import(str(blog))

    assert out.splitlines()[-1] == (
        "import_articles: created 0, updated 0, unchanged 2, skipped 0, failed 1"
    )
    assert code == 1
    assert err.count("another article took this slug meanwhile") == 1
    assert "race-other.md: slug: another article took this slug meanwhile" in err
    assert Article.objects.get(slug="race-other").body == "Not mine."


def test_a_folder_the_import_cannot_list_fails_naming_it(blog):
    """os.walk() without onerror left out a folder it could not list, without a word,
    and the run exited 0 (a review's finding): here one whose path is past PATH_MAX
    (which root meets as anyone does); an unreadable folder takes the same path (the
    next test). It fails, named, and the other files are imported."""
    write(blog, "top.md", post("Top", slug="listed-top"))
    fd = os.open(blog, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(18):  # 18 x 240 bytes: past Linux's 4096-byte PATH_MAX
            os.mkdir("d" * 240, dir_fd=fd)
            inner = os.open("d" * 240, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
        md = os.open("deep.md", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(md, post("Deep", slug="listed-deep").encode())
        os.close(md)
    finally:
        os.close(fd)

    out, err, code = run_import(str(blog))

    assert code == 1, out + err
    assert "cannot read this folder: File name too long" in err
    assert out.splitlines()[-1].startswith("import_articles: created 1, updated 0")
    assert list(Article.objects.values_list("slug", flat=True)) == ["listed-top"]


@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root and setpriv"
)
def test_a_folder_without_read_permission_fails_naming_it(blog):
    """The same with a folder of mode 000, as an operator who is not root meets it (a
    repository checked out by another user, a mounted backup): the command run without
    the capabilities that let root read anything."""
    write(blog, "a-top.md", post("Top", slug="perm-top"))
    write(blog, "locked/inner.md", post("Inner", slug="perm-inner"))
    (blog / "locked").chmod(0)
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "PYTHONPATH": os.getcwd()}
    if connection.vendor == "sqlite":
        env["BLOGPUBLISH_TEST_DB"] = "sqlite"
    try:
        proc = subprocess.run(
            [
                "setpriv",
                "--inh-caps=-all",
                "--bounding-set=-dac_override,-dac_read_search",
                sys.executable,
                "manage.py",
                "import_articles",
                "--dry-run",
                str(blog),
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
    finally:
        (blog / "locked").chmod(0o755)

    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"failed: {blog / 'locked'}: cannot read this folder: Permission denied" in proc.stderr
    assert f"would create: {blog / 'a-top.md'} (perm-top)" in proc.stdout


def test_drafts_are_told_by_the_innermost_of_drafts_and_posts_whatever_is_named(tmp_path):
    """`"_drafts" in path.parts` read a blog kept under a folder named `_drafts` (a
    writer's own `~/_drafts/site/`) as drafts, every post (a review's finding); 9f4da39
    then counted only the folder named and below, and `import_articles
    site/_drafts/2024` (or a file in it) put Jekyll's drafts live (the next review's).
    Of `_drafts` and `_posts` on a file's path, the innermost decides."""
    kept = tmp_path / "_drafts" / "site"
    write(kept, "_posts/2024-05-01-hello.md", post("Hello", slug="kept-post"))
    write(kept, "_drafts/notes.md", post("Notes", slug="kept-draft"))
    write(tmp_path / "_drafts" / "other", "_posts/hi.md", post("Hi", slug="posts-named"))
    jekyll = tmp_path / "jekyll"
    write(jekyll / "_drafts" / "2024", "a.md", post("A", slug="sub-named", date="2020-01-01"))
    write(jekyll / "_drafts" / "2025", "b.md", post("B", slug="file-named", date="2020-01-01"))
    write(tmp_path / "bare" / "_drafts", "idea.md", post("Idea", slug="drafts-named"))

    out, err, code = run_import(
        str(kept),
        str(tmp_path / "_drafts" / "other" / "_posts"),
        str(jekyll / "_drafts" / "2024"),
        str(jekyll / "_drafts" / "2025" / "b.md"),
        str(tmp_path / "bare" / "_drafts"),
    )

    assert code == 0, out + err
    assert sorted(Article.objects.values_list("slug", flat=True)) == ["kept-post", "posts-named"]
    assert sorted(Story.objects.values_list("slug", flat=True)) == [
        "drafts-named",
        "file-named",
        "kept-draft",
        "sub-named",
    ]


def test_an_article_imported_a_little_ahead_goes_live_at_its_time_without_the_catch_up(
    worker, tmp_path
):
    """The rows are written in bulk, with no save's signal: one dated a few seconds
    ahead got no message with its ETA and waited for the catch-up, up to about three
    minutes late (a review's finding; no Beat runs here, so without it the row stays
    pending). The import arms it, as a save does."""
    at = (timezone.now() + timedelta(seconds=3)).replace(microsecond=0)
    write(tmp_path, "soon.md", post("Soon", slug="import-soon", date=at.isoformat()))

    out, err, code = run_import(str(tmp_path))

    assert code == 0, out + err
    article = Article.objects.get(slug="import-soon")
    assert article.publish_at == at
    wait_for(
        lambda: Article.objects.filter(pk=article.pk, status=ArticleStatus.PUBLISHED).exists(),
        timeout=30,
        what="the imported article to go live at its time",
    )
    article.refresh_from_db()
    assert article.published_at >= at
