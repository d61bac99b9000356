"""One checkpoint record per long job (work.models.Checkpoint): a site rebuild that
cannot finish in one pass's time limit, a re-render of the whole site.

The job holds its own lease (work.lease) while it reads and saves its checkpoint, and
saves it in the transaction that records the work done up to it: a pass that fails or
is overtaken rolls its progress back with its work, and the next pass resumes from the
last committed position.
"""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction

from work.models import Checkpoint


def checkpoint_read(name: str) -> Any | None:
    """Where the job `name` resumes; None: from the start."""
    return Checkpoint.objects.filter(name=name).values_list("position", flat=True).first()


def checkpoint_save(name: str, position: Any) -> None:
    """Record how far the job got (a JSON value: a page number, a key). Two first saves
    at once (two full checks: restore_check --repair beside the catch-up's) make one row,
    the later save's position on it."""
    if Checkpoint.objects.filter(name=name).update(position=position):
        return
    try:
        with transaction.atomic():  # a savepoint: the other's row refuses this one
            Checkpoint.objects.create(name=name, position=position)
    except IntegrityError:
        Checkpoint.objects.filter(name=name).update(position=position)


def checkpoint_clear(name: str) -> None:
    """The job starts over (it finished, or what it had done no longer holds)."""
    Checkpoint.objects.filter(name=name).update(position=None)
