"""The dashboard in a real browser (Playwright driving Debian's Chromium), after real
publishes by a real worker, served by a web process started as `make run` starts it:
it logs in, shows every section with the charts drawn, the dead article with its
error, refreshes itself without a reload, and its Requeue button requeues. The
screenshot goes to the run's directory, and to $BLOGPUBLISH_SCREENSHOTS_DIR when set:
docs/operations.md shows the one taken with BLOGPUBLISH_SCREENSHOTS_DIR=docs/img.
"""

from __future__ import annotations

import sys

import pytest
import requests
from django.db import connections

from publishing.models import Article, ArticleStatus
from publishing.services import catch_up
from tests.support import processes
from tests.support.browser import launch
from tests.support.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "browser-test-password-1"


def status_of(article: Article) -> str:
    return Article.objects.values_list("status", flat=True).get(pk=article.pk)


@pytest.fixture
def browser(monkeypatch):
    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop in this thread; the test's own ORM calls
    # between browser steps are plain synchronous code all the same. Django keeps the
    # connections they open apart from the test's (asgiref's context-local storage), so
    # they are closed here, or the test database could not be dropped.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            yield browser
        finally:
            connections.close_all()
            browser.close()


@pytest.fixture
def web(django_db_setup):
    """The web process, as `make run` starts it (runserver), on a free port; stopped
    (and its database connections with it) when the test ends."""
    port = processes.free_port()
    proc = processes.spawn(
        "web",
        [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"],
    )
    url = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        if not proc.alive():
            raise AssertionError(f"the web process exited:\n{proc.tail()}")
        try:
            return requests.get(f"{url}/healthz", timeout=2).status_code == 200
        except requests.ConnectionError:
            return False

    wait_for(answers, timeout=60, what="the web process to answer")
    yield url
    proc.stop()


def test_dashboard_in_a_browser_after_real_publishes(
    worker, web, make_article, chaos, django_user_model, browser, screenshots
):
    published = [make_article(title=f"Published by the worker {i}") for i in range(4)]
    chaos("refused-by-target", fail="permanent")
    dead = make_article(title="Refused by the target", slug="refused-by-target")
    for article in published:
        wait_for(lambda a=article: status_of(a) == ArticleStatus.PUBLISHED, timeout=60)
    wait_for(lambda: status_of(dead) == ArticleStatus.DEAD, timeout=60, what="a dead article")
    catch_up()  # what Beat runs every PUBLISH_CATCHUP_INTERVAL: the dashboard shows it
    django_user_model.objects.create_superuser("operator", password=PASSWORD)

    page = browser.new_page(viewport={"width": 1280, "height": 1600})
    page.goto(f"{web}/admin/publishing/dashboard/")
    assert "/admin/login/" in page.url  # anonymous: the login page first
    page.fill("#id_username", "operator")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_url("**/admin/publishing/dashboard/")

    for section in ("figures", "health", "catch-up", "dead", "retried", "charts"):
        assert page.locator(f"#bp-{section}").is_visible(), section
    assert page.locator("svg.bp-chart").count() == 3
    assert page.locator("#bp-charts rect[fill='#2e7d32']").count() >= 1  # the publishes
    dead_row = page.locator("#bp-dead tr", has_text="Refused by the target")
    assert "chaos: permanent failure" in dead_row.inner_text()
    assert "Last run" in page.locator("#bp-catch-up").inner_text()
    # It refreshes itself: the script swaps the live part in without a reload.
    page.wait_for_function(
        "document.getElementById('bp-dashboard').dataset.refreshes >= 1", timeout=20_000
    )
    for folder in screenshots:
        page.screenshot(path=str(folder / "dashboard.png"), full_page=True)

    chaos("refused-by-target")  # the cause is fixed
    page.locator("#bp-dead tr", has_text="Refused by the target").locator(
        "button", has_text="Requeue"
    ).click()
    page.wait_for_selector("text=requeued")
    wait_for(
        lambda: status_of(dead) == ArticleStatus.PUBLISHED,
        timeout=60,
        what="the requeued article to be published",
    )
