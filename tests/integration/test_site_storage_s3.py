"""The site's object storage (blogpublish.storage.s3) against a real S3-compatible HTTP
server (moto's server mode, tests/support/s3.py): every object with its type and cache
control, listings paginated, nothing outside the prefix touched, and an endpoint that
does not answer is a clear, bounded error that makes the attempt a retry."""

from __future__ import annotations

import contextlib
import io
import socket
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.test import override_settings
from django.utils import timezone

from blogpublish.exceptions import StorageError
from blogpublish.site import StaticSitePublisher
from blogpublish.site.state import CHECKS_CHECKPOINT
from blogpublish.storage import site_storage
from blogpublish.storage.s3 import S3SiteStorage
from publishing.exceptions import TransientPublishError
from publishing.models import Article, ArticleStatus
from publishing.services.refresh import shared_views_pass
from tests.support.broker import broker
from tests.support.processes import free_port
from tests.support.s3 import HeldPuts, keys
from work.checkpoints import checkpoint_read


@pytest.fixture
def bucket(s3_server) -> str:
    return s3_server.new_bucket()


@pytest.fixture
def storage(s3_server, bucket):
    """SITE_ROOT=s3://<bucket>/site for this test."""
    with override_settings(**s3_server.settings_for(f"s3://{bucket}/site")):
        storage = site_storage()
        assert isinstance(storage, S3SiteStorage)
        yield storage


@pytest.mark.parametrize(
    ("rel", "content_type"),
    [
        ("index.html", "text/html; charset=utf-8"),
        ("page/3/index.html", "text/html; charset=utf-8"),
        ("你好/index.html", "text/html; charset=utf-8"),
        ("feed.xml", "application/atom+xml"),
        ("sitemap.xml", "application/xml"),
        ("sitemap-2.xml", "application/xml"),
    ],
)
def test_every_object_has_its_content_type_and_cache_control(
    storage, s3_server, bucket, rel, content_type
):
    storage.write(rel, "<p>中文</p>")

    head = s3_server.client().head_object(Bucket=bucket, Key=f"site/{rel}")
    assert head["ContentType"] == content_type
    assert head["CacheControl"] == "public, max-age=60"
    assert storage.read(rel) == "<p>中文</p>".encode()
    assert storage.exists(rel)


def test_write_if_changed_leaves_the_same_object_alone_and_repairs_a_wrong_type(
    storage, s3_server, bucket
):
    assert storage.write_if_changed("feed.xml", "<feed/>")
    assert not storage.write_if_changed("feed.xml", "<feed/>")
    assert storage.write_if_changed("feed.xml", "<feed>2</feed>")
    # Put there by hand with the wrong type: the same bytes are written again.
    s3_server.client().put_object(
        Bucket=bucket, Key="site/feed.xml", Body=b"<feed>2</feed>", ContentType="text/plain"
    )

    assert storage.write_if_changed("feed.xml", "<feed>2</feed>")
    head = s3_server.client().head_object(Bucket=bucket, Key="site/feed.xml")
    assert head["ContentType"] == "application/atom+xml"


def test_missing_objects_read_as_none_and_delete_is_idempotent(storage):
    assert storage.read("nope/index.html") is None
    assert not storage.exists("nope/index.html")
    storage.delete("nope/index.html")  # no error

    storage.write("a/index.html", "a")
    storage.delete("a/index.html")
    assert storage.read("a/index.html") is None


def test_listings_are_paginated_and_a_large_folder_is_deleted_whole(storage, s3_server, bucket):
    # More than one page of a listing (1000 keys) and of a DeleteObjects (1000 keys).
    client = s3_server.client()
    many = [f"big/{n}.html" for n in range(1105)]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda rel: client.put_object(Bucket=bucket, Key=f"site/{rel}"), many))
    storage.write("big-sibling/index.html", "kept")  # shares the prefix "big", not the folder

    assert sorted(storage.list("big")) == sorted(many)
    assert sorted(storage.names()) == ["big", "big-sibling"]

    storage.delete_tree("big")

    assert list(storage.list("big")) == []
    assert keys(client, bucket, "site/") == {"big-sibling/index.html"}


def test_nothing_outside_the_prefix_is_listed_or_deleted(storage, s3_server, bucket):
    client = s3_server.client()
    client.put_object(Bucket=bucket, Key="other/a/index.html", Body=b"not ours")
    client.put_object(Bucket=bucket, Key="site-old/a/index.html", Body=b"not ours")
    storage.write("a/index.html", "ours")
    storage.write("你好/index.html", "ours too")
    storage.write("draft/notes.txt", "a folder without its page")

    assert sorted(storage.list()) == ["a/index.html", "draft/notes.txt", "你好/index.html"]
    put_at = storage.page_dirs()
    assert {name: when is not None for name, when in put_at.items()} == {
        "a": True,
        "draft": False,
        "你好": True,
    }
    # When each page was put in place (its LastModified), for the full check.
    assert abs(put_at["a"] - time.time()) < 120
    for folder in ("a", "draft", "你好"):
        storage.delete_tree(folder)

    assert keys(client, bucket) == {"other/a/index.html", "site-old/a/index.html"}


@pytest.mark.parametrize("rel", ["../x", "a/../../x", "/etc/passwd", "a\\b"])
def test_a_path_that_would_leave_the_prefix_is_refused(storage, rel):
    with pytest.raises(ValueError, match="not a path inside SITE_ROOT"):
        storage.write(rel, "x")


@pytest.fixture
def silent_endpoint():
    """An address that accepts connections and never answers (a hung proxy, a stalled
    server): the case that would hold a worker forever without bounded timeouts."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(64)
        yield f"http://127.0.0.1:{server.getsockname()[1]}"


@pytest.mark.parametrize("kind", ["refused", "silent"])
def test_an_unreachable_endpoint_is_a_clear_error_not_a_hang(
    s3_server, silent_endpoint, kind, make_article
):
    endpoint = silent_endpoint if kind == "silent" else f"http://127.0.0.1:{free_port()}"
    config = s3_server.settings_for("s3://bp-nowhere/site") | {"AWS_ENDPOINT_URL": endpoint}
    with override_settings(**config):
        with pytest.raises(StorageError, match=r"s3://bp-nowhere/site"):
            site_storage().write("index.html", "x")
        # In an attempt: a retry (then dead with an alert), with the cause named.
        # Due tomorrow: no message, so a session worker started by an earlier test does
        # not publish it (to the local folder) before this attempt.
        article = make_article(publish_at=timezone.now() + timedelta(days=1))
        with pytest.raises(TransientPublishError, match=r"writing the page failed.*s3://"):
            StaticSitePublisher().publish(article)


def test_the_view_answers_503_when_the_bucket_cannot_be_reached(s3_server, client):
    config = s3_server.settings_for("s3://bp-nowhere/site")
    with override_settings(**config | {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{free_port()}"}):
        response = client.get("/some-page/")

    assert response.status_code == 503


@pytest.mark.django_db(transaction=True)
def test_an_uploaded_image_goes_to_the_bucket_is_served_and_swept(
    storage, s3_server, bucket, client, settings
):
    from blogpublish.desk import images
    from blogpublish.models import Image
    from tests.support.desk import image_bytes

    stored = images.store(image_bytes(size=(500, 300)), name="teal.png")
    copies = images.copy_paths(Image.objects.get().renditions)  # 400 (WebP, PNG), 500 (WebP)

    head = s3_server.client().head_object(Bucket=bucket, Key=f"site/{stored.path}")
    assert head["ContentType"] == "image/png"
    assert len(copies) == 3
    for copy in copies:
        head = s3_server.client().head_object(Bucket=bucket, Key=f"site/{copy}")
        assert head["ContentType"] == f"image/{copy.rsplit('.', 1)[1]}"
    response = client.get(f"/{stored.path}")
    assert response.status_code == 200
    assert response["Content-Type"] == "image/png"
    assert b"".join(response.streaming_content if response.streaming else [response.content])

    settings.IMAGE_GRACE_SECONDS = 0
    Image.objects.update(uploaded_at=Image.objects.get().uploaded_at.replace(year=2000))
    assert images.sweep(storage) == [stored.path]
    assert not storage.exists(stored.path)
    assert not any(storage.exists(copy) for copy in copies)


def _requests(storage: S3SiteStorage) -> list[str]:
    """The operations the storage's client sends from now on, by name (botocore's
    before-send event; the requests still go to the server)."""
    sent: list[str] = []
    storage.client.meta.events.register(
        "before-send.s3.*", lambda event_name, **_: sent.append(event_name.rsplit(".", 1)[-1])
    )
    return sent


def test_observe_heads__the_condition_is_the_etag_of_the_bytes_read_and_no_head(
    storage, s3_server, bucket
):
    """The re-render's chunk under its guard (blogpublish.site.rerender): one ranged GET
    a page gives both its first bytes and its PUT's condition; the PUTs go together;
    a page replaced after the read is not written over."""
    from blogpublish.exceptions import PageChanged

    rels = [f"p{n}/index.html" for n in range(4)]
    for rel in rels[:3]:
        storage.write(rel, f"<p>old {rel}</p>")
    storage.write("empty/index.html", b"")
    staged = [storage.stage(rel, f"<p>new {rel}</p>") for rel in [*rels, "empty/index.html"]]
    sent = _requests(storage)

    heads = storage.observe_heads(staged, 16)

    assert heads == {
        **{rel: f"<p>old {rel}</p>".encode()[:16] for rel in rels[:3]},
        rels[3]: None,
        "empty/index.html": b"",
    }
    client = s3_server.client()
    for item in [*staged[:3], staged[4]]:
        assert item.expect == client.head_object(Bucket=bucket, Key=f"site/{item.rel}")["ETag"]
    assert staged[3].expect == ""  # missing: written only if still missing
    # No HEAD: the empty object, whose range AWS and moto refuse (416), is read whole.
    assert sent.count("GetObject") == 6 and sent.count("HeadObject") == 0

    client.put_object(Bucket=bucket, Key="site/p1/index.html", Body=b"<p>newer</p>")
    del sent[:]
    with pytest.raises(PageChanged):
        storage.commit_many(staged)

    assert sent.count("PutObject") == 5  # every one tried; the changed one refused
    assert storage.read("p1/index.html") == b"<p>newer</p>"
    for rel in [rels[0], rels[2], rels[3], "empty/index.html"]:
        assert storage.read(rel) == f"<p>new {rel}</p>".encode()


def test_observe_heads__an_empty_page_replaced_after_its_read_is_not_written_over(
    storage, s3_server, bucket
):
    """A range of an empty object is refused (416, AWS and moto alike), so its bytes and
    its ETag come from a second request. A page written between the two (a writer whose
    guard did not hold: what the conditional PUT is for) must not become the condition
    of a PUT decided on the empty bytes: the condition is the ETag of the bytes read."""
    from blogpublish.exceptions import PageChanged

    storage.write("empty/index.html", b"")
    staged = [storage.stage("empty/index.html", "<p>new</p>")]
    other = s3_server.client()
    asked = []

    def newer_after_the_first_read(request, **_):
        if request.url.endswith(f"/{bucket}/site/empty/index.html"):
            asked.append(request.method)
            if len(asked) == 2:  # after the ranged GET: the newer page lands
                other.put_object(Bucket=bucket, Key="site/empty/index.html", Body=b"<p>newer</p>")

    storage.client.meta.events.register("before-send.s3.*", newer_after_the_first_read)
    heads = storage.observe_heads(staged, 16)

    assert len(asked) == 2
    seen = other.get_object(Bucket=bucket, Key="site/empty/index.html", IfMatch=staged[0].expect)
    assert seen["Body"].read()[:16] == heads["empty/index.html"]
    if heads["empty/index.html"] == b"":  # decided on the empty bytes: refused over the newer
        with pytest.raises(PageChanged):
            storage.commit_many(staged)
        assert storage.read("empty/index.html") == b"<p>newer</p>"


def test_commit_each__returns_the_pages_changed_since_their_read_and_writes_the_rest(
    storage, s3_server, bucket
):
    """The re-render's writes in a bucket (`read_observed` before rendering, then
    `commit_each` under the guard): a page changed since its read, one deleted since and
    one created since are each refused and returned, never written over; the others are
    written; the conditions are the ETags of the bytes read."""
    rels = [f"p{n}/index.html" for n in range(4)]
    for rel in rels[:3]:
        storage.write(rel, f"<p>old {rel}</p>")
    observed = storage.read_observed([*rels, "p4/index.html"], 16)
    assert observed["p3/index.html"] == (None, "")  # missing: only if still missing
    client = s3_server.client()
    assert observed["p0/index.html"] == (
        b"<p>old p0/index.",
        client.head_object(Bucket=bucket, Key="site/p0/index.html")["ETag"],
    )
    client.put_object(Bucket=bucket, Key="site/p1/index.html", Body=b"<p>newer</p>")
    client.delete_object(Bucket=bucket, Key="site/p2/index.html")
    client.put_object(Bucket=bucket, Key="site/p3/index.html", Body=b"<p>created</p>")
    staged = []
    for rel in [*rels, "p4/index.html"]:
        item = storage.stage(rel, f"<p>new {rel}</p>")
        item.expect = observed[rel][1]
        staged.append(item)

    refused = storage.commit_each(staged)

    assert [item.rel for item in refused] == rels[1:]
    assert storage.read("p0/index.html") == b"<p>new p0/index.html</p>"
    assert storage.read("p1/index.html") == b"<p>newer</p>"
    assert storage.read("p2/index.html") is None
    assert storage.read("p3/index.html") == b"<p>created</p>"
    assert storage.read("p4/index.html") == b"<p>new p4/index.html</p>"


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("odd", ["site//notes.txt", "site/win\\dir/x.txt", "site/tag/a\\b/x"])
def test_a_key_the_site_could_not_hold_blocks_no_check_nor_delete(
    storage, s3_server, bucket, make_article, odd
):
    """Another tool's key under the prefix (`prefix//x`, a Windows path): the listing
    turned it into a path the site refuses, and every full check, `restore_check
    --repair` and pass failed on it for good (a review's finding). It is left alone; a
    deleted article's page goes, also from a folder holding one (it stayed online)."""
    client = s3_server.client()
    lost, gone = make_article(slug="s3-lost"), make_article(slug="s3-gone")
    call_command("publish_pending")
    client.delete_object(Bucket=bucket, Key="site/s3-lost/index.html")  # to repair
    client.put_object(Bucket=bucket, Key=odd, Body=b"x")
    client.put_object(Bucket=bucket, Key="site/s3-gone/win\\notes.txt", Body=b"x")
    Article.objects.filter(pk=gone.pk).delete()

    call_command("restore_check", "--repair", stdout=io.StringIO())

    found = keys(client, bucket, "site/")
    assert f"{lost.slug}/index.html" in found
    assert "s3-gone/index.html" not in found  # by the full check, or the worker first
    assert odd.removeprefix("site/") in found


@pytest.mark.django_db
def test_a_local_folder_the_site_could_not_hold_blocks_no_check(settings, tmp_path):
    settings.SITE_ROOT = tmp_path
    (tmp_path / "win\\dir").mkdir()
    (tmp_path / "win\\dir" / "notes.txt").write_text("someone else's")

    StaticSitePublisher().check()

    assert (tmp_path / "win\\dir" / "notes.txt").read_text() == "someone else's"


def test_a_deleted_page_a_late_put_brings_back_is_removed_again_after_the_window(
    s3_server, bucket, make_article
):
    """A page PUT held on its way past its read timeout: the attempt gave up, the delete
    removed the folder, then botocore's retry of the same `IfNoneMatch: *` PUT reached
    the bucket, found no key and made the page again, served with no article until the
    full check (a review's finding). The first pass once the late writes' window has
    passed (SITE_STORAGE_LATE_WRITE_SECONDS, shortened here) removes it again."""
    client = s3_server.client()
    settings = s3_server.settings_for(f"s3://{bucket}/site")
    with (
        broker(f"redis://127.0.0.1:{free_port()}/0"),  # the session's worker takes nothing
        override_settings(**settings, SITE_STORAGE_LATE_WRITE_SECONDS=0.001),
    ):
        article = make_article(slug="late0")
        call_command("publish_pending")
        assert shared_views_pass()
        page = client.get_object(Bucket=bucket, Key="site/late0/index.html")["Body"].read()
        Article.objects.get(pk=article.pk).delete()
        assert shared_views_pass()
        assert "late0/index.html" not in keys(client, bucket, "site/")

        # The retried PUT lands now, as it did in the review's run.
        client.put_object(Bucket=bucket, Key="site/late0/index.html", Body=page, IfNoneMatch="*")
        assert shared_views_pass()

        assert "late0/index.html" not in keys(client, bucket, "site/")
        assert not checkpoint_read(CHECKS_CHECKPOINT)  # nothing left to do


@contextlib.contextmanager
def held_puts(s3_server, bucket: str, held: str) -> Iterator[HeldPuts]:
    """This process writes the site to `bucket` through a proxy that never answers the
    PUTs of keys starting with `held` (past a read timeout of 0.5 s), and its messages
    go where nothing listens (the session's worker takes nothing)."""
    settings = s3_server.settings_for(f"s3://{bucket}/site")
    with (
        HeldPuts(s3_server.endpoint, held) as proxy,
        broker(f"redis://127.0.0.1:{free_port()}/0"),
        override_settings(
            **settings | {"AWS_ENDPOINT_URL": proxy.endpoint}, SITE_STORAGE_READ_TIMEOUT=0.5
        ),
    ):
        yield proxy


def test_a_bucket_slower_than_the_read_timeout_is_a_retry_of_each_not_a_kill(
    s3_server, bucket, make_article
):
    """Every page PUT outlives the read timeout: the batch's attempt is retried, each
    article's last_error naming the bucket, its PUTs tried once (botocore's attempts);
    it fell back to one page at a time, which waited as long again for each page past
    the attempt's time limit, and the worker was killed by the hard limit (a review's
    finding)."""
    with held_puts(s3_server, bucket, "/slow-") as proxy:
        articles = [make_article(slug=f"slow-{i}") for i in range(3)]
        call_command("publish_pending", stdout=io.StringIO())

        rows = list(Article.objects.filter(pk__in=[a.pk for a in articles]))
        for row in rows:
            assert row.status != ArticleStatus.PUBLISHED
            assert row.attempts >= 1
            assert f"s3://{bucket}/site" in row.last_error, row.last_error
        # In each attempt, each page's PUT and botocore's retry of it, no more.
        assert len(proxy.held) == 2 * sum(row.attempts for row in rows), proxy.held


def test_one_slow_page_fails_its_own_article_and_the_rest_of_its_batch_is_published(
    s3_server, bucket, make_article
):
    """The bucket answers for every page but one: that one's article is retried with its
    error named, and the others are published. The first mend failed them all while their
    pages were already in the bucket, served for articles not published, each failure
    counted toward their death (its review's finding)."""
    with held_puts(s3_server, bucket, "/mixslow-"):
        fine = [make_article(slug=f"mixok-{i}") for i in range(4)]
        slow = make_article(slug="mixslow-0")
        call_command("publish_pending", "--limit", "5", stdout=io.StringIO())

    statuses = dict(
        Article.objects.filter(pk__in=[a.pk for a in fine]).values_list("slug", "status")
    )
    assert set(statuses.values()) == {ArticleStatus.PUBLISHED}, statuses
    slow.refresh_from_db()
    assert slow.status != ArticleStatus.PUBLISHED and "mixslow-0" in slow.last_error
    found = keys(s3_server.client(), bucket, "site/")
    assert all(f"{a.slug}/index.html" in found for a in fine)


@pytest.mark.django_db(transaction=True)
def test_an_upload_the_bucket_refuses_halfway_leaves_no_object_of_it(
    storage, s3_server, bucket, monkeypatch
):
    """One copy's PUT refused: the upload fails, and the files it wrote before go too;
    they stayed in media/ for good, with no row for the sweep to find (a review's
    finding). A failed upload of bytes stored before leaves the earlier one's files."""
    from blogpublish.desk import images
    from tests.support.desk import image_bytes

    put = S3SiteStorage._put

    def refuse_a_copy(self, rel, body, **kwargs):
        if refusing and rel.endswith("-500w.webp"):
            raise StorageError(f"writing {rel!r} in {self} failed: AccessDenied")
        return put(self, rel, body, **kwargs)

    monkeypatch.setattr(S3SiteStorage, "_put", refuse_a_copy)
    client = s3_server.client()
    refusing = True
    with pytest.raises(StorageError):
        images.store(image_bytes(size=(500, 300)), name="teal.png")
    assert keys(client, bucket, "site/media/") == set()

    refusing = False
    stored = images.store(image_bytes(size=(500, 300)), name="teal.png")
    kept = keys(client, bucket, "site/media/")
    assert f"{stored.path.removeprefix('media/')}" in kept and len(kept) == 4
    refusing = True
    with pytest.raises(StorageError):
        images.store(image_bytes(size=(500, 300)), name="teal.png")
    assert keys(client, bucket, "site/media/") == kept
