"""The view that serves SITE_ROOT at / (`make run`; issue 8, item 8): hostile paths are
a missing page, links are never followed, dot-files never served, each file has its
type, and the pages carry the site's Content-Security-Policy."""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path

import pytest

from blogpublish.csp import site_policy
from tests.integration.test_site_builder import site  # noqa: F401  (the fixture)


@pytest.fixture
def root(tmp_path, settings) -> Path:
    """A SITE_ROOT by hand: a page, the feed, a sitemap, what a publish stages, and a
    folder outside it with a secret."""
    root = tmp_path / "site"
    (root / "hello").mkdir(parents=True)
    (root / "hello" / "index.html").write_text("<!doctype html><p>Hello</p>")
    (root / "feed.xml").write_text('<?xml version="1.0"?><feed/>')
    (root / "tag" / "python").mkdir(parents=True)  # a tag's feed is a feed too
    (root / "tag" / "python" / "feed.xml").write_text('<?xml version="1.0"?><feed/>')
    (root / "tag" / "python" / "feed.json").write_text("{}")
    (root / "sitemap-1.xml").write_text('<?xml version="1.0"?><urlset/>')
    (root / ".staging").mkdir()
    (root / ".staging" / "x").write_text("half a page")
    (root / ".site-state.json").write_text("{}")
    outside = tmp_path / "etc"
    outside.mkdir()
    (outside / "passwd").write_text("root:x:0:0")
    (root / "etclink").symlink_to(outside)
    (root / "passlink").symlink_to(outside / "passwd")
    (root / "hellolink").symlink_to(root / "hello")
    settings.SITE_ROOT = root
    return root


def get(client, path: str):
    """GET with the raw path, as gunicorn passes it (the test client would read `//etc`
    as a host name)."""
    return client.get("/", PATH_INFO=path)


MISSING = "/no-such-page/"


@pytest.mark.parametrize(
    "path",
    [
        "/etclink/passwd",  # a link to a folder outside SITE_ROOT
        "/passlink",  # a link to a file outside
        "/hellolink/",  # a link to a page inside: not followed either
        "/hellolink",
        "/" + "../" * 30 + "etc",  # exists outside: answered like a missing path
        "/" + "../" * 30 + "no-such-folder",
        "/../../etc/passwd",
        "//etc",  # behind gunicorn: was a redirect to //etc/, another host
        "//etc/",
        "/hello//",
        "/./hello/",
        "/.staging/x",  # pages being written
        "/.site-state.json",  # any dot-file
        "/hello\\..\\..\\etc",  # backslashes
        "/%2e%2e/%2e%2e/etc",  # still encoded after Django decoded once
        "/hello\x00/",
        "/hello/\n",
    ],
)
def test_hostile_or_linked_paths_answer_as_a_missing_page_does(client, root, path):
    missing = get(client, MISSING)

    response = get(client, path)

    assert response.status_code == missing.status_code == 404
    assert "Location" not in response
    assert b"root:x" not in response.content and b"half a page" not in response.content


def test_test_client_decodes_percent_encoded_dots_and_they_are_refused(client, root):
    assert client.get("/%2E%2E/%2E%2E/etc/passwd").status_code == 404
    assert client.get("/hello/%2E%2E/hello/").status_code == 404


def test_a_folder_without_its_slash_redirects_on_this_site(client, root):
    response = get(client, "/hello")

    assert response.status_code == 302
    assert response["Location"] == "/hello/"
    assert get(client, "/hello/").content == b"<!doctype html><p>Hello</p>"


@pytest.mark.parametrize(
    ("path", "content_type"),
    [
        ("/feed.xml", "application/atom+xml; charset=utf-8"),
        ("/tag/python/feed.xml", "application/atom+xml; charset=utf-8"),
        ("/tag/python/feed.json", "application/feed+json; charset=utf-8"),
        ("/sitemap-1.xml", "application/xml; charset=utf-8"),
        ("/hello/", "text/html; charset=utf-8"),
    ],
)
def test_each_file_is_served_with_its_type(client, root, path, content_type):
    response = get(client, path)

    assert response.status_code == 200
    assert response["Content-Type"] == content_type


def test_only_get_and_head(client, root):
    assert client.head("/hello/").status_code == 200
    assert client.post("/hello/").status_code == 405


def style_source(html: str) -> str:
    [block] = re.findall(r"<style>(.*?)</style>", html, re.DOTALL)
    digest = base64.b64encode(hashlib.sha256(block.encode()).digest()).decode()
    return f"'sha256-{digest}'"


@pytest.mark.django_db(transaction=True)
def test_pages_carry_the_policy_and_it_allows_their_own_style(client, site):  # noqa: F811
    [article] = site.add(1, body="![a picture](https://example.com/a.png)")

    for path in ("/", f"/{article.slug}/"):
        response = get(client, path)
        assert response.status_code == 200
        policy = response["Content-Security-Policy"]
        assert policy == site_policy(images_self_only=False)
        assert "script-src 'none'" in policy and "img-src 'self' https:" in policy
        assert "frame-ancestors 'none'" in policy and "base-uri 'none'" in policy
        directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
        assert directives["object-src"] == "'none'"
        assert "'unsafe-inline'" not in directives["style-src"]
        assert style_source(response.content.decode()) in policy


def test_the_empty_front_page_carries_the_policy(client, settings, tmp_path):
    settings.SITE_ROOT = tmp_path / "not-yet"

    response = get(client, "/")

    assert response.status_code == 200
    assert style_source(response.content.decode()) in response["Content-Security-Policy"]


def test_site_images_self_only_allows_only_the_sites_images(client, root, settings):
    settings.SITE_IMAGES_SELF_ONLY = True

    policy = get(client, "/hello/")["Content-Security-Policy"]

    assert "img-src 'self';" in policy and "https:" not in policy
