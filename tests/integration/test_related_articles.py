"""Related articles on an article's page (issue 21, item 7): the listed articles sharing
the most of its tags, then the newest, at most three; nothing without tags. Read at the
page's render (docs/site.md, "Related articles"): a batch's group reads them in one
query, and a related article's later retitle shows at the page's next render, which
the restore check does not count as a stale page. The real pipeline services,
in-process."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from blogpublish.site import documents, paths, selectors
from blogpublish.site.check import installation_check
from blogpublish.storage import site_storage
from publishing.db import EpochMicroseconds, epoch_micros, utc_datetime
from publishing.models import Article, ArticleTag
from publishing.services import Outcome, publish_group
from tests.integration.test_site_builder import Site, site  # noqa: F401  (the fixture)

pytestmark = pytest.mark.django_db(transaction=True)

RELATED = re.compile(r'<aside class="related".*?</aside>', re.DOTALL)
LINK = re.compile(r'<a href="/([^"]*)/">')


def related_on(site: Site, slug: str) -> list[str]:  # noqa: F811
    """The slugs the page's related section links, in its order ([] without one)."""
    page = (site.root / paths.page_file(slug)).read_text(encoding="utf-8")
    section = RELATED.search(page)
    return LINK.findall(section[0]) if section else []


def test_most_shared_tags_first_then_newest_at_most_three(site):  # noqa: F811
    site.add(1, tags=["python", "web", "db"])  # article-1: shares three with the last
    site.add(1, tags=["python"])  # article-2: one
    site.add(1, tags=["PYTHON", "web"])  # article-3: two (one tag, whatever its case)
    site.add(1, tags=["python"])  # article-4: one, newer than article-2
    site.add(1, tags=["other"])  # article-5: none
    site.add(1)  # article-6: no tags
    site.add(1, slug="last", tags=["Python", "web", "db"])

    assert related_on(site, "last") == ["article-1", "article-3", "article-4"]
    assert related_on(site, "article-6") == []  # no tags: no section
    assert related_on(site, "article-5") == []  # no article shares its tag
    # Each page lists what was listed when it was last rendered: article-1's when
    # article-2's publish gave it a next link (its neighbours' pass wrote it again).
    assert related_on(site, "article-1") == ["article-2"]


def test_a_related_articles_retitle_shows_at_the_pages_next_render(site):  # noqa: F811
    [first] = site.add(1, tags=["python"])
    site.add(1)  # between them: the last one's neighbour, not the first
    [last] = site.add(1, tags=["python"])
    assert related_on(site, last.slug) == [first.slug]
    site.edit(first, title="A new title")

    page = (site.root / paths.page_file(last.slug)).read_text(encoding="utf-8")
    assert "Article 1</a>" in RELATED.search(page)[0]  # stale until its next render
    report = installation_check(site_storage())
    assert [p for p in report.problems if "page" in p] == []  # and not a problem

    site.edit(last, body="Edited.")

    page = (site.root / paths.page_file(last.slug)).read_text(encoding="utf-8")
    assert "A new title</a>" in RELATED.search(page)[0]


def test_withdrawn_and_deleted_articles_are_not_related(site):  # noqa: F811
    first, second, third = site.add(3, tags=["python"])
    site.delete(second)

    assert [e.slug for e in selectors.related(["python"], third.pk)] == [first.slug]
    assert selectors.related([], third.pk) == []
    assert selectors.related(["no such tag"], third.pk) == []


def test_a_deleted_candidate_gives_its_place_to_the_next(site, monkeypatch):  # noqa: F811
    """The candidates come from the tags' index alone, the names of the best from the
    listing: one deleted in between (here, an id the listing never had, ranked first)
    is dropped, and the next best takes its place, so the page still lists three."""
    first, second, third, fourth = site.add(4, tags=["python"])
    read = selectors._related_candidates
    ghost = max(a.pk for a in (first, second, third, fourth)) + 1000

    def with_a_ghost(keys):
        found = read(keys)
        newest = epoch_micros(datetime.now(UTC) + timedelta(days=1))
        return {key: [(ghost, newest), *rows] for key, rows in found.items()}

    monkeypatch.setattr(selectors, "_related_candidates", with_a_ghost)

    found = selectors.related(["python"], fourth.pk)

    assert [e.slug for e in found] == [third.slug, second.slug, first.slug]


def test_a_batchs_group_reads_its_related_articles_in_one_query(site):  # noqa: F811
    """publish_many renders a group's pages with one query for all their related
    articles, however many pages and tags, the group's own articles counted as listed
    (as its previous and next links count them)."""
    site.add(3, tags=["python", "web"])
    rows = []
    for n in range(6):
        article = Article(
            title=f"Imported {n}",
            slug=f"imported-{n}",
            body=f"Imported body {n}.",
            publish_at=site.base + timedelta(hours=1, minutes=n),
            tags=["python", f"only-{n}"] if n % 2 else ["web"],
        )
        article.full_clean()
        article.content_hash = article._content_hash()
        rows.append(article)
    Article.objects.bulk_create(rows)

    with CaptureQueriesContext(connection) as queries:
        report = publish_group(retry_in=lambda n: 0, limit=10, worker="here")

    assert [r.outcome for r in report.results] == [Outcome.PUBLISHED] * 6, report
    # One for the group's six pages, one for the page the pass after it writes again
    # (article-3's, for its next link): never one a page. (A statement reads the
    # candidates of every tag: a UNION ALL, or on PostgreSQL a LATERAL join; the tags'
    # own pages read their articles by tag id, not by key.)
    related_queries = [
        q
        for q in queries
        if '"publishing_tag" U0' in q["sql"] and "publishing_articletag" in q["sql"]
    ]
    assert len(related_queries) == 2, [q["sql"][:200] for q in related_queries]
    # The group's articles count as listed: they are related to each other from the start.
    assert related_on(site, "imported-1") == ["imported-5", "imported-3", "article-3"]
    assert related_on(site, "imported-0") == ["imported-4", "imported-2", "article-3"]


def test_the_candidates_of_a_tag_are_its_newest_only(site, monkeypatch):  # noqa: F811
    """A tag's candidates are one range of its index: its newest RELATED_PER_TAG."""
    monkeypatch.setattr(selectors, "RELATED_PER_TAG", 2)
    site.add(4, tags=["python"])

    found = selectors.related(["python"], None)

    assert [e.slug for e in found] == ["article-4", "article-3"]
    page = documents.article_page(Article.objects.get(slug="article-1"))
    assert 'href="/article-4/">Article 4</a>' in RELATED.search(page)[0]


def test_one_statement_for_many_values_reads_what_a_query_a_value_reads(site):  # noqa: F811
    """selectors._union_per: the query compiled once with each value put in its place
    (a LATERAL join on PostgreSQL, a UNION ALL elsewhere), or, for a query whose SQL
    changes with the value, each compiled on its own: the rows of each value are those
    its own query reads."""
    articles = site.add(5, tags=["python"])
    ids = [a.pk for a in articles]

    def newest_below(limit: int):  # the value a parameter: compiled once
        return selectors.listed().filter(pk__lt=limit).order_by("-id").values("id")[:2]

    def among(count: int):  # the value changes the SQL (an IN list): each on its own
        return selectors.listed().filter(pk__in=ids[:count]).order_by("-id").values("id")[:2]

    for make, values, sentinels in (
        (newest_below, [ids[1], ids[3], ids[4] + 1], (-1, -2)),
        (among, [1, 3, 5], (1, 2)),
    ):
        # Twice with a key: the second call reuses the first's compiled query.
        for key in (None, ("test", make.__name__), ("test", make.__name__)):
            sql, params = selectors._union_per(make, values, sentinels=sentinels, key=key)
            with connection.cursor() as cursor:
                cursor.execute(sql, params)
                found: dict[int, set[int]] = {}
                for number, article_id in cursor.fetchall():
                    found.setdefault(values[number], set()).add(article_id)
            assert found == {v: {row["id"] for row in make(v)} for v in values}, key


def test_dates_read_as_integers_are_the_stored_dates_on_either_database(site):  # noqa: F811
    """EpochMicroseconds (the candidates' dates): through the ORM, on PostgreSQL and on
    SQLite alike, the microseconds since 1970 of each stored date, before 1970 and with
    a fraction too; and SQL that `_union_per` can compile once."""
    articles = site.add(3, tags=["python"])
    moments = [
        site.base.replace(microsecond=123456),
        datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        site.base.replace(microsecond=0),
    ]
    for article, moment in zip(articles, moments, strict=True):
        ArticleTag.objects.filter(article=article).update(publish_at=moment)
    rows = ArticleTag.objects.filter(article__in=articles).order_by("article_id")

    read = list(rows.annotate(at=EpochMicroseconds("publish_at")).values_list("at", flat=True))

    assert read == [epoch_micros(moment) for moment in moments]
    assert [utc_datetime(at) for at in read] == moments
    # `_union_per` compiles it once and puts each value in its place by its "%s":
    # there must be one a parameter, none in the expression's own SQL.
    sql, params = rows.annotate(at=EpochMicroseconds("publish_at")).query.sql_with_params()
    assert sql.count("%s") == len(params)


def test_a_tags_candidates_are_read_from_the_end_of_its_range(site):  # noqa: F811
    """The candidates' read takes RELATED_PER_TAG index entries of each tag, however
    many articles carry it: the tag's id looked up first (a subquery), so the index
    range is read backwards and stopped at the limit. Joined to the tag, PostgreSQL read
    and sorted the tag's whole range (3,000 rows a tag of a site of 10,000 with ten
    tags, 12 ms for ten tags: docs/performance.md, "Tags in use")."""
    [tagged] = site.add(1, tags=["python", "web"])
    tags = list(ArticleTag.objects.filter(article=tagged).values_list("tag_id", "publish_at"))
    many = Article.objects.bulk_create(
        Article(title=f"Row {n}", slug=f"row-{n}", body="Body.") for n in range(400)
    )
    ArticleTag.objects.bulk_create(
        ArticleTag(article=article, tag_id=tag_id, publish_at=at - timedelta(minutes=n + 1))
        for n, article in enumerate(many)
        for tag_id, at in tags
    )
    keys = ["python", "web"]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("ANALYZE publishing_articletag")
            cursor.execute("ANALYZE publishing_tag")
    found = selectors._related_candidates(keys)
    assert [len(found[key]) for key in keys] == [selectors.RELATED_PER_TAG] * 2
    assert {rows[0][0] for rows in found.values()} == {tagged.pk}  # the newest first

    sql, params = selectors._union_per(selectors._candidates, keys, sentinels=("a", "b"))
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params)
            read = _rows_read(cursor.fetchone()[0][0]["Plan"], "publishing_articletag")
            assert read <= selectors.RELATED_PER_TAG * len(keys), read
        else:
            cursor.execute("EXPLAIN QUERY PLAN " + sql, params)
            steps = [row[-1] for row in cursor.fetchall()]
            assert not [s for s in steps if "TEMP B-TREE" in s], steps
            assert [s for s in steps if "tag_listed_idx" in s], steps


def _rows_read(plan: dict, table: str) -> int:
    """The rows a plan's scans of `table` returned, all loops counted."""
    own = plan["Actual Rows"] * plan["Actual Loops"] if plan.get("Relation Name") == table else 0
    return own + sum(_rows_read(child, table) for child in plan.get("Plans", ()))
