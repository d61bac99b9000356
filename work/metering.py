"""What a run cost: wall and CPU time, database rows, disk bytes, memory.

- `wall_s`: monotonic clock; `cpu_s`: this process's CPU time (user + system, all its
  threads), from `time.process_time()`.
- `rows_read`: rows the database returned to this process (SELECT results, and rows
  returned by `RETURNING`), counted as they are fetched; `rows_written`: rows that
  INSERT, UPDATE and DELETE statements changed, as the driver reports them
  (`cursor.rowcount`). Both count the statements of this thread's connections only,
  through Django's `connection.execute_wrapper`; a statement run by another process on
  the run's behalf (a worker that a dispatched message reaches) is that process's.
- `io_read_bytes` / `io_write_bytes`: `read_bytes` / `write_bytes` of /proc/self/io, the
  bytes this process made the kernel fetch from or send to storage (a read served from
  the page cache costs 0; a write counts when it dirties the cache). None where
  /proc/self/io does not exist. Per process: a thread of the same process running
  something else at the same time is counted too.
- `peak_rss_bytes`: `getrusage(RUSAGE_SELF).ru_maxrss`, the process's peak resident
  memory over its whole life, not this run's: in a prefork worker child that has run
  other tasks it is the child's peak so far. `rss_growth_bytes` is how much this run
  raised that peak (0 when it stayed under an earlier peak).
"""

from __future__ import annotations

import resource
import sys
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from django.db import connections

PROC_IO = Path("/proc/self/io")
WRITE_STATEMENTS = frozenset({"INSERT", "UPDATE", "DELETE", "REPLACE"})


def read_proc_io() -> tuple[int, int] | None:
    """(read_bytes, write_bytes) of this process, or None where there is no /proc/self/io."""
    try:
        text = PROC_IO.read_text()
    except OSError:
        return None
    fields = dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)
    try:
        return int(fields["read_bytes"]), int(fields["write_bytes"])
    except (KeyError, ValueError):
        return None


def peak_rss_bytes() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Kilobytes on Linux, bytes on macOS.
    return peak if sys.platform == "darwin" else peak * 1024


@dataclass
class Figures:
    wall_s: float
    cpu_s: float
    rows_read: int
    rows_written: int
    io_read_bytes: int | None
    io_write_bytes: int | None
    peak_rss_bytes: int
    rss_growth_bytes: int

    def as_log_fields(self) -> dict:
        return {
            "wall_s": round(self.wall_s, 3),
            "cpu_s": round(self.cpu_s, 3),
            "rows_read": self.rows_read,
            "rows_written": self.rows_written,
            "io_read_bytes": self.io_read_bytes,
            "io_write_bytes": self.io_write_bytes,
            "peak_rss_bytes": self.peak_rss_bytes,
            "rss_growth_bytes": self.rss_growth_bytes,
        }


class _CountingCursor:
    """The driver's cursor, counting the rows fetched from it."""

    def __init__(self, cursor, meter: Meter) -> None:
        self._cursor = cursor
        self._meter = meter

    def fetchone(self):
        row = self._cursor.fetchone()
        if row is not None:
            self._meter.rows_read += 1
        return row

    def fetchmany(self, *args, **kwargs):
        rows = self._cursor.fetchmany(*args, **kwargs)
        self._meter.rows_read += len(rows)
        return rows

    def fetchall(self):
        rows = self._cursor.fetchall()
        self._meter.rows_read += len(rows)
        return rows

    def __iter__(self):
        for row in self._cursor:
            self._meter.rows_read += 1
            yield row

    def __getattr__(self, name: str):
        return getattr(self._cursor, name)


class Meter:
    """Measures what happens between start() and stop() in this process and thread."""

    def __init__(self) -> None:
        self.rows_read = 0
        self.rows_written = 0
        self._stack = ExitStack()

    def __call__(self, execute, sql, params, many, context):
        """Django's execute wrapper: count the rows this statement writes, and those it
        returns as they are fetched."""
        wrapper = context["cursor"]
        if not isinstance(wrapper.cursor, _CountingCursor):
            wrapper.cursor = _CountingCursor(wrapper.cursor, self)
        result = execute(sql, params, many, context)
        words = sql.lstrip().split(None, 1)
        if words and words[0].upper() in WRITE_STATEMENTS:
            self.rows_written += max(0, wrapper.cursor.rowcount or 0)
        return result

    def start(self) -> Meter:
        for alias in connections:
            self._stack.enter_context(connections[alias].execute_wrapper(self))
        self._wall = time.monotonic()
        self._cpu = time.process_time()
        self._io = read_proc_io()
        self._peak = peak_rss_bytes()
        return self

    def stop(self) -> Figures:
        self._stack.close()
        io = read_proc_io()
        peak = peak_rss_bytes()
        return Figures(
            wall_s=time.monotonic() - self._wall,
            cpu_s=time.process_time() - self._cpu,
            rows_read=self.rows_read,
            rows_written=self.rows_written,
            io_read_bytes=io[0] - self._io[0] if io and self._io else None,
            io_write_bytes=io[1] - self._io[1] if io and self._io else None,
            peak_rss_bytes=peak,
            rss_growth_bytes=peak - self._peak,
        )
