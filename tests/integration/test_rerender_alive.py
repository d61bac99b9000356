"""Which look the site ends in across a rolling deploy, a restarted old process and a
rollback (blogpublish.site.alive; docs/site.md, "A rolling deploy"). Processes are
simulated in this one: a process is its start (`look.BORN`, by the database's clock)
and its look (`SITE_TITLE`, which both the pages' and the shared views' looks show).
Time passing is a look's heartbeat moved back in the database, not a sleep."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest

from blogpublish.models import SiteState as SiteStateRow
from blogpublish.site import alive, look
from publishing.services import shared_views_pass
from publishing.services.rerender import rerender_wanted
from tests.integration.test_rerender import looks, run_to_the_end
from tests.integration.test_site_builder import Site, site  # noqa: F401  (the fixture)
from work.lease import db_now
from work.models import Checkpoint

pytestmark = pytest.mark.django_db(transaction=True)

OLD, NEW = "The old release", "The new release"


@pytest.fixture
def become(monkeypatch, settings):
    """become(born, title): from now on this test is a process started at `born` (unix
    seconds) whose pages and shared views show `title`."""

    def to(born: float, title: str) -> None:
        monkeypatch.setattr(look, "BORN", born)
        settings.SITE_TITLE = title

    return to


@pytest.fixture
def run_as(become):
    """run_as(born, title): as that process, the re-render run to its end; its look."""

    def run(born: float, title: str) -> str:
        become(born, title)
        run_to_the_end()
        return look.look()

    return run


def gone(fingerprint: str) -> None:
    """No process of this look has been seen for longer than a look stays alive: its
    heartbeat moved back in the database."""
    at = db_now() - timedelta(seconds=alive.seen_within() + 1)
    seen = Checkpoint.objects.filter(name=alive.seen_checkpoint(fingerprint))
    assert seen.update(position={"at": at.isoformat()}) == 1


def test_a_restarted_old_process_keeps_the_site_only_while_its_look_runs(
    site,  # noqa: F811
    become,
    run_as,
):
    """The review's scenario: an old-release process restarted during the deploy (born
    after the new ones) takes the site back to the old look; once no process of the old
    look is seen, the new release's takes it over again, and the site ends in its look.
    Without the liveness check the site stays in the old look for good."""
    articles = site.add(5)
    run_as(100.0, OLD)
    new = run_as(200.0, NEW)
    assert looks(articles) == [new] * 5
    old = run_as(300.0, OLD)  # restarted: newer than the new release's process
    assert looks(articles) == [old] * 5

    gone(old)  # the old processes are gone
    become(200.0, NEW)
    assert rerender_wanted()
    run_to_the_end()
    assert looks(articles) == [new] * 5


def test_while_both_looks_run_the_newer_process_keeps_the_site(site, become, run_as):  # noqa: F811
    """During the overlap no flip-flop: the newer-born process's run is left alone by an
    older process of another look while its look is seen, in both directions. Without
    the heartbeat (no look ever seen alive) the older process takes the site."""
    articles = site.add(3)
    new = run_as(200.0, NEW)
    become(100.0, OLD)  # an old process not yet stopped
    assert not rerender_wanted()
    run_to_the_end()
    assert looks(articles) == [new] * 3

    old = run_as(300.0, OLD)  # an old process restarted: newer, it takes the site
    assert looks(articles) == [old] * 3
    become(200.0, NEW)  # the new release's, while the restarted old one runs
    assert not rerender_wanted()
    run_to_the_end()
    assert looks(articles) == [old] * 3


def test_a_takeover_is_not_taken_back_by_an_idle_process_of_the_look_it_took_over(
    site,  # noqa: F811
    become,
    run_as,
):
    """A process of the look taken over that was only idle (not seen for a while, seen
    again) began before the takeover: it does not take the site back while the new look
    runs. Ranked by its own start, the new release's process (200) would lose the site
    to it (300) again: a flip for every idle spell."""
    articles = site.add(3)
    run_as(200.0, NEW)
    gone(run_as(300.0, OLD))
    new = run_as(200.0, NEW)
    assert looks(articles) == [new] * 3

    become(300.0, OLD)  # seen again
    alive.forget()
    assert not rerender_wanted()
    run_to_the_end()
    assert looks(articles) == [new] * 3


def test_a_rollback_ends_in_the_old_look(site, become, run_as):  # noqa: F811
    """Only old-release processes left running: the site goes back to their look, both
    when they were started again after the new release's (as before) and when they had
    never stopped (born first: without the liveness check they never take it)."""
    articles = site.add(3)
    old = run_as(100.0, OLD)
    new = run_as(200.0, NEW)
    assert looks(articles) == [new] * 3

    gone(new)  # the new release's processes stopped; the old ones (100) still run
    become(100.0, OLD)
    assert rerender_wanted()
    run_to_the_end()
    assert looks(articles) == [old] * 3

    run_as(1e12, NEW)  # a new release again, then rolled back by restarting the old
    assert looks(articles) == [new] * 3
    run_as(2e12, OLD)
    assert looks(articles) == [old] * 3


def test_the_shared_views_follow_the_looks_that_run(site, become):  # noqa: F811
    """build.adopt_look by the same rules: the newer process keeps the shared views while
    both looks run; they go to the new look once the old one is gone, back to the old
    one on a rollback, and are not taken back by an idle process of a look taken over."""
    become(100.0, OLD)  # the articles' passes are this process's too
    site.add(3)

    def shared() -> str:
        return SiteStateRow.objects.get().look

    def front_page() -> str:
        return (site.root / "index.html").read_text()

    assert shared_views_pass()
    old = look.shared_look()
    become(200.0, NEW)
    assert shared_views_pass()
    new = look.shared_look()
    assert shared() == new and NEW in front_page()
    become(300.0, OLD)  # an old process restarted: newer, it takes them
    assert shared_views_pass()
    assert shared() == old
    become(200.0, NEW)  # while the old look runs: no flip (what its pass writes itself,
    assert shared_views_pass()  # the front page, is in its look: docs/site.md)
    assert shared() == old

    gone(old)
    assert shared_views_pass()
    assert shared() == new and NEW in front_page()
    become(300.0, OLD)  # an idle old process seen again: the takeover stays
    alive.forget()
    assert shared_views_pass()
    assert shared() == new

    gone(new)  # a rollback: only the old look runs
    assert shared_views_pass()
    assert shared() == old and OLD in front_page()


def test_a_process_is_born_by_the_database_clock_not_its_hosts(monkeypatch):
    """A host whose clock runs a day ahead does not make its processes "newer"."""
    monkeypatch.setattr(look, "BORN", None)
    ahead = time.time() + 86400
    monkeypatch.setattr(time, "time", lambda: ahead)
    assert look.born() <= db_now().timestamp()
