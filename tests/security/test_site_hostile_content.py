"""One article the shared views cannot carry never freezes them (issue 8, item 1): rows
written past validation (a queryset `.update()`), published through the real services
and the real database, as `publish_pending` runs them (the `site` fixture)."""

from __future__ import annotations

import pytest
from django.core import mail

from blogpublish.rendering import MarkdownTooLargeError
from blogpublish.site import documents
from publishing.models import Alarm, Article, ArticleStatus
from tests.integration import test_site_builder
from tests.integration.test_site_builder import Site
from tests.support.site import assert_lists_exactly, read_feed, read_listing

pytestmark = pytest.mark.django_db(transaction=True)

site = test_site_builder.site  # a SITE_ROOT of the test's own; attempts run in-process


@pytest.fixture
def alerts(settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    mail.outbox = []
    return mail.outbox


def saved_past_validation(site: Site, **content) -> Article:
    """A valid article, then content no validator saw, as a shell or a bug could write it."""
    article = Article(title="Placeholder", slug="hostile", body="x", publish_at=site.base)
    article.full_clean()
    article.save()
    Article.objects.filter(pk=article.pk).update(**content)
    article.refresh_from_db()
    return article


def test_control_character_in_a_body_does_not_freeze_the_front_page_or_feed(site, alerts):
    site.add(2)
    hostile = saved_past_validation(site, title="Hostile\ufffe", body="Hello\x01 world")

    site.attempt(hostile)  # its page is written, and the refresh after it too
    site.add(2)  # later articles still reach the front page and the feed

    assert_lists_exactly(site.root, site.newest_first())
    feed = {entry.title: entry.summary for entry in read_feed(site.root).entries}
    assert feed["Hostile"] == "Hello world"
    assert "Hostile" in read_listing(site.root / "index.html").titles
    page = (site.root / "hostile" / "index.html").read_text(encoding="utf-8")
    assert "Hello world" in page and "\x01" not in page
    # Said once, although every refresh since met it again.
    [alert] = [m for m in alerts if f"article {hostile.pk} " in m.subject]
    assert "U+FFFE" in alert.body and "edit the article" in alert.body.lower()
    assert Alarm.objects.filter(name=f"site-entry-{hostile.pk}").exists()


def test_entry_whose_excerpt_cannot_be_rendered_is_left_out_with_an_alert(
    site, alerts, monkeypatch
):
    """No Markdown fails to render any more (issue 20: a body's one limit is its size,
    and a listing reads 2,000 characters of it), so the renderer's failure is made for
    one body; the rest (the listing, the feed, the alert) is the real thing."""
    real = documents.plain_excerpt

    def excerpt(text: str) -> str:
        if text.startswith("UNRENDERABLE"):
            raise MarkdownTooLargeError("Not rendered: made to fail by the test.")
        return real(text)

    monkeypatch.setattr(documents, "plain_excerpt", excerpt)
    site.add(2)
    (hostile,) = site.add(1, slug="deep")
    Article.objects.filter(pk=hostile.pk).update(published_body="UNRENDERABLE")

    site.add(1)  # the refresh after this publish meets it

    front = read_listing(site.root / "index.html")
    feed_slugs = [
        entry.link.rstrip("/").rsplit("/", 1)[-1] for entry in read_feed(site.root).entries
    ]
    others = [slug for slug in site.newest_first() if slug != "deep"]
    assert front.slugs == others and feed_slugs == others
    assert any(f"article {hostile.pk} is left out of" in m.subject for m in alerts)
    assert Article.objects.get(pk=hostile.pk).status == ArticleStatus.PUBLISHED


@pytest.mark.parametrize(
    "body",
    [
        "~~~a\n" * 26_000,  # 128 KiB: python-markdown took 30 s, past the old denylist
        "[" * 16_384,  # refused by the old denylist
        '<div markdown="1">\n' * 2_000 + "a\n" + "</div>\n" * 2_000,  # RecursionError
    ],
    ids=["unclosed fences", "brackets", "nested divs"],
)
def test_bodies_the_old_renderer_choked_on_are_published(site, body):
    article = saved_past_validation(site, body=body)

    site.attempt(article)  # expects Outcome.PUBLISHED

    assert article.status == ArticleStatus.PUBLISHED
    assert (site.root / "hostile" / "index.html").exists()


# Character references to what a page may not hold (DEL, a C1 control, noncharacters,
# a C0 control): a valid body (no validator sees a raw one), which the sanitiser writes
# out as the characters themselves.
REFERENCES = ["&#127;", "&#x81;", "&#xFDD0;", "&#1;", "&#xFFFE;", "&#x1FFFF;"]


@pytest.mark.parametrize("reference", REFERENCES)
def test_a_reference_the_page_cannot_hold_never_makes_a_script_address(site, reference):
    """The sanitiser keeps `java&#127;script:…` as a relative address (no scheme it
    knows) with a DEL in it, and the page's strip of such characters made it
    `javascript:…` after the sanitiser had judged it (a review's finding, with a
    `<h2 id>` made the skip link's target the same way). On the page and in the feed,
    as the real services write them."""
    body = (
        f'Read <a href="java{reference}script:alert(document.domain)">this</a>.\n\n'
        f'<h2 id="con{reference}tent">A heading</h2>'
    )
    (article,) = site.add(1, body=body)
    article.full_clean()  # valid: the admin, the API and an import accept it

    page = (site.root / article.slug / "index.html").read_text()
    feed = (site.root / "feed.xml").read_text()

    assert "javascript:" not in page.lower() and "javascript:" not in feed.lower()
    assert page.count('id="content"') == 1  # the skip link's own target, once
