"""The preview's guards (issue 19): it cannot tie up the web processes the site needs.

- **Per writer, a rate**: PREVIEW_RATE_PER_MINUTE previews, in bursts of PREVIEW_BURST
  (a token bucket kept as one time per writer, `PreviewBudget`, moved by one
  conditional UPDATE with the database's clock).
- **Site-wide, a cap on renders at once**: PREVIEW_MAX_CONCURRENT `PreviewSlot` rows,
  each taken by one conditional UPDATE and held with a lease, so a web process that
  dies mid-render frees its slot.
- **Per render, a time limit**: the page is rendered in a forked child process and the
  child is killed once it used PREVIEW_TIME_LIMIT seconds of CPU. A process, not a
  thread: a thread cannot be stopped (least of all inside a C renderer), and a forked
  child has the parent's code and settings at no start-up cost (a few milliseconds).
  The child runs at the lowest CPU priority (nice 19), so the requests of readers come
  first; a host busy with them slows a render down without failing it, up to
  `wall_limit` (three times the limit, plus 10 s), where it is stopped all the same.

The counters live in the database because every web process (gunicorn's workers, more
hosts) must share them, and the database is the one store every installation has (the
broker may be RabbitMQ, and no shared cache is configured). When the database does not
answer, the preview is refused (503): it fails closed, since the preview is a writer's
convenience and the public site is what the guards protect.
"""

from __future__ import annotations

import contextlib
import math
import os
import pickle
import select
import signal
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Q
from django.db.models.functions import Greatest, Now

from blogpublish.exceptions import BlogpublishError
from blogpublish.models import PreviewBudget, PreviewSlot

LONG_AGO = datetime(2000, 1, 1, tzinfo=UTC)
SLOT_MARGIN = timedelta(seconds=5)  # a slot outlives the render's wall limit by this much
# A render's wall-clock bound, for a child whose CPU time the limit cannot see (no /proc)
# or which waits without using it: WALL_FACTOR times the limit, plus WALL_MARGIN seconds.
WALL_FACTOR = 3
WALL_MARGIN = 10.0
# How often the child's CPU time is read while it renders.
CPU_POLL_SECONDS = 0.02
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def wall_limit(seconds: float) -> float:
    """The wall-clock bound of a render limited to `seconds` of CPU: at nice 19 on a host
    busy with readers' requests, a render that needs a tenth of its CPU limit can wait
    several times the limit for it (a review's: a shared preview of a short draft
    stopped "after 10 s" while three test runs shared two cores)."""
    return seconds * WALL_FACTOR + WALL_MARGIN


class PreviewRefused(BlogpublishError):
    """The preview is not rendered now; `retry_after` seconds later it may be."""

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class PreviewTooSlow(BlogpublishError):
    """The render used more than PREVIEW_TIME_LIMIT of CPU, or waited past its wall
    limit, and was stopped."""


# --- per writer: a rate --------------------------------------------------------------


def take_from_budget(user_id: int) -> None:
    """Count one preview against the writer's budget; PreviewRefused when it is spent."""
    interval = timedelta(seconds=60 / settings.PREVIEW_RATE_PER_MINUTE)
    tolerance = interval * (settings.PREVIEW_BURST - 1)
    for first_time in (False, True):
        taken = PreviewBudget.objects.filter(user_id=user_id, due_at__lte=Now() + tolerance).update(
            due_at=Greatest("due_at", Now()) + interval
        )
        if taken:
            return
        if first_time or PreviewBudget.objects.filter(user_id=user_id).exists():
            break
        PreviewBudget.objects.bulk_create(  # the writer's first preview
            [PreviewBudget(user_id=user_id, due_at=LONG_AGO)], ignore_conflicts=True
        )
    due_at, now = (
        PreviewBudget.objects.filter(user_id=user_id)
        .annotate(now=Now())
        .values_list("due_at", "now")
        .get()
    )
    wait = (due_at - tolerance - now).total_seconds()
    raise PreviewRefused(
        f"Too many previews: at most {settings.PREVIEW_RATE_PER_MINUTE:g} a minute "
        f"(bursts of {settings.PREVIEW_BURST}). The preview updates again shortly.",
        retry_after=max(1, math.ceil(wait)),
    )


# --- site-wide: renders at once --------------------------------------------------------


@contextmanager
def render_slot() -> Iterator[None]:
    """Hold one of the PREVIEW_MAX_CONCURRENT slots while the body runs; PreviewRefused
    when every one is taken."""
    count = settings.PREVIEW_MAX_CONCURRENT
    holder = uuid.uuid4().hex
    lease = timedelta(seconds=wall_limit(settings.PREVIEW_TIME_LIMIT)) + SLOT_MARGIN
    free = Q(held_until__isnull=True) | Q(held_until__lte=Now())
    number = None
    for attempt in (1, 2):
        for candidate in range(count):
            if (
                PreviewSlot.objects.filter(free, number=candidate).update(
                    holder=holder, held_until=Now() + lease
                )
                == 1
            ):
                number = candidate
                break
        if number is not None or attempt == 2:
            break
        if PreviewSlot.objects.filter(number__lt=count).count() == count:
            break  # all there, all taken
        PreviewSlot.objects.bulk_create(
            [PreviewSlot(number=n) for n in range(count)], ignore_conflicts=True
        )
    if number is None:
        raise PreviewRefused(
            f"The preview is busy ({count} at once across the site); it updates again in a moment.",
            retry_after=1,
        )
    try:
        yield
    finally:
        PreviewSlot.objects.filter(number=number, holder=holder).update(holder="", held_until=None)


# --- per render: a time limit ----------------------------------------------------------


def _render_in_child(write_fd: int, function: Callable[[Any], Any], argument: Any) -> None:
    """The forked child: render, send the pickled result, and leave with os._exit, so
    none of the parent's state is cleaned up from here. (multiprocessing's children run
    its after-fork hooks, and kombu's closes the inherited broker connections there: on
    RabbitMQ that sent a Connection.Close down the web process's own socket, and its
    next send met a reset connection.)"""
    try:
        os.nice(19)  # the web's other requests (readers) come first for the CPU
        own: list[Any] = []
        try:
            own = _database_connections_of_its_own()
            result = ("ok", function(argument))
        except Exception as exc:  # sent back as text: the parent says what failed
            result = ("error", f"{type(exc).__name__}: {exc}")
        finally:
            for connection in own:
                with contextlib.suppress(Exception):
                    connection.close()
        with os.fdopen(write_fd, "wb") as out:
            out.write(pickle.dumps(result))
    finally:
        os._exit(0)


# The parent's database connections, as the child inherited them: kept referenced (never
# closed, never collected) until the child's os._exit.
_INHERITED: list[Any] = []


def _database_connections_of_its_own() -> list[Any]:
    """In the forked child: each database connection the parent holds outside a
    transaction is left to the parent and the child's queries open one of their own
    (Django connects again once `connection` is None). The render reads the database
    (neighbours, related articles, image copies); over the parent's socket, a TLS
    session's state moved on in the child and the parent's next statement failed
    ("decryption failed or bad record mac"), its slot's release too (a review's
    finding: PostgreSQL offers TLS by default, sslmode=prefer). A connection inside a
    transaction is shared as before (the render may read its uncommitted rows; the
    tests' own transactions): no request's preview runs in one. Returns the child's
    wrappers, to close its own connections before it leaves."""
    from django.db import connections

    own = []
    for wrapper in connections.all(initialized_only=True):
        if wrapper.in_atomic_block:
            continue
        if wrapper.connection is not None:
            _INHERITED.append(wrapper.connection)
            wrapper.connection = None
        own.append(wrapper)
        if wrapper.vendor == "postgresql":
            # Its statements end by the render's wall limit: a child killed while its
            # session waited on a lock (a migration's) left that session on the server
            # until the lock went, one a preview (a review of the mend).
            with wrapper.cursor() as cursor:
                limit = round(wall_limit(settings.PREVIEW_TIME_LIMIT) * 1000)
                cursor.execute("SELECT set_config('statement_timeout', %s, false)", [str(limit)])
    return own


def cpu_seconds(pid: int) -> float | None:
    """The CPU time (user and system) process `pid` used so far, from /proc; None where
    it cannot be read (no /proc, the process gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            text = stat.read()
    except OSError:
        return None
    # "pid (name) state ..."; the name may hold spaces and parentheses: fields from
    # the last ")", where utime and stime are the 12th and 13th (proc(5): 14 and 15).
    fields = text.rpartition(b")")[2].split()
    try:
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    except (IndexError, ValueError):
        return None


def _read_until_closed(read_fd: int, pid: int, seconds: float) -> bytes | str:
    """What the child wrote, once it closed its end; else why it was not waited for:
    its CPU time past `seconds`, or the wall limit reached first."""
    chunks: list[bytes] = []
    started, wall = time.monotonic(), wall_limit(seconds)
    while True:
        elapsed = time.monotonic() - started
        if elapsed >= wall:
            return f"it waited {wall:g} s for the server, which is busy"
        if select.select([read_fd], [], [], min(wall - elapsed, CPU_POLL_SECONDS))[0]:
            chunk = os.read(read_fd, 65536)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            continue
        used = cpu_seconds(pid)
        if (elapsed if used is None else used) > seconds:  # no /proc: the limit is wall time
            return f"rendering took longer than {seconds:g} s"


def run_with_time_limit(function: Callable[[Any], Any], argument: Any, *, seconds: float) -> Any:
    """`function(argument)` in a forked child process, its result sent back through a
    pipe; the child is killed and PreviewTooSlow raised once it used more than `seconds`
    of CPU, or wall_limit(seconds) passed. The argument is not pickled (the child has it
    from the fork); the result is."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        _render_in_child(write_fd, function, argument)
    os.close(write_fd)
    try:
        data = _read_until_closed(read_fd, pid, seconds)
    finally:
        os.close(read_fd)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    if isinstance(data, str):
        raise PreviewTooSlow(
            f"The preview was stopped: {data}. The frame still shows an earlier "
            "preview; shorten or simplify the text."
        )
    if not data:
        raise BlogpublishError("the preview's render process ended without an answer")
    status, value = pickle.loads(data)
    if status != "ok":
        raise BlogpublishError(f"the preview could not be rendered ({value})")
    return value
