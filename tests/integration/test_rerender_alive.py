"""When a process began, the rank that decides which look keeps the site during a
rolling deploy (blogpublish.site.look.born; docs/site.md, "The look")."""

from __future__ import annotations

import time

import pytest

from blogpublish.site import look
from work.lease import db_now

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_process_is_born_by_the_database_clock_not_its_hosts(monkeypatch):
    """A host whose clock runs a day ahead does not make its processes "newer"."""
    monkeypatch.setattr(look, "BORN", None)
    ahead = time.time() + 86400
    monkeypatch.setattr(time, "time", lambda: ahead)
    assert look.born() <= db_now().timestamp()
