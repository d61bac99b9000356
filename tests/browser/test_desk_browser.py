"""The writer's desk in a real browser (issue 12): Playwright drives Debian's Chromium
against a live server, with the real worker publishing.

A writer logs in, writes an article, watches the preview follow the text, adds an
image, saves, and opens the published page; then the article dies and Requeue brings it
back. Screenshots of the editor with its preview, of the published page and of the dead
article's form go to the run's directory, and also to
$BLOGPUBLISH_SCREENSHOTS_DIR when set (`docs/img/` holds the committed ones).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from django.db import connections

from publishing.models import Article, ArticleStatus
from tests.support.browser import log_in
from tests.support.desk import image_bytes
from tests.support.waiting import wait_for

TIMEOUT_MS = 30_000
# An image loaded (`naturalWidth` is the chosen copy's width over its density, so not
# the file's own width), and the addresses of an upload and its copies.
LOADED = "i => i.complete && i.naturalWidth > 0"
COPY = re.compile(r"/media/[0-9a-f]{64}(-\d+w)?\.(png|webp)$")
BODY = """Spring came **early** this year, and the blog noticed.

- the preview follows every keystroke
- what it shows is what readers get

<script>alert("never runs")</script>
"""

pytestmark = pytest.mark.django_db(transaction=True)


def save_shot(page, folders: list[Path], name: str, **options) -> None:
    page.screenshot(path=str(folders[0] / name), **options)
    for folder in folders[1:]:
        shutil.copyfile(folders[0] / name, folder / name)


def new_article_page(
    browser, live_server, admin_user, settings, monkeypatch, request, *, width: int = 1280
):
    """A page signed in as `admin_user`, on the desk's form of a new article."""
    from playwright.sync_api import expect

    # Playwright's sync API runs an event loop in this thread; the ORM calls of the tests
    # are ordinary blocking ones (Django would refuse them in a real async context). Their
    # connections belong to that loop's context, so they are closed here, or PostgreSQL
    # would refuse to drop the test database.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    request.addfinalizer(connections.close_all)
    settings.SESSION_COOKIE_SECURE = settings.CSRF_COOKIE_SECURE = False  # plain http
    page = browser.new_page(viewport={"width": width, "height": 1000})
    page.set_default_timeout(TIMEOUT_MS)
    expect.set_options(timeout=TIMEOUT_MS)
    log_in(
        page,
        live_server.url,
        admin_user.username,
        "password",
        then="/admin/publishing/article/add/",
    )
    return page


def test_write_preview_add_image_save_and_read_it_on_the_site(
    worker, live_server, admin_user, browser, screenshots, settings, monkeypatch, request
):
    from playwright.sync_api import expect

    settings.SITE_URL = live_server.url  # the admin's "View" links point at this server
    page = new_article_page(
        browser, live_server, admin_user, settings, monkeypatch, request, width=1440
    )

    # Write: the preview follows, rendered by the site (sanitised: no script).
    page.fill("#id_title", "First day of spring")
    page.fill("#id_body", BODY)
    preview = page.frame_locator("#desk-frame")
    expect(preview.locator("h1")).to_have_text("First day of spring")
    expect(preview.locator("strong")).to_have_text("early")
    expect(preview.locator("li")).to_have_count(2)
    # No script but the one JSON-LD data block (documents.json_ld), which never runs.
    assert preview.locator("script:not([type='application/ld+json'])").count() == 0
    assert Article.objects.count() == 0  # the preview saved nothing

    # Add an image: its Markdown lands at the cursor, the preview shows it.
    page.locator("#id_body").press("End")
    page.set_input_files(
        "#desk-image-input",
        files=[
            {
                "name": "blossom.png",
                "mimeType": "image/png",
                "buffer": image_bytes(size=(480, 240), colour="palevioletred"),
            }
        ],
    )
    expect(page.locator("#id_body")).to_have_value(
        re.compile(r"!\[blossom\]\(/media/[0-9a-f]{64}\.png\)")
    )
    image = preview.locator("img")
    expect(image).to_have_attribute("alt", "blossom")
    wait_for(lambda: image.evaluate(LOADED), what="preview image")
    # One of its copies (issue 21): the browser picks by the screen and `sizes`.
    assert COPY.search(image.evaluate("i => i.currentSrc")), image.evaluate("i => i.currentSrc")
    save_shot(page, screenshots, "desk-editor-preview.png", full_page=True)

    # Save; the worker publishes it; the change form says so and links the page.
    page.click("input[name=_save]")
    page.wait_for_url("**/admin/publishing/article/")
    article = wait_for(
        lambda: Article.objects.filter(status=ArticleStatus.PUBLISHED).first(),
        what="the article to be published",
    )
    assert article.slug == "first-day-of-spring"
    page.goto(f"{live_server.url}/admin/publishing/article/{article.pk}/change/")
    expect(page.locator(".desk-life")).to_contain_text("live since")
    with page.context.expect_page() as opened:
        page.click("a.desk-live-link")
    site = opened.value
    site.set_viewport_size({"width": 1000, "height": 900})
    site.wait_for_load_state()
    assert site.url == f"{live_server.url}/first-day-of-spring/"
    expect(site.locator("h1")).to_have_text("First day of spring")
    expect(site.locator("strong")).to_have_text("early")
    published = site.locator("article img")
    expect(published).to_have_attribute("alt", "blossom")
    wait_for(lambda: published.evaluate(LOADED), what="the published image to load")
    assert COPY.search(published.evaluate("i => i.currentSrc"))
    assert published.evaluate("i => [i.width, i.height]") == [480, 240]  # its size, given
    assert site.locator("script:not([type='application/ld+json'])").count() == 0
    save_shot(site, screenshots, "published-page.png", full_page=True)

    # Dead (say the disk filled up): the form says why, and Requeue brings it back.
    Article.objects.filter(pk=article.pk).update(
        status=ArticleStatus.DEAD, last_error="writing the page failed: disk full"
    )
    page.reload()
    expect(page.locator(".desk-life")).to_contain_text("dead: writing the page failed: disk full")
    expect(preview.locator("h1")).to_have_text("First day of spring")  # the saved text
    save_shot(page, screenshots, "desk-dead-requeue.png")
    page.locator("#id_title").fill("An edit Requeue does not save")
    page.click("button.desk-requeue")
    expect(page.locator(".messagelist")).to_contain_text("Requeued")
    wait_for(
        lambda: Article.objects.filter(pk=article.pk, status=ArticleStatus.PUBLISHED).exists(),
        what="the requeued article to be published again",
    )
    assert Article.objects.get(pk=article.pk).title == "First day of spring"


# What nginx answers a body over its client_max_body_size (1 MiB unless told otherwise).
NGINX_413 = (
    "<html>\r\n<head><title>413 Request Entity Too Large</title></head>\r\n<body>\r\n"
    "<center><h1>413 Request Entity Too Large</h1></center>\r\n<hr><center>nginx</center>\r\n"
    "</body>\r\n</html>\r\n"
)


def test_an_image_a_proxy_refuses_is_said_too_large_and_the_text_is_kept(
    live_server, admin_user, browser, settings, monkeypatch, request
):
    """A proxy in front of the site refuses the upload with a page of its own, not the
    site's JSON: the desk says the image is too large for it (it said "Not added:
    Unexpected token '<'…", a JSON parse error), and the text is as it was. The proxy
    is played by the browser's own routing, the one part here that is not the site."""
    from playwright.sync_api import expect

    page = new_article_page(browser, live_server, admin_user, settings, monkeypatch, request)
    page.route(
        "**/admin/publishing/article/image/",
        lambda route: route.fulfill(status=413, content_type="text/html", body=NGINX_413),
    )
    page.fill("#id_body", "A photo of the blossom:")
    page.set_input_files(
        "#desk-image-input",
        files=[{"name": "blossom.png", "mimeType": "image/png", "buffer": image_bytes()}],
    )
    error = page.locator("#desk-image-error")
    expect(error).to_be_visible()
    expect(error).to_have_text(
        "Not added: the image is larger than the server in front of the site accepts (413)"
    )
    expect(page.locator("#id_body")).to_have_value("A photo of the blossom:")
