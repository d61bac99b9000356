"""A circuit breaker: after a failure, stop waiting on the same thing for a while.

Plain Python (no Django, no Celery), so it is tested as a pure object.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class Breaker:
    """Closed, every call goes through. A failure opens it for `seconds`: calls are
    refused at once. When the time is up, the next call is let through as a trial
    (half-open) while the others are still refused for another `seconds`; the trial's
    success closes the breaker, its failure opens it again. A trial that never reports
    (its thread was stopped) only costs one more window.

    With `seconds` 0 it never opens. One per process, shared by its threads.
    """

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._open_until: float | None = None  # None: closed
        self._seconds = 0.0
        self.skipped = 0  # calls refused since it opened

    @property
    def is_open(self) -> bool:
        return self._open_until is not None

    def allow(self) -> bool:
        """May this call go to the broker? Counts the calls it refuses."""
        with self._lock:
            if self._open_until is None:
                return True
            now = self._clock()
            if now >= self._open_until:
                self._open_until = now + self._seconds  # the others wait for this trial
                return True
            self.skipped += 1
            return False

    def succeeded(self) -> int:
        """Close it; returns how many calls it refused while it was open."""
        with self._lock:
            skipped, self.skipped = self.skipped, 0
            self._open_until = None
            return skipped

    def failed(self, seconds: float) -> bool:
        """Open it for `seconds`; True when it was closed until now (the caller logs
        the outage once, not once per call)."""
        with self._lock:
            was_closed = self._open_until is None
            if seconds > 0:
                self._seconds = seconds
                self._open_until = self._clock() + seconds
            return was_closed
