"""work.db.after_commit: a failing callback is logged and the ones after it still run
(a review's finding: with functools.partial, Django's robust on_commit raised an
AttributeError naming it, and an alert stopped at its time limit took the group's pass
of the shared pages with it)."""

from __future__ import annotations

import logging
from functools import partial

import pytest
from django.db import transaction

from work.db import after_commit

pytestmark = pytest.mark.django_db(transaction=True)


def alert_that_fails(article_id: int) -> None:
    raise RuntimeError(f"the alert of {article_id} ran out of time")


@pytest.mark.parametrize("wrapped", [False, True], ids=["a function", "a partial"])
def test_a_failing_callback_is_logged_and_the_next_still_runs(caplog, wrapped):
    ran: list[str] = []
    failing = partial(alert_that_fails) if wrapped else alert_that_fails
    caplog.set_level(logging.ERROR)

    with transaction.atomic():
        after_commit(failing, 7)
        after_commit(ran.append, "the pass of the shared pages")

    assert ran == ["the pass of the shared pages"]
    logged = [r.getMessage() for r in caplog.records]
    assert any("alert_that_fails" in m and "ran out of time" in m for m in logged), logged
