"""The site in object storage (SITE_ROOT=s3://BUCKET/PREFIX), built by a real worker
(prefork, concurrency 2) through Redis on the run's SQLite or PostgreSQL database,
into a real S3-compatible HTTP server (moto's server mode, tests/support/s3.py).

The worker of these tests needs the bucket in its environment, which the session's
worker does not have: it gets a queue of its own (as the webhook tests' worker does),
and this module's test process sends there too.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from django.core import checks
from django.db import connection
from django.test import override_settings

from blogpublish.site import StaticSitePublisher
from config.celery import app
from config.queues import celery_queues
from publishing.models import Article, ArticleStatus, PublishAttempt
from tests.integration.test_site import edit
from tests.support import processes
from tests.support.chaos import release
from tests.support.s3 import keys, mirror
from tests.support.settling import wait_session_worker_quiet, wait_settled
from tests.support.site import (
    assert_lists_exactly,
    moved_pages,
    read_listing,
    run_full_check,
    stale_page,
)
from tests.support.waiting import wait_for

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.broker,  # a worker of the module's own takes its messages: runs again on RabbitMQ
]

PREFIX = "blog/site"
SHARED = {
    "index.html",
    "feed.xml",
    "feed.json",
    "sitemap.xml",
    "robots.txt",
    "404.html",
    "favicon.svg",
}


class BucketSite:
    def __init__(self, server, bucket: str):
        self.server, self.bucket, self.client = server, bucket, server.client()

    @property
    def keys(self) -> set[str]:
        return keys(self.client, self.bucket, f"{PREFIX}/")

    def read(self, rel: str) -> bytes:
        return self.client.get_object(Bucket=self.bucket, Key=f"{PREFIX}/{rel}")["Body"].read()

    def head(self, rel: str) -> dict:
        return self.client.head_object(Bucket=self.bucket, Key=f"{PREFIX}/{rel}")

    def put(self, rel: str, body: bytes) -> None:
        self.client.put_object(Bucket=self.bucket, Key=f"{PREFIX}/{rel}", Body=body)

    def remove(self, rel: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=f"{PREFIX}/{rel}")

    def as_folder(self, tmp_path):
        return mirror(self.client, self.bucket, f"{PREFIX}/", tmp_path / "mirror")


@pytest.fixture(scope="module")
def bucket_site(s3_server, django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():  # nothing of an earlier test's left to run beside it
        wait_session_worker_quiet()
    bucket = s3_server.new_bucket()
    site_root = f"s3://{bucket}/{PREFIX}"
    default_queue = app.conf.task_default_queue
    queue = f"{default_queue}-s3"
    _, queues = celery_queues(queue)
    # Celery prepares its routes once per process, from the settings of that moment:
    # prepared now, with the session's, so that a catch-up sent by a later test goes to
    # the session's queue (this module sends none), and again after the module.
    app.amqp.router  # noqa: B018
    same_settings = override_settings(
        CELERY_TASK_DEFAULT_QUEUE=queue,
        CELERY_TASK_QUEUES=queues,
        **s3_server.settings_for(site_root),
    )
    same_settings.enable()
    app.conf.task_default_queue = queue  # as the webhook tests do
    worker = None
    try:
        worker = processes.start_worker(
            name="s3-worker",
            env={"BLOGPUBLISH_TEST_QUEUE": queue, **s3_server.env(site_root)},
        )
        yield BucketSite(s3_server, bucket)
    finally:
        if worker:
            worker.stop()
        with app.connection_for_write() as conn:  # leave nothing of this run in the broker
            for name in (q.name for q in queues):
                conn.default_channel.queue_delete(name)
        app.conf.task_default_queue = default_queue
        same_settings.disable()
        app.amqp.flush_routes()


@pytest.fixture
def site(bucket_site):
    """The bucket in line with the (emptied) database: earlier tests' rows were flushed
    without deletes, so their pages are orphans."""
    run_full_check(StaticSitePublisher())
    return bucket_site


def wait_listed(site: BucketSite, article: Article, timeout: float = 30.0) -> Article:
    wait_for(
        lambda: Article.objects.filter(
            pk=article.pk, status=ArticleStatus.PUBLISHED, published_hash=article.content_hash
        ).exists(),
        timeout=timeout,
        what=f"article {article.pk} to be published",
    )
    article.refresh_from_db()

    def listed() -> bool:
        if "index.html" not in site.keys:
            return False
        html = site.read("index.html").decode()
        return f'href="/{article.slug}/"' in html and article.title in html

    wait_for(listed, timeout=timeout, what=f"{article.slug} on the front page in the bucket")
    return article


def test_publish_edit_delete_under_concurrency_leave_the_bucket_exact(
    site, make_article, chaos, tmp_path
):
    # The first four are held in the publisher, so edits and deletes land in flight.
    slow = [f"s3-slow-{n}" for n in range(4)]
    for slug in slow:
        chaos(slug, hold=6)
    articles = [make_article(slug=slug, body=f"v1 of {slug}") for slug in slow]
    articles += [make_article(slug=f"s3-quick-{n}", body=f"v1 of quick {n}") for n in range(12)]
    by_slug = {a.slug: a for a in articles}

    def in_flight(slug: str) -> bool:
        return PublishAttempt.objects.filter(
            article=by_slug[slug], finished_at__isnull=True
        ).exists()

    wait_for(lambda: in_flight("s3-slow-0") and in_flight("s3-slow-1"), what="two attempts")
    edit(by_slug["s3-slow-0"], title="s3-slow-0 edited", body="v2 of s3-slow-0")
    by_slug.pop("s3-slow-1").delete()
    release("s3-slow-0")
    release("s3-slow-1")
    wait_for(lambda: in_flight("s3-slow-2"), what="s3-slow-2 running")
    moved = by_slug.pop("s3-slow-2")
    edit(moved, slug="s3-slow-2-moved", body="v2 of s3-slow-2-moved")
    by_slug[moved.slug] = moved
    release("s3-slow-2")
    wait_for(lambda: in_flight("s3-slow-3"), what="s3-slow-3 running")
    by_slug.pop("s3-slow-3").delete()
    release("s3-slow-3")
    edit(by_slug["s3-quick-10"], title="s3-quick-10 edited", body="v2 of quick 10")
    by_slug.pop("s3-quick-11").delete()
    wait_listed(site, by_slug["s3-quick-0"])
    by_slug.pop("s3-quick-0").delete()
    edit(by_slug["s3-quick-1"], body="v2 of quick 1")

    wait_settled()

    live = list(Article.objects.order_by("-publish_at", "-id"))
    assert {a.slug for a in live} == set(by_slug)
    assert all(a.status == ArticleStatus.PUBLISHED for a in live)
    # Exactly the live pages and the shared documents: nothing of a deleted article,
    # of the old slug (never live: no former address), or of a half-finished write.
    assert site.keys == SHARED | {"sitemap-1.xml"} | {f"{a.slug}/index.html" for a in live}
    assert_lists_exactly(site.as_folder(tmp_path), [a.slug for a in live])
    for article in live:
        page = site.read(f"{article.slug}/index.html").decode()
        assert article.body in page and article.title in page, article.slug


def test_every_object_carries_its_content_type_and_cache_control(site, make_article):
    wait_listed(site, make_article(title="Typed", slug="s3-typed"))
    wait_settled()

    types = {rel: site.head(rel)["ContentType"] for rel in site.keys}
    assert types == {
        "index.html": "text/html; charset=utf-8",
        "s3-typed/index.html": "text/html; charset=utf-8",
        "feed.xml": "application/atom+xml",
        "sitemap.xml": "application/xml",
        "sitemap-1.xml": "application/xml",
        "robots.txt": "text/plain",
        "feed.json": "application/feed+json",
        "404.html": "text/html; charset=utf-8",
        "favicon.svg": "image/svg+xml",
    }
    assert {site.head(rel)["CacheControl"] for rel in site.keys} == {"public, max-age=60"}


def test_reconcile_repairs_a_deleted_and_a_stray_object(site, make_article, tmp_path):
    kept = wait_listed(site, make_article(title="Kept", slug="s3-kept", body="kept *body*"))
    other = wait_listed(site, make_article(title="Other", slug="s3-other"))
    wait_settled()
    page_before = site.read("s3-kept/index.html")
    # Deleted by hand: a live page and the feed. Strays: the page of an article that
    # no longer exists, an archive page past the end, a sitemap chunk past the end.
    site.remove("s3-kept/index.html")
    site.remove("feed.xml")
    site.put("s3-gone/index.html", stale_page("<p>an orphan</p>").encode())
    site.put("page/7/index.html", b"<p>past the end</p>")
    site.put("sitemap-9.xml", b"<urlset/>")
    # And a wrong document: the front page overwritten.
    site.put("index.html", b"<p>defaced</p>")

    run_full_check(StaticSitePublisher())

    assert site.keys == SHARED | {"sitemap-1.xml", "s3-kept/index.html", "s3-other/index.html"}
    assert site.read("s3-kept/index.html") == page_before
    assert site.head("s3-kept/index.html")["ContentType"] == "text/html; charset=utf-8"
    assert site.head("index.html")["ContentType"] == "text/html; charset=utf-8"
    assert_lists_exactly(site.as_folder(tmp_path), [other.slug, kept.slug])


def test_a_moved_articles_old_key_sends_readers_on_and_the_full_check_keeps_it(
    site, make_article, tmp_path
):
    article = wait_listed(site, make_article(title="Moving", slug="s3-before"))
    edit(article, slug="s3-after", body="Moved.")
    wait_listed(site, article)
    wait_for(lambda: "s3-before/index.html" in site.keys, what="the old key's page")
    wait_settled()

    assert site.keys == SHARED | {"sitemap-1.xml", "s3-before/index.html", "s3-after/index.html"}
    moved = site.read("s3-before/index.html").decode()
    assert 'http-equiv="refresh" content="0; url=/s3-after/"' in moved
    assert site.head("s3-before/index.html")["ContentType"] == "text/html; charset=utf-8"

    site.remove("s3-before/index.html")
    run_full_check(StaticSitePublisher())

    assert site.read("s3-before/index.html").decode() == moved
    folder = site.as_folder(tmp_path)
    assert moved_pages(folder) == {"s3-before": "s3-after"}
    assert_lists_exactly(folder, ["s3-after"])


def test_the_blog_is_served_from_the_bucket(site, make_article, client):
    article = wait_listed(site, make_article(title="Served", slug="s3-served", body="*hi*"))

    page = client.get(f"/{article.slug}/")
    front = client.get("/")
    feed = client.get("/feed.xml")

    assert page.status_code == 200 and b"<em>hi</em>" in page.content
    assert page["Content-Type"] == "text/html; charset=utf-8"
    assert read_listing_from(front.content).slugs[:1] == [article.slug]
    assert feed["Content-Type"].startswith("application/atom+xml")
    assert client.get(f"/{article.slug}")["Location"] == f"/{article.slug}/"
    assert client.get("/s3-no-such-page/").status_code == 404


def read_listing_from(html: bytes):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "index.html"
        path.write_bytes(html)
        return read_listing(path)


def test_sqlite_with_object_storage_is_a_warning_at_start_up(site):
    found = [m for m in checks.run_checks() if m.id == "blogpublish.W001"]

    if connection.vendor == "sqlite":
        (warning,) = found
        assert "SQLite" in warning.msg and "one host" in warning.hint
    else:
        assert found == []


def test_a_batch_puts_its_pages_and_fences_a_row_edited_meanwhile(site, monkeypatch):
    """The batch path (StaticSitePublisher.publish_many) on object storage: no rename,
    no fsync, a PUT per page under one page guard; a row edited after its page was
    rendered is not PUT, and the others are live."""
    from blogpublish.storage.base import SiteStorage
    from publishing.services import publish_group
    from publishing.tasks import publish_article
    from tests.integration.test_batch_site import edit
    from tests.integration.test_batches import all_published, backlog

    articles = backlog("s3-batch", 5)
    edited, others = articles[1], articles[:1] + articles[2:]
    stage_many = SiteStorage.stage_many

    def edit_then_stage(self, items):
        edit(edited)  # after the batch rendered the old content, before its guard
        return stage_many(self, items)

    monkeypatch.setattr(SiteStorage, "stage_many", edit_then_stage)

    report = publish_group(retry_in=publish_article.backoff, limit=5, worker="here")

    assert report.outcomes == {"published": 4, "changed": 1}
    assert all_published(others)
    assert f"{edited.slug}/index.html" not in site.keys
    for article in others:
        page = site.read(f"{article.slug}/index.html").decode()
        assert f"Body {article.slug.rsplit('-', 1)[1]}." in page
        assert site.head(f"{article.slug}/index.html")["ContentType"].startswith("text/html")
