"""Previous and next links on article pages (issue 21, item 7): a publish, a delete, a new
date, title or slug changes the pages of the neighbours too, and once the site is quiet
every page is exactly what the site would write now (the restore check's comparison,
byte for byte), written by the refresher's pass after the outcome; the full check
mends a neighbour's page a pass missed. The real pipeline services, in-process."""

from __future__ import annotations

import json
import logging
import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from blogpublish.models import PageNote
from blogpublish.site import paths, selectors
from blogpublish.site.check import installation_check
from blogpublish.storage import site_storage
from publishing.models import Article, ArticleStatus
from publishing.services import Outcome, publish_group
from tests.integration.test_site_builder import Site, site  # noqa: F401  (the fixture)
from tests.support.site import run_full_check

pytestmark = pytest.mark.django_db(transaction=True)

LINK = re.compile(r'<a rel="(prev|next)" href="([^"]*)">')


def links(site: Site, slug: str) -> dict[str, str]:  # noqa: F811
    page = (site.root / paths.page_file(slug)).read_text(encoding="utf-8")
    return dict(LINK.findall(page))


def assert_links_follow_the_listing(site: Site) -> None:  # noqa: F811
    newest_first = site.newest_first()
    for i, slug in enumerate(newest_first):
        expected = {}
        if i + 1 < len(newest_first):
            expected["prev"] = paths.article_href(newest_first[i + 1])
        if i > 0:
            expected["next"] = paths.article_href(newest_first[i - 1])
        assert links(site, slug) == expected, slug
    report = installation_check(site_storage())
    assert [p for p in report.problems if "page" in p] == []


def test_each_publish_links_its_older_neighbour_to_it(site):  # noqa: F811
    first, second = site.add(2)
    assert links(site, first.slug) == {"next": "/article-2/"}
    assert links(site, second.slug) == {"prev": "/article-1/"}

    site.add(1)

    assert links(site, second.slug) == {"prev": "/article-1/", "next": "/article-3/"}
    assert_links_follow_the_listing(site)


def test_new_links_are_logged_as_routine_and_a_missing_page_as_a_repair(site, caplog):  # noqa: F811
    """A publish gives its older neighbour a next link: its page written again is the
    pipeline's routine (INFO, with why); a page found missing is a repair (WARNING)."""
    first, _second = site.add(2)
    caplog.set_level(logging.INFO, logger="blogpublish.site.publisher")

    def rewrites() -> list[tuple[str, str]]:
        return [
            (record.levelname, record.getMessage())
            for record in caplog.records
            if record.getMessage().startswith("writing the page")
        ]

    caplog.clear()
    site.add(1)
    assert rewrites() == [
        (
            "INFO",
            "writing the page article-2/index.html again: its previous or next article changed",
        )
    ]
    caplog.clear()
    (site.root / paths.page_file(first.slug)).unlink()
    run_full_check(site.publisher)
    assert rewrites() == [("WARNING", "writing the page article-1/index.html again: it is missing")]


def test_delete_new_date_title_and_slug_edits_reach_the_neighbours(site):  # noqa: F811
    articles = site.add(6)

    site.delete(articles[2])  # article-3: 2 and 4 now link to each other
    assert links(site, "article-2")["next"] == "/article-4/"
    assert links(site, "article-4")["prev"] == "/article-2/"

    site.edit(articles[0], publish_at=site.base + timedelta(days=1))  # the oldest, now newest
    assert links(site, "article-6")["next"] == "/article-1/"
    site.edit(articles[3], title="Renamed 你好")  # the link text of 2's next and 5's prev
    assert "Renamed 你好" in (site.root / "article-5" / "index.html").read_text()
    site.edit(articles[4], slug="moved-5")
    assert links(site, "article-4")["next"] == "/moved-5/"
    assert_links_follow_the_listing(site)


def test_a_new_date_links_the_old_neighbours_to_each_other(site):  # noqa: F811
    """The middle of five moved to newest: the pass after its publish checks its
    neighbours where it was (the note's listed date) and where it is. Read by article
    id, its new place's neighbours stood in for its old place's, and 2 and 4 kept
    their links to 3 until the full check (review 21)."""
    articles = site.add(5)

    site.edit(articles[2], publish_at=site.base + timedelta(days=1))

    assert links(site, "article-2") == {"prev": "/article-1/", "next": "/article-4/"}
    assert links(site, "article-4") == {"prev": "/article-2/", "next": "/article-5/"}
    assert links(site, "article-5") == {"prev": "/article-4/", "next": "/article-3/"}
    assert_links_follow_the_listing(site)


def test_a_delete_and_a_publish_again_of_its_id_at_a_new_date_settled_in_one_pass(
    site,  # noqa: F811
    monkeypatch,
):
    """A story withdrawn (its article deleted) and published again has an article of
    the same id. When one pass settles both (the delete's note keeps where it was
    listed), the pages of its neighbours where it was and where it is now are checked."""
    articles = site.add(5)
    middle = articles[2]
    middle_id = middle.pk  # the delete sets the instance's to None
    publisher = type(site.publisher)
    with monkeypatch.context() as no_pass:  # no refresh between the two
        no_pass.setattr(publisher, "refresh", lambda self, **kwargs: True)
        site.delete(middle)
        again = Article(
            pk=middle_id,
            title=middle.title,
            slug=middle.slug,
            body=middle.body,
            publish_at=site.base + timedelta(days=1),
        )
        again.full_clean()
        again.save()
        site.attempt(again)
    assert PageNote.objects.filter(article_id=middle_id, was_listed=True).exists()

    site.publisher.refresh()

    assert links(site, "article-2")["next"] == "/article-4/"
    assert links(site, "article-4")["prev"] == "/article-2/"
    assert_links_follow_the_listing(site)


def test_full_check_mends_a_neighbours_page_a_pass_missed(site):  # noqa: F811
    _first, second = site.add(2)
    before = (site.root / paths.page_file(second.slug)).read_bytes()
    site.add(1)
    # As if the pass's check had failed: article-2's page without its next link again.
    (site.root / paths.page_file(second.slug)).write_bytes(before)
    assert links(site, second.slug) == {"prev": "/article-1/"}

    run_full_check(site.publisher)

    assert_links_follow_the_listing(site)


def test_a_batchs_pages_link_to_each_other_and_between_older_articles(site):  # noqa: F811
    """A backlog's group (publish_many) renders its pages with the group as listed; the
    older articles it lands between are written again by the pass after it."""
    site.add(3)  # article-1 … 3, a minute apart
    rows = []
    for n, minutes in enumerate((1.5, 2.5, 2.6, 9)):  # between 1 and 2, 2 and 3, the newest
        article = Article(
            title=f"Imported {n}",
            slug=f"imported-{n}",
            body=f"Imported body {n}.",
            publish_at=site.base + timedelta(minutes=minutes),
        )
        article.full_clean()
        article.content_hash = article._content_hash()
        rows.append(article)
    Article.objects.bulk_create(rows)

    report = publish_group(retry_in=lambda n: 0, limit=10, worker="here")

    assert [r.outcome for r in report.results] == [Outcome.PUBLISHED] * 4, report
    assert links(site, "imported-1") == {"prev": "/article-2/", "next": "/imported-2/"}
    assert links(site, "article-2") == {"prev": "/imported-0/", "next": "/imported-1/"}
    assert_links_follow_the_listing(site)


def test_an_article_listed_while_the_full_check_runs_has_its_neighbours_checked(
    site,  # noqa: F811
    monkeypatch,
):
    """The full check reads the pages first, then rebuilds the shared views, settling
    the notes it finds. An article published in between (the deploy drill's race) is
    settled by that rebuild: its neighbours' pages are checked then, as after a
    refresh, not left with a stale link until the next full check."""
    _first, second, third = site.add(3)  # a minute apart
    publisher = type(site.publisher)
    sweep = publisher._sweep_images

    def publish_meanwhile(self) -> None:  # after the pages were read, before the rebuild
        sweep(self)
        with monkeypatch.context() as no_pass:  # no refresh settles its note first
            no_pass.setattr(publisher, "refresh", lambda self, **kwargs: True)
            site.attempt(late)

    late = site.save(
        title="Late",
        slug="late",
        body="Published during the check.",
        publish_at=site.base + timedelta(minutes=2, seconds=30),  # between 2 and 3
    )
    monkeypatch.setattr(publisher, "_sweep_images", publish_meanwhile)

    run_full_check(site.publisher)

    assert links(site, second.slug)["next"] == "/late/"
    assert links(site, third.slug)["prev"] == "/late/"
    assert_links_follow_the_listing(site)


def test_a_pass_killed_before_its_check_leaves_the_check_to_the_next_pass(
    site,  # noqa: F811
    monkeypatch,
):
    """A pass commits (its notes consumed), then checks the pages of what it settled and
    their neighbours. A worker killed between the two leaves that check to the next
    pass (it was saved with the pass), not to the next full check."""
    _first, second = site.add(2)
    publisher = type(site.publisher)

    def killed(self, article_ids):  # the pass has committed; its check dies
        raise SystemExit("killed")

    with monkeypatch.context() as kill:
        kill.setattr(publisher, "_write_live_pages", killed)
        with pytest.raises(SystemExit):
            site.add(1)  # article-3: published, its pass committed, 2's page not rewritten
    assert "next" not in links(site, second.slug)
    assert Article.objects.filter(slug="article-3", status="published").exists()

    site.publisher.refresh()  # the next pass: no note left to settle

    assert links(site, second.slug)["next"] == "/article-3/"
    assert_links_follow_the_listing(site)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's plan")
def test_a_window_of_neighbours_reads_its_range_of_the_listing_not_all_of_it(transactional_db):
    """The neighbours of many keys (a group's pages, a pass's) are one window of the
    listing's index: the rows it reads follow the window, not the site. Written as
    "neither older than the first key nor newer than the last", the window sought no
    index and read every listed row's entry, for every group published."""
    start = timezone.now() - timedelta(days=30)
    Article.objects.bulk_create(
        Article(
            title=f"Listed {i}",
            slug=f"listed-{i}",
            body="Listed.",
            status=ArticleStatus.PUBLISHED,
            publish_at=start + timedelta(minutes=i),
            content_hash="c",
            published_hash="c",
            published_slug=f"listed-{i}",
            published_title=f"Listed {i}",
            published_body="Listed.",
            published_publish_at=start + timedelta(minutes=i),
            published_at=start,
        )
        for i in range(2000)
    )
    keys = list(
        Article.objects.order_by("publish_at", "id").values_list("publish_at", "id")[1000:1025]
    )
    with CaptureQueriesContext(connection) as captured:
        found = selectors.neighbours_many(keys)
    assert found[keys[0][1]].newer.id == keys[1][1]  # the window's own answer, as a check
    (statement,) = [q["sql"] for q in captured.captured_queries]
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE publishing_article")
        cursor.execute("SET enable_seqscan = off")  # the index or nothing: is a range sought?
        try:
            cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {statement}")
            (plan,) = cursor.fetchone()[0]
        finally:
            cursor.execute("RESET enable_seqscan")

    def rows_read(node: dict) -> int:
        own = node.get("Actual Rows", 0) + node.get("Rows Removed by Filter", 0)
        leaf = "Scan" in node["Node Type"]
        return (own if leaf else 0) + sum(rows_read(n) for n in node.get("Plans", []))

    assert rows_read(plan["Plan"]) < 100, json.dumps(plan["Plan"])[:2000]


def test_the_checks_report_names_no_page_published_while_it_reads(site, monkeypatch):  # noqa: F811
    """The read-only check lists the site, then reads which pages are needed: an article
    published right after the database was read (its page written after the listing)
    is not reported as a page no article has."""
    site.add(2)
    owned = selectors.owned_slugs

    def owned_then_a_publish(*args, **kwargs):
        needed = owned(*args, **kwargs)
        site.add(1)  # committed and written after this read
        return needed

    monkeypatch.setattr("blogpublish.site.check.selectors.owned_slugs", owned_then_a_publish)

    report = installation_check(site_storage())

    assert [p for p in report.problems if "no article has it" in p] == []
    assert (site.root / paths.page_file("article-3")).exists()
