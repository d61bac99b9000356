"""The re-render of the whole site in a new look (issue 20, items 3 and 4), in-process
with the real database and the site in the test's own folder: its passes, checkpoint,
lease and fence, and what it never touches. The worker's path and kills are in
tests/system/test_rerender.py."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import re
import threading
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import DatabaseError, connection
from django.template.loader import get_template

from blogpublish.models import SiteState as SiteStateRow
from blogpublish.site import documents, look, paths, rerender
from blogpublish.site.rerender import RERENDER_CHECKPOINT, progress_read
from blogpublish.storage import site_storage
from blogpublish.storage.local import LocalStorage
from blogpublish.storage.s3 import S3SiteStorage
from publishing import renderers
from publishing.models import Article, PublishAttempt
from publishing.services import shared_views_pass
from publishing.services.rerender import (
    RERENDER_JOB,
    RerenderOutcome,
    rerender_status,
    rerender_wanted,
    site_rerender,
)
from tests.integration.test_site_builder import Site, site  # noqa: F401  (the fixture)
from tests.support.site import run_full_check
from tests.support.waiting import wait_for
from work.checkpoints import checkpoint_read
from work.job_leases import FIELDS, lease_release, lease_take
from work.lease import Fence, Overtaken
from work.models import JobLease

pytestmark = pytest.mark.django_db(transaction=True)


def head(slug: str) -> bytes | None:
    return site_storage().read_head(paths.page_file(slug), documents.CONTENT_MARK_WITHIN)


def page(slug: str) -> str:
    return site_storage().read(paths.page_file(slug)).decode()


def looks(articles: list[Article]) -> list[str | None]:
    return [look.page_look(head(a.published_slug or a.slug)) for a in articles]


def rows(articles: list[Article]) -> list[tuple]:
    """What a re-render must leave alone of each article."""
    fields = ("id", "status", "attempts", "claims", "published_hash", "updated_at")
    return list(Article.objects.filter(pk__in=[a.pk for a in articles]).values_list(*fields))


def run_to_the_end(**kwargs) -> int:
    passes = 0
    while (outcome := site_rerender(**kwargs)) is not RerenderOutcome.DONE:
        assert outcome is RerenderOutcome.MORE, outcome
        passes += 1
        assert passes < 100
    return passes + 1


def new_look(settings, title: str = "A new look") -> str:
    before = look.look()
    settings.SITE_TITLE = title  # a setting a page shows: the look changes
    assert look.look() != before
    return look.look()


def test_a_new_look_rewrites_every_page_and_changes_no_article(site, settings):  # noqa: F811
    articles = site.add(5)
    old = look.look()
    assert looks(articles) == [old] * 5
    assert run_to_the_end() == 1  # the first run: the site in this look, pages already are
    before, attempts = rows(articles), PublishAttempt.objects.count()

    assert not rerender_wanted()
    new = new_look(settings)
    assert rerender_wanted()  # the catch-up would send a pass
    run_to_the_end()

    assert looks(articles) == [new] * 5
    assert all("A new look" in page(a.slug) for a in articles)
    assert SiteStateRow.objects.get().rebuild  # the shared views marked for a rebuild
    shared_views_pass()  # which the refresher's next pass does
    assert not SiteStateRow.objects.get().rebuild
    assert "A new look" in (site.root / "index.html").read_text()
    assert rows(articles) == before  # no status, attempt, claim or time changed
    assert PublishAttempt.objects.count() == attempts  # and no attempt recorded
    assert not rerender_wanted()
    status = rerender_status()["StaticSitePublisher"]
    assert status["look"] == new and status["current"]
    assert status["run"]["done"] == 5 and status["run"]["written"] == 5
    assert status["run"]["left"] == 0


def test_a_new_site_url_sends_the_former_addresses_readers_to_the_new_one(site, settings):  # noqa: F811
    """A former address's page carries no look, but names the article's address, which
    SITE_URL makes: the re-render a new SITE_URL begins writes it again (a review's: it
    sent readers to the old address until the full check, an hour later)."""
    (article,) = site.add(1, slug="first-home")
    site.edit(article, slug="second-home")
    run_to_the_end()
    assert 'href="/second-home/"' in page("first-home")

    settings.SITE_URL = "https://blog.example.com/blog"
    run_to_the_end()

    assert 'href="/blog/second-home/"' in page("first-home")
    assert "/blog/second-home/" in page("second-home")


def test_the_former_addresses_resume_where_a_pass_ran_out_of_time(site, settings):  # noqa: F811
    """Many former addresses (an import's aliases) may outlast a pass: the next goes on
    from the last one written, not from the first, and the run is not finished before
    (a review's: what the budget did not reach waited for the full check)."""
    for name in ("a", "b"):
        (article,) = site.add(1, slug=f"first-{name}")
        site.edit(article, slug=f"second-{name}")
    settings.SITE_URL = "https://blog.example.com/blog"
    progress = rerender.Progress(look=look.look(), born=look.born(), total=2, started_at="")

    class OneWriteOfTime:  # the budget of one former address's page
        def __init__(self) -> None:
            self.left = [1.0, 0.0]

        def time_left(self) -> float:
            return self.left.pop(0) if self.left else 0.0

        def hold(self, what: str) -> None:
            pass

    assert not rerender._former_addresses_written(site_storage(), progress, OneWriteOfTime())
    assert progress.former_after == "first-a"
    assert 'href="/blog/second-a/"' in page("first-a")
    assert 'href="/second-b/"' in page("first-b")  # not reached

    # The next pass, as short: it begins after first-a, so first-b's is its one write.
    assert rerender._former_addresses_written(site_storage(), progress, OneWriteOfTime())
    assert 'href="/blog/second-b/"' in page("first-b")


def test_a_pass_stops_after_its_budget_and_the_next_resumes_from_the_checkpoint(
    site,  # noqa: F811
    settings,
    monkeypatch,
):
    articles = site.add(5)
    run_to_the_end()
    new = new_look(settings)
    settings.SITE_RERENDER_CHUNK = 2

    assert site_rerender(budget=0) is RerenderOutcome.MORE  # one chunk per pass
    assert looks(articles) == [new, new, *looks(articles)[2:]]
    assert new not in looks(articles)[2:]
    assert progress_read().after == articles[1].pk
    first = (site.root / articles[0].slug / "index.html").stat().st_ino

    assert site_rerender(budget=0) is RerenderOutcome.MORE
    assert progress_read().after == articles[3].pk
    # Resumed after the checkpoint: the first chunk's pages were not written again.
    assert (site.root / articles[0].slug / "index.html").stat().st_ino == first
    assert site_rerender(budget=0) is RerenderOutcome.DONE
    assert looks(articles) == [new] * 5
    assert progress_read().done == 5


def test_a_second_runner_waits_while_the_first_holds_the_lease(site, settings):  # noqa: F811
    articles = site.add(2)
    run_to_the_end()
    new_look(settings)
    held = lease_take(name=RERENDER_JOB, job=RERENDER_JOB, seconds=60)
    try:
        assert site_rerender() is RerenderOutcome.BUSY
        assert not rerender_wanted()  # nothing to send while a runner holds it
        assert new_look(settings, "Again") not in looks(articles)
    finally:
        lease_release(held)
    assert rerender_wanted()
    assert run_to_the_end() == 1


def test_a_workers_pass_gives_way_to_a_publish_no_one_has_taken(site, settings):  # noqa: F811
    """Item 3 of docs/performance.md's re-render: a worker's pass ends after the chunk
    in which a publish began to wait for a worker (its child then takes the publish);
    `manage.py rerender_site`'s passes, in a process of their own, do not."""
    articles = site.add(6)
    run_to_the_end()
    new = new_look(settings)
    settings.SITE_RERENDER_CHUNK = 2
    # A publish no one has taken: pending, due, its lease free (no signal, no message).
    Article.objects.filter(pk=articles[-1].pk).update(status="pending")

    assert site_rerender(give_way=True) is RerenderOutcome.MORE  # its budget is 10 s
    assert progress_read().done == 2  # one chunk, then the publish's turn
    assert site_rerender(give_way=True) is RerenderOutcome.MORE  # one chunk a pass still
    assert progress_read().done == 4

    Article.objects.filter(pk=articles[-1].pk).update(status="published")  # taken, done
    assert site_rerender(give_way=True) is RerenderOutcome.DONE
    assert looks(articles) == [new] * 6

    new_look(settings, "Yet another look")
    Article.objects.filter(pk=articles[-1].pk).update(status="pending")
    assert site_rerender() is RerenderOutcome.DONE  # not a worker's pass: no giving way


def test_a_runner_that_lost_its_lease_commits_no_page_and_no_progress(
    site,  # noqa: F811
    settings,
    monkeypatch,
):
    articles = site.add(3)
    run_to_the_end()
    new_look(settings)
    settings.SITE_RERENDER_CHUNK = 1
    assert site_rerender(budget=0) is RerenderOutcome.MORE  # the run began: 1 page
    old_pages = [page(a.slug) for a in articles]
    position = checkpoint_read(RERENDER_CHECKPOINT)
    assert position["after"] == articles[0].pk
    stale = lease_take(name=RERENDER_JOB, job=RERENDER_JOB, seconds=60)
    lease_release(stale)
    newer = lease_take(name=RERENDER_JOB, job=RERENDER_JOB, seconds=60)  # took it over
    try:
        fence = Fence(JobLease.objects.filter(name=RERENDER_JOB), stale.token, fields=FIELDS)
        with pytest.raises(Overtaken):
            rerender.rerender_pass(site_storage(), fence=fence)
    finally:
        lease_release(newer)
    assert [page(a.slug) for a in articles] == old_pages
    assert checkpoint_read(RERENDER_CHECKPOINT) == position


def test_an_edit_whose_attempt_wrote_its_page_first_wins_over_the_rerender(site, settings):  # noqa: F811
    article, other = site.add(2)
    run_to_the_end()
    article.body = "The edited body."
    article.full_clean()
    article.save()
    article.refresh_from_db()
    site.publisher.publish(article)  # the edit's attempt wrote its page, not completed yet
    assert documents.page_content_hash(head(article.slug)) == article.content_hash

    new = new_look(settings)
    run_to_the_end()
    assert "The edited body." in page(article.slug)  # not the live version over it
    assert look.page_look(head(other.slug)) == new
    site.attempt(article)  # the edit completes: its content, in the new look
    assert "The edited body." in page(article.slug)
    assert look.page_look(head(article.slug)) == new


def test_a_missing_page_is_written_and_a_run_of_a_newer_process_is_left_alone(
    site,  # noqa: F811
    settings,
    monkeypatch,
):
    articles = site.add(2)
    run_to_the_end()
    (site.root / articles[0].slug / "index.html").unlink()
    new = new_look(settings)
    run_to_the_end()
    assert looks(articles) == [new, new]

    # A process started before the run began (an old one during a rolling deploy) does
    # not take the site back to its look, unless by hand (`rerender_site`: force).
    monkeypatch.setattr(look, "BORN", progress_read().born - 60)
    new_look(settings, "The old look")
    assert not rerender_wanted()
    assert site_rerender() is RerenderOutcome.DONE
    assert looks(articles) == [new, new]
    assert run_to_the_end(force=True) == 1
    assert looks(articles) == [look.look()] * 2


def test_the_dashboard_shows_the_progress_and_the_rate(site, settings, monkeypatch, client):  # noqa: F811
    from django.contrib.auth.models import User

    site.add(3)
    run_to_the_end()
    new = new_look(settings)
    settings.SITE_RERENDER_CHUNK = 2
    assert site_rerender(budget=0) is RerenderOutcome.MORE
    client.force_login(User.objects.create_user("op", is_staff=True, is_superuser=True))

    html = client.get("/admin/publishing/dashboard/?fragment=1").content.decode()
    section = html[html.index('id="bp-rerender"') :]
    assert new[:12] in section and "re-rendering" in section
    assert "2 of 3 page(s) (67%), 2 written" in section
    assert "pages/s" in section
    assert re.search(r"<th>Left</th><td class=\"bp-num\">1\b", section)

    run_to_the_end()
    html = client.get("/admin/publishing/dashboard/?fragment=1").content.decode()
    assert "every page" in html[html.index('id="bp-rerender"') :]


def test_rerender_site_runs_to_the_end_reports_and_again_rewrites_a_stray_old_page(
    site,  # noqa: F811
    settings,
):
    import json
    from io import StringIO

    from django.core.management import call_command

    articles = site.add(3)
    settings.SITE_RERENDER_CHUNK = 2
    old, old_title = look.look(), settings.SITE_TITLE
    new = new_look(settings)
    out = StringIO()
    call_command("rerender_site", stdout=out)
    assert json.loads(out.getvalue())["StaticSitePublisher"]["run"]["done"] == 3
    assert looks(articles) == [new] * 3

    # A page an old process wrote after the run passed it (a rolling deploy).
    settings.SITE_TITLE = old_title
    assert look.look() == old
    (live,) = rerender.selectors.live_versions_of([articles[0].pk])
    stray = documents.article_page(live)
    settings.SITE_TITLE = "A new look"
    site_storage().write(paths.page_file(articles[0].slug), stray)
    call_command("rerender_site", stdout=StringIO())  # the site is in this look: done
    assert looks(articles) == [old, new, new]
    call_command("rerender_site", "--again", stdout=StringIO())
    assert looks(articles) == [new] * 3

    out = StringIO()
    call_command("rerender_site", "--status", stdout=out)
    status = json.loads(out.getvalue())["StaticSitePublisher"]
    assert status["current"] and status["run"]["written"] == 1 and status["run"]["done"] == 3


def test_again_walks_a_site_already_in_this_look_reading_pages_not_writing_them(site):  # noqa: F811
    articles = site.add(3)
    run_to_the_end()
    first = progress_read()
    inodes = [(site.root / a.slug / "index.html").stat().st_ino for a in articles]
    assert site_rerender(again=True) is RerenderOutcome.DONE
    again = progress_read()
    assert again.started_at != first.started_at  # a new run, not the old one's end
    assert (again.done, again.written) == (3, 0)
    assert [(site.root / a.slug / "index.html").stat().st_ino for a in articles] == inodes


def test_a_site_in_a_bucket_is_rerendered_too(site, settings, s3_server):  # noqa: F811
    """The same pass against object storage (moto's S3 server): the pages' first bytes
    read with ranged GETs, each page made live by a conditional PUT."""
    for name, value in s3_server.settings_for(f"s3://{s3_server.new_bucket()}/site").items():
        setattr(settings, name, value)
    articles = site.add(3)
    new = new_look(settings)
    run_to_the_end()
    assert looks(articles) == [new] * 3
    assert all("A new look" in page(a.slug) for a in articles)


def test_in_a_bucket_a_page_written_after_the_read_is_judged_again_not_written_over(
    site,  # noqa: F811
    settings,
    s3_server,
    monkeypatch,
):
    """In a bucket each page is read once, before rendering, and its PUT is conditional
    on that read's ETag. Between the read and the chunk's guard an edit's attempt writes
    its article's page, and an older process writes the other's again in the old look:
    both PUTs are refused (412), both pages read again under the guard; the edit's newer
    page is kept, the other written in the new look, and the run needs no second walk."""
    for name, value in s3_server.settings_for(f"s3://{s3_server.new_bucket()}/site").items():
        setattr(settings, name, value)
    article, other = site.add(2)
    run_to_the_end()
    new = new_look(settings)
    write_chunk, calls = rerender._write_chunk, []

    def written_meanwhile(*args):  # the chunk read and rendered, its guard not taken yet
        if not calls:
            article.body = "The edited body."
            article.full_clean()
            article.save()
            article.refresh_from_db()
            site.publisher.publish(article)  # the edit's attempt writes its page
            rel = paths.page_file(other.slug)
            storage = site_storage()
            storage.write(rel, storage.read(rel) + b"\n")  # in the old look, a new ETag
        calls.append(1)
        return write_chunk(*args)

    monkeypatch.setattr(rerender, "_write_chunk", written_meanwhile)
    run_to_the_end()

    assert "The edited body." in page(article.slug)  # not the old live version over it
    assert look.page_look(head(other.slug)) == new
    run = rerender_status()["StaticSitePublisher"]["run"]
    assert (run["walk"], run["failed"], run["written"]) == (1, 0, 1), run
    site.attempt(article)  # the edit completes
    assert "The edited body." in page(article.slug)
    assert look.page_look(head(article.slug)) == new


def test_a_new_shared_look_rebuilds_the_archive_and_tag_pages_not_taken_back_by_an_older_process(
    site,  # noqa: F811
    settings,
    monkeypatch,
    tmp_path,
):
    """listing.html and tag.html changed (a theme): the next pass rebuilds the archive
    and every tag's page in the new shared look, without a publish; a process started
    before the one that did (a rolling deploy's old one) does not take them back."""
    site.add(1, tags=["Python"])
    site.add(50)
    run_to_the_end()  # the pages' run in this look: none wanted after the theme
    assert shared_views_pass()  # the rebuild a run that begins asks for
    built = SiteStateRow.objects.get()
    assert built.look == look.shared_look() and not built.rebuild
    original = settings.TEMPLATES
    mark = '<p class="theme-mark">new</p>'
    for name in ("listing.html", "tag.html"):
        source = Path(get_template(f"blogpublish/{name}").origin.name).read_text()
        theme = tmp_path / "theme" / "blogpublish" / name
        theme.parent.mkdir(parents=True, exist_ok=True)
        theme.write_text(source.replace("{% block main %}", "{% block main %}" + mark, 1))
    settings.TEMPLATES = [{**original[0], "DIRS": [str(tmp_path / "theme")]}]
    page_look = look.look()

    assert shared_views_pass()
    (tag_page,) = (site.root / "tag").glob("*/index.html")
    documents_now = [site.root / "index.html", site.root / "page" / "1" / "index.html", tag_page]
    assert all(mark in path.read_text() for path in documents_now)
    adopted = SiteStateRow.objects.get()
    assert adopted.look == look.shared_look() and not adopted.rebuild
    assert look.look() == page_look and not rerender_wanted()  # no page to write again

    # An older process of the old templates: its passes leave the archive in the new look.
    monkeypatch.setattr(look, "BORN", adopted.look_born - 60)
    settings.TEMPLATES = original
    assert shared_views_pass()
    assert mark in (site.root / "page" / "1" / "index.html").read_text()
    assert SiteStateRow.objects.get().look == adopted.look


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL ends the session")
@pytest.mark.parametrize("where", ["disk", "bucket"])
def test_a_runner_paused_past_its_guard_takes_back_the_page_of_an_article_deleted_meanwhile(
    site,  # noqa: F811
    settings,
    s3_server,
    monkeypatch,
    where,
):
    """A runner stops (SIGSTOP, a stalled VM) under its chunk's guard, before its
    writes, for longer than the guard's idle timeout: the server ends its session and
    the locks go with it; an article of the chunk is deleted and its page removed
    meanwhile. On resume the runner writes (in a bucket its PUT finds the page gone,
    reads it again as missing and makes it), then finds its guard broken at the
    checkpoint's save: the deleted article's page is taken back, not left until the
    full check, and the next run finishes with it gone (a review's reproduction)."""
    if where == "bucket":
        for name, value in s3_server.settings_for(f"s3://{s3_server.new_bucket()}/site").items():
            setattr(settings, name, value)
    article, other = site.add(2)
    run_to_the_end()
    new = new_look(settings)
    settings.PUBLISH_LEASE_SECONDS = 2  # the guard's idle timeout
    rel = paths.page_file(article.slug)
    storage_class, method = (
        (S3SiteStorage, "commit_each") if where == "bucket" else (LocalStorage, "commit_many")
    )
    commit, deleted = getattr(storage_class, method), threading.Event()
    guarded, runner = rerender._write_chunk, []

    def chunk(*args):  # only the re-render's writes pause (not the delete's own)
        runner.append(threading.get_ident())
        try:
            return guarded(*args)
        finally:
            runner.pop()

    def delete() -> None:  # another host: waits for the guard's locks, then deletes
        try:
            site.delete(Article.objects.get(pk=article.pk))
            deleted.set()
        finally:
            connection.close()

    def paused(self, staged):
        if threading.get_ident() in runner and not deleted.is_set():  # checked, not written
            thread = threading.Thread(target=delete)
            thread.start()
            # Idle in its transaction until the server ends the session: the deleter
            # gets the locks then.
            wait_for(deleted.is_set, timeout=60, what="the delete, once the guard's session ends")
            thread.join()
            assert site_storage().read(rel) is None, "the delete removed the page"
        return commit(self, staged)

    monkeypatch.setattr(storage_class, method, paused)
    monkeypatch.setattr(rerender, "_write_chunk", chunk)
    with pytest.raises(DatabaseError):
        run_to_the_end()
    connection.close()

    assert site_storage().read(rel) is None, "the deleted article's page is back"
    run_to_the_end()
    assert site_storage().read(rel) is None
    assert looks([other]) == [new]


@pytest.mark.parametrize("fails", [1, 99], ids=["fails once", "fails every time"])
def test_a_page_that_failed_is_tried_again_by_a_second_walk_and_one_that_always_fails_ends_the_run(
    site,  # noqa: F811
    settings,
    monkeypatch,
    client,
    fails,
):
    """A page not rendered (or not staged: a full disk) keeps its old look; the run walks
    the site once more for it, and reports what failed twice instead of calling the site
    current with a page in the old look."""
    settings.SITE_RERENDER_CHUNK = 3
    articles = site.add(7)
    run_to_the_end()
    new = new_look(settings)
    unlucky, left = articles[4], {"count": fails}
    render = documents.article_page

    def failing(live, **kwargs):
        if live.id == unlucky.pk and left["count"] > 0:
            left["count"] -= 1
            raise RuntimeError("the disk is full")
        return render(live, **kwargs)

    monkeypatch.setattr(documents, "article_page", failing)
    run_to_the_end()

    run = rerender_status()["StaticSitePublisher"]["run"]
    assert run["finished_at"] and run["walk"] == 2
    others = [a for a in articles if a.pk != unlucky.pk]
    assert looks(others) == [new] * 6  # the first walk wrote them; the second only read them
    if fails == 1:
        assert looks([unlucky]) == [new] and run["failed"] == 0
        assert run["written"] == 7
    else:  # two walks, then the run ends and says so (no loop over a page that cannot render)
        assert looks([unlucky]) != [new] and run["failed"] == 1
        assert run["written"] == 6
        assert not rerender_status()["StaticSitePublisher"]["current"]  # not "every page"
        from django.contrib.auth.models import User

        client.force_login(User.objects.create_user("op", is_staff=True, is_superuser=True))
        html = client.get("/admin/publishing/dashboard/?fragment=1").content.decode()
        section = html[html.index('id="bp-rerender"') :]
        assert "1 page(s) left in the old look" in section and "every page" not in section
        # The command says so and exits 1 (a CommandError), naming how many.
        from django.core.management import CommandError, call_command

        with pytest.raises(CommandError, match=r"old look.*'StaticSitePublisher': 1"):
            call_command("rerender_site", "--again", stdout=StringIO())


def test_a_page_an_older_process_wrote_after_the_run_is_mended_and_an_older_process_mends_nothing(
    site,  # noqa: F811
    settings,
):
    """During a rolling deploy an old worker can write a page in its look after the new
    look's run has passed it (a neighbour's publish rewriting its links). The new code's
    full check (and its passes' check of the pages they settle) writes it again in the
    site's look; the old code, whose look is not the run's, judges no look, so it never
    turns pages back."""
    from blogpublish.site import StaticSitePublisher
    from blogpublish.site.selectors import live_versions_of

    articles = site.add(4)
    run_to_the_end()
    old_title, old = settings.SITE_TITLE, look.look()
    new = new_look(settings)
    run_to_the_end()
    assert looks(articles) == [new] * 4

    stray = articles[1]
    settings.SITE_TITLE = old_title  # the old process, writing its page after the run
    [live] = live_versions_of([stray.pk])
    site_storage().write(paths.page_file(stray.slug), documents.article_page(live))
    assert looks([stray]) == [old]
    assert run_full_check(StaticSitePublisher())  # the old process's full check: no look judged
    assert looks(articles) == [new, old, new, new]

    settings.SITE_TITLE = "A new look"  # this release's full check
    assert look.look() == new
    assert run_full_check(StaticSitePublisher())
    assert looks(articles) == [new] * 4
    assert "A new look" in page(stray.slug)


def test_a_page_whose_neighbours_change_after_it_was_rendered_keeps_its_links_right(
    site,  # noqa: F811
    settings,
    monkeypatch,
):
    """A chunk is rendered, then written under its guard. An article published in
    between by an older process (a rolling deploy) has its pass write its neighbours'
    pages in the old look with the right links; the chunk's page rendered before, with
    the old links, is not written over them: the second walk renders it again."""
    from datetime import timedelta

    from tests.integration.test_site_neighbours import assert_links_follow_the_listing, links

    articles = site.add(3)  # a minute apart
    run_to_the_end()
    old_title = settings.SITE_TITLE
    new = new_look(settings)
    late = site.save(
        title="Late",
        slug="late",
        body="Published during the re-render.",
        publish_at=site.base + timedelta(minutes=2, seconds=30),  # between 2 and 3
    )
    write_chunk, calls = rerender._write_chunk, []

    def publish_meanwhile(*args):  # the chunk rendered, its guard not taken yet
        if not calls:
            settings.SITE_TITLE = old_title  # the older process
            site.attempt(late)  # its pass (at once, in this thread) mends 2's and 3's links
            settings.SITE_TITLE = "A new look"
        calls.append(1)
        return write_chunk(*args)

    monkeypatch.setattr(rerender, "_write_chunk", publish_meanwhile)

    run_to_the_end()

    assert links(site, articles[1].slug)["next"] == "/late/"
    assert looks([*articles, late]) == [new] * 4
    assert_links_follow_the_listing(site)


def test_rerender_site_renders_in_processes_the_pages_one_process_renders(
    site,  # noqa: F811
    settings,
    monkeypatch,
    tmp_path,
):
    """`rerender_site --processes 2`: the pages rendered by two forked processes (each
    page's renderer writes its pid down), and byte for byte the pages one process
    renders; the chunk's reads, guard and writes stay in the command's process."""
    from django.core.management import call_command

    articles = site.add(9)
    settings.SITE_RERENDER_CHUNK = 4
    new_look(settings)
    call_command("rerender_site", "--processes", "1", stdout=StringIO())
    alone = {a.slug: page(a.slug) for a in articles}
    for a in articles:
        (site.root / a.slug / "index.html").unlink()

    pids = tmp_path / "pids"
    render = documents.article_page

    def noted(live, **kwargs):
        with pids.open("a") as out:
            out.write(f"{os.getpid()}\n")
        # Until the other renderer has begun too: a renderer that finished its chunk
        # before the next was queued could take every chunk (the pool's scheduling),
        # and the test is of the pages being rendered in the processes, by both.
        wait_for(lambda: len(set(pids.read_text().split())) >= 2, what="both renderers")
        return render(live, **kwargs)

    monkeypatch.setattr(documents, "article_page", noted)
    call_command("rerender_site", "--again", "--processes", "2", stdout=StringIO())

    assert {a.slug: page(a.slug) for a in articles} == alone
    renderers = set(pids.read_text().split())
    assert len(renderers) == 2 and str(os.getpid()) not in renderers


def test_a_renderer_process_that_dies_leaves_the_rest_to_the_command_which_finishes(
    site,  # noqa: F811
    settings,
    monkeypatch,
):
    """A renderer process killed mid-chunk (here it exits while rendering one page): the
    command renders what is left in its own process and ends with every page in the new
    look, instead of failing the run or waiting for a page that will never come."""
    from django.core.management import call_command

    articles = site.add(6)
    settings.SITE_RERENDER_CHUNK = 3
    new = new_look(settings)
    command = os.getpid()
    render = documents.article_page

    def dying(live, **kwargs):
        if live.id == articles[1].pk and os.getpid() != command:
            os._exit(9)  # as a process killed mid-page
        return render(live, **kwargs)

    monkeypatch.setattr(documents, "article_page", dying)
    call_command("rerender_site", "--processes", "2", stdout=StringIO())

    assert looks(articles) == [new] * 6
    run = rerender_status()["StaticSitePublisher"]["run"]
    assert run["finished_at"] and run["failed"] == 0 and run["written"] == 6


def with_an_image(site, count: int) -> list[Article]:  # noqa: F811
    """`count` articles showing one uploaded image (its renditions a row of `Image`)."""
    from django.utils import timezone

    from blogpublish.desk.renditions import Copy, Renditions
    from blogpublish.models import Image

    sha = "a" * 64
    copies = (Copy(f"media/{sha}-400w.webp", 400, 200, "image/webp"),)
    Image.objects.create(
        path=f"media/{sha}.jpg",
        size=1,
        width=2000,
        height=1000,
        uploaded_at=timezone.now(),
        renditions=Renditions(2000, 1000, copies).as_json(),
    )
    return site.add(count, body=f"Text\n\n![A picture](/media/{sha}.jpg)\n")


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL ends the session")
def test_a_renderer_whose_connection_was_dropped_reads_renditions_on_a_new_one(
    site,  # noqa: F811
    settings,
    monkeypatch,
):
    """A renderer reads an image's renditions on a connection of its own, idle between
    chunks, where a server's idle timeout or a proxy may drop it: each renderer's is
    ended by the server after its first page here, and every later page with an image
    still gets its renditions (a new connection), none failing."""
    articles = with_an_image(site, 10)
    settings.SITE_RERENDER_CHUNK = 5
    new_look(settings)
    command, render = os.getpid(), documents.article_page
    ended = {"done": False}  # each renderer's own copy, after the fork

    def dropping(live, **kwargs):
        html = render(live, **kwargs)
        if os.getpid() != command and not ended["done"]:
            ended["done"] = True
            with contextlib.suppress(Exception), connection.cursor() as cursor:
                cursor.execute("SELECT pg_terminate_backend(pg_backend_pid())")
        return html

    monkeypatch.setattr(documents, "article_page", dropping)
    call_command("rerender_site", "--processes", "2", stdout=StringIO())

    run = rerender_status()["StaticSitePublisher"]["run"]
    assert run["failed"] == 0 and run["walk"] == 1, run
    assert all("srcset" in page(a.slug) for a in articles)


def test_renderers_that_cannot_all_start_leave_none_behind_and_the_command_renders(
    site,  # noqa: F811
    settings,
    monkeypatch,
    caplog,
):
    """The second fork fails (a process limit): the one forked is killed, not left for
    the interpreter's exit to wait on forever, and the command renders in its own
    process, saying so."""
    articles = site.add(4)
    new = new_look(settings)
    fork, forks = os.fork, {"n": 0}

    def limited() -> int:
        forks["n"] += 1
        if forks["n"] == 2:
            raise BlockingIOError(11, "Resource temporarily unavailable")
        return fork()

    monkeypatch.setattr(os, "fork", limited)
    call_command("rerender_site", "--processes", "3", stdout=StringIO())

    assert looks(articles) == [new] * 4
    assert "renderers not started" in caplog.text
    wait_for(lambda: not multiprocessing.active_children(), what="the killed renderer's exit")
    assert not multiprocessing.active_children()


def test_rerender_site_refuses_a_number_of_processes_out_of_range(site):  # noqa: F811
    from django.core.management import CommandError

    for wrong in ("0", "100000"):
        with pytest.raises(CommandError, match="--processes must be from 1 to"):
            call_command("rerender_site", "--processes", wrong, stdout=StringIO())


def test_a_pass_about_to_spend_its_budget_queues_no_chunk_ahead(
    site,  # noqa: F811
    settings,
    monkeypatch,
    tmp_path,
):
    """With renderers, the next chunk is queued before one is written, unless the time
    left is less than the last chunk took: the pass would stop after this one and throw
    the next one's rendering away (the renderers are quicker than the writes, so
    cancelling it then finds it rendered). Every page is rendered once."""
    articles = site.add(120)
    settings.SITE_RERENDER_CHUNK = 40
    new = new_look(settings)
    log, render = tmp_path / "renders", documents.article_page

    def noted(live, **kwargs):
        with log.open("a") as out:
            out.write(f"{live.id}\n")
        return render(live, **kwargs)

    monkeypatch.setattr(documents, "article_page", noted)
    # Asked before each chunk is written (may the next be queued?) and after it (go
    # on?): plenty, plenty, then a millisecond (less than a chunk of 40 takes), none.
    left = iter([5.0, 5.0, 0.001, 0.0])

    with renderers.render_processes(2):
        with monkeypatch.context() as budget:
            budget.setattr(Fence, "time_left", lambda self: next(left))
            assert site_rerender() is RerenderOutcome.MORE
        assert progress_read().done == 80
        run_to_the_end()

    assert looks(articles) == [new] * 120
    assert len(log.read_text().split()) == 120  # none rendered twice
