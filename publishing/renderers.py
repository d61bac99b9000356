"""Processes that render pages for a long run in this one: `manage.py rerender_site` on
every CPU (issue 20; docs/site.md, "The look").

`render_processes(count)` forks `count` processes from this one (the same code, settings
and look) for as long as it is entered, and `pool()` gives them to the publisher's
re-render (blogpublish.site.rerender), which sends them only the rendering: what a page
is rendered from is read in this process, and every read under the guard, every write
and the checkpoint stay here, so none of the run's guarantees moves. A worker's pass
renders in its own process (its other child goes on publishing): no renderers there.
"""

from __future__ import annotations

import ctypes
import logging
import multiprocessing
import os
import signal
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar

from django.db import connections

logger = logging.getLogger(__name__)

_pool: ContextVar[ProcessPoolExecutor | None] = ContextVar("renderers", default=None)


def pool() -> ProcessPoolExecutor | None:
    """The renderer processes, while `render_processes` is entered and none has died."""
    return _pool.get()


def lost() -> None:
    """A renderer died: this process renders what is left of the run (logged by the caller)."""
    _pool.set(None)


@contextmanager
def render_processes(count: int) -> Iterator[None]:
    """`count` renderer processes (below 2: none) for the `with` block. If they cannot
    all be started (a process limit, memory): none, and a warning. On the way out the
    queued work is cancelled; on an error or Ctrl-C the renderers are killed, not
    waited for (one may be stuck in a page)."""
    started = _started(count) if count >= 2 else None
    if started is None:
        yield
        return
    token = _pool.set(started)
    try:
        yield
    except BaseException:
        _stop(started)
        raise
    else:
        started.shutdown(cancel_futures=True)
    finally:
        _pool.reset(token)


def _started(count: int) -> ProcessPoolExecutor | None:
    # Forked with no database connection open: each process opens its own if a page
    # needs one (an image's renditions), never the parent's socket.
    connections.close_all()
    executor = ProcessPoolExecutor(
        count,
        mp_context=multiprocessing.get_context("fork"),
        initializer=_renderer_started,
        initargs=(os.getpid(),),
    )
    try:
        executor.submit(int).result()  # every process forked now (fork: all at the first)
    except Exception as exc:
        logger.warning("re-render: %d renderers not started (%s); rendering here", count, exc)
        _stop(executor)
        return None
    return executor


def _stop(executor: ProcessPoolExecutor) -> None:
    """The renderers killed, not waited for: those forked when the others could not be
    are not daemons, and the interpreter's exit would wait for them forever."""
    processes = getattr(executor, "_processes", None) or {}  # the executor's own, by pid
    for process in list(processes.values()):
        process.kill()
    executor.shutdown(wait=False, cancel_futures=True)


# prctl(2): the signal a process gets when its parent dies.
_PR_SET_PDEATHSIG = 1


def _renderer_started(parent: int) -> None:
    """In each renderer process: killed with its parent. A command killed outright
    (SIGKILL) leaves no renderer behind, waiting forever for pages to render."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # it died before the call
        os._exit(0)
