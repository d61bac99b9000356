"""The full check reads only what may have gone wrong since the last one (issue 17): the
pages put in place since it began, those whose article or neighbour was published
since, and a rotating slice of the rest, so its cost follows what changed and every
page is still read within FULL_CHECK_SLICES checks (blogpublish.site.full_check).

In-process, as the backup executor runs the check, with the real database and the real
storage: the test's own folder, or a bucket in moto's S3 server (the `where` fixture of
test_page_writes.py). The articles' publishes are set a day back and the clocks' margin
to nothing, so that "since the last check" means what each test makes happen after it.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from blogpublish.site import full_check, paths
from blogpublish.site.publisher import StaticSitePublisher
from blogpublish.storage import site_storage
from publishing.models import Article
from tests.integration.test_page_writes import live_page, page_bytes, stale_copy, where  # noqa: F401
from tests.integration.test_site_builder import site  # noqa: F401  (the fixture)
from tests.support.site import run_full_check
from tests.support.waiting import wait_for
from work.checkpoints import checkpoint_save
from work.lease import db_now

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def reads(monkeypatch, where) -> list[str]:  # noqa: F811
    """The pages whose first bytes the storage is asked for, in order."""
    seen: list[str] = []
    cls = type(site_storage())
    original = cls.read_heads

    def read_heads(storage, rels, size):
        seen.extend(rels)
        return original(storage, rels, size)

    monkeypatch.setattr(cls, "read_heads", read_heads)
    monkeypatch.setattr(full_check, "CLOCK_MARGIN", 0.0)
    return seen


def published_long_ago(articles: list[Article]) -> None:
    ids = [article.pk for article in articles]
    Article.objects.filter(pk__in=ids).update(published_at=timezone.now() - timedelta(days=1))


def last_check(began: datetime, articles: list[Article], *, slice: int | None = None) -> None:
    """As if the last full check began at `began`; the next reads `slice` (by default
    one that none of `articles` is in)."""
    if slice is None:
        taken = {article.pk % full_check.FULL_CHECK_SLICES for article in articles}
        slice = min(set(range(full_check.FULL_CHECK_SLICES)) - taken)
    checkpoint_save(full_check.FULL_CHECK_CHECKPOINT, {"began": began.isoformat(), "slice": slice})


def after_the_next_second(began: datetime) -> None:
    """A bucket's listing gives whole seconds: a page put after `began` shows so once
    the storage's clock (this host's) is in the next second."""
    wait_for(
        lambda: db_now() >= began.replace(microsecond=0) + timedelta(seconds=1),
        timeout=5,
        what="the next second",
    )


def test_a_page_put_in_place_after_the_last_check_is_read_and_rewritten(site, reads):  # noqa: F811
    first, second, third = site.add(3, body="Version one.")
    site.edit(first, body="Version two.")
    published_long_ago([first, second, third])
    began = db_now()
    last_check(began, [first, second, third])
    after_the_next_second(began)
    # A write that landed after the check began (a PUT its client gave up on, an
    # overtaken writer's rename): the page shows older content than the live one.
    site_storage().write(paths.page_file(first.slug), stale_copy(first, "Version one."))
    reads.clear()

    run_full_check(site.publisher)

    assert page_bytes(first.slug) == live_page(first)
    # The pages nothing happened to since the last check are not read (the one
    # rewritten is read again under its guard).
    assert set(reads) == {paths.page_file(first.slug)}


def test_a_page_whose_article_was_published_since_but_whose_write_was_lost_is_rewritten(
    site,  # noqa: F811
    reads,
    monkeypatch,
):
    first, second, third = site.add(3, body="Version one.")
    published_long_ago([first, second, third])
    began = db_now()
    last_check(began, [first, second, third])
    after_the_next_second(began)
    # The edit is published, but its page never reaches the storage (a rename a power
    # loss undid) and the pass that settles it does not check it either.
    cls = type(site_storage())
    with monkeypatch.context() as lost:
        lost.setattr(cls, "commit", lambda storage, staged: None)
        lost.setattr(cls, "commit_many", lambda storage, staged: None)
        lost.setattr(StaticSitePublisher, "_repair_settled", lambda *args, **kwargs: None)
        site.edit(first, body="Version two.")
    assert b"Version one." in page_bytes(first.slug)
    reads.clear()

    run_full_check(site.publisher)

    assert page_bytes(first.slug) == live_page(first)
    # Its neighbour's page is read too (its link may name it); the third's is not.
    assert set(reads) == {paths.page_file(a.slug) for a in (first, second)}


def test_every_page_is_read_within_full_check_slices_checks(site, reads):  # noqa: F811
    first, second = site.add(2, body="Version one.")
    site.edit(first, body="Version two.")
    published_long_ago([first, second])
    site_storage().write(paths.page_file(first.slug), stale_copy(first, "Version one."))
    # Changed behind the site's back with its time set back: only its slice finds it.
    later = db_now() + timedelta(days=1)
    found_by = None
    for number in range(full_check.FULL_CHECK_SLICES):
        last_check(later, [first, second], slice=number)
        run_full_check(site.publisher)
        if page_bytes(first.slug) == live_page(first):
            found_by = number
            break

    assert found_by == first.pk % full_check.FULL_CHECK_SLICES


def test_the_first_check_reads_every_page(site, reads):  # noqa: F811
    articles = site.add(3)
    reads.clear()

    run_full_check(site.publisher)

    assert sorted(reads) == sorted(paths.page_file(a.slug) for a in articles)
