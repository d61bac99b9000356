"""Log lines that name the article: `article_id`, `attempt`, `task_id` and `request_id`
as fields of every record logged while they are known.

They live in a context variable, set around a task (config/celery.py, from the task's
arguments and headers), around an attempt (publishing.services.publish), and around a
web request (publishing.middleware, which also puts the request id into the headers of
the tasks the request sends). `ContextFilter` (on the console handler, see LOGGING in
config/settings.py) copies them onto each record: with LOG_FORMAT=json they are keys of
the object, and `TextFormatter` appends them as `[article_id=… attempt=… task_id=…]`.
So `grep 'article_id=42'` (or `"article_id": 42`) follows one article from the save to
the worker.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token

FIELDS = ("article_id", "attempt", "task_id", "request_id")

_context: ContextVar[dict] = ContextVar("blogpublish_log_context", default={})  # noqa: B039


def current() -> dict:
    return dict(_context.get())


def bind(**fields) -> Token:
    """Add `fields` (None values are ignored) to the context until `unbind(token)`."""
    values = {name: value for name, value in fields.items() if value not in (None, "")}
    return _context.set({**_context.get(), **values})


def unbind(token: Token) -> None:
    _context.reset(token)


@contextmanager
def log_context(**fields) -> Iterator[None]:
    token = bind(**fields)
    try:
        yield
    finally:
        unbind(token)


class ContextFilter(logging.Filter):
    """Copies the context's fields onto each record (a field the call passed in
    `extra=` wins)."""

    def filter(self, record: logging.LogRecord) -> bool:
        for name, value in _context.get().items():
            if not hasattr(record, name):
                setattr(record, name, value)
        return True


class TextFormatter(logging.Formatter):
    """The text format, with the context's fields after the message."""

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        fields = [f"{name}={getattr(record, name)}" for name in FIELDS if hasattr(record, name)]
        if not fields:
            return line
        head, newline, rest = line.partition("\n")  # before a traceback, if any
        return f"{head} [{' '.join(fields)}]{newline}{rest}"
