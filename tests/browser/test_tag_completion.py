"""The desk's tags field completes from the tags in use (issue 21, item 3), in a real
browser: Playwright drives Debian's Chromium against a live server. The page carries
the tags in use, most used first (a datalist); desk.js fits its options to the last
tag typed, after the tags already in the field."""

from __future__ import annotations

import pytest
from django.db import connections

from publishing.forms import TagsField
from tests.browser.test_desk_browser import TIMEOUT_MS
from tests.support.browser import log_in
from tests.support.live_tags import listed_with_tags

pytestmark = pytest.mark.django_db(transaction=True)

OPTIONS = "l => Array.from(l.options, o => o.value)"


def test_the_tags_field_completes_its_last_tag_from_the_tags_in_use(
    live_server, admin_user, browser, settings, monkeypatch, request
):
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    request.addfinalizer(connections.close_all)
    settings.SESSION_COOKIE_SECURE = settings.CSRF_COOKIE_SECURE = False
    listed_with_tags(["Python", "web"], ["python", "数据库"], ["pytest", "web"], ["python"])
    page = browser.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    log_in(
        page, live_server.url, admin_user.username, "password", then="/admin/publishing/story/add/"
    )
    field, options = page.locator("#id_tags"), page.locator("#desk-tags")
    assert field.get_attribute("list") == "desk-tags"

    field.click()
    assert options.evaluate(OPTIONS) == ["Python", "web", "pytest", "数据库"]  # most used first

    field.press_sequentially("PY")
    assert options.evaluate(OPTIONS) == ["Python", "pytest"]

    field.fill("")
    field.press_sequentially("python, ")  # the next tag: not Python again
    assert options.evaluate(OPTIONS) == ["python, web", "python, pytest", "python, 数据库"]

    field.press_sequentially("数")
    assert options.evaluate(OPTIONS) == ["python, 数据库"]


def test_a_tag_with_a_comma_or_a_quote_is_completed_quoted_as_the_form_reads_it(
    live_server, admin_user, browser, settings, monkeypatch, request
):
    """Picking `Hello, World` after `web, Hel` made the field `web, Hello, World`, three
    tags to the form; typed inside its quote, the tag's own comma was taken for the
    field's, and nothing was suggested (a review's finding). Each option, read by the
    form's own field, is the tags before it and the one picked."""
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    request.addfinalizer(connections.close_all)
    settings.SESSION_COOKIE_SECURE = settings.CSRF_COOKIE_SECURE = False
    listed_with_tags(["Hello, World", "web"], ["Hello, World", "web"], ['"Quoted" words'])
    page = browser.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    log_in(
        page, live_server.url, admin_user.username, "password", then="/admin/publishing/story/add/"
    )
    field, options = page.locator("#id_tags"), page.locator("#desk-tags")

    def offered(typed: str) -> list[str]:
        field.fill("")
        field.press_sequentially(typed)
        return options.evaluate(OPTIONS)

    assert offered("web, Hel") == ['web, "Hello, World"']
    assert offered('web, "Hello, W') == ['web, "Hello, World"']  # inside its quote
    assert offered('"Hello, World", ') == [
        '"Hello, World", web',
        '"Hello, World", """Quoted"" words"',
    ]
    assert offered('"Hello, World", "web", "') == ['"Hello, World", "web", """Quoted"" words"']
    read = TagsField().clean
    assert read(offered("web, Hel")[0]) == ["web", "Hello, World"]
    assert [read(option) for option in offered('"Hello, World", ')] == [
        ["Hello, World", "web"],
        ["Hello, World", '"Quoted" words'],
    ]
