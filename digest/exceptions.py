from __future__ import annotations


class ClockError(Exception):
    """A scheduled job failed."""

    def __init__(self, message: str | None = None):
        super().__init__(message or self.__doc__)


class DigestSendError(ClockError):
    """The digest could not be sent; it is tried again later (unless permanent)."""

    def __init__(self, message: str | None = None, *, permanent: bool = False):
        super().__init__(message)
        self.permanent = permanent


class DigestRetry(ClockError):
    """A day's digest failed and waits for its next try."""

    def __init__(self, message: str | None = None, *, retry_in: float):
        super().__init__(message)
        self.retry_in = retry_in


class DigestDateError(ClockError):
    """Only a day that is over has a digest."""
