"""Log lines that name the article (publishing.logcontext): the context's fields on
every record, as JSON keys and after a text line; nested contexts and their end."""

from __future__ import annotations

import io
import json
import logging

import pytest
from pythonjsonlogger.json import JsonFormatter

from publishing.logcontext import ContextFilter, TextFormatter, current, log_context


@pytest.fixture
def capture():
    def make(formatter: logging.Formatter) -> tuple[logging.Logger, io.StringIO]:
        stream = io.StringIO()
        handler = logging.StreamHandler(stream)
        handler.setFormatter(formatter)
        handler.addFilter(ContextFilter())
        logger = logging.getLogger(f"test.logcontext.{id(stream)}")
        logger.handlers, logger.propagate = [handler], False
        logger.setLevel(logging.INFO)
        return logger, stream

    return make


def test_text_lines_end_with_the_fields_that_are_known(capture):
    logger, stream = capture(TextFormatter("%(levelname)s %(message)s"))

    with log_context(article_id=42, task_id="t-1"):
        logger.info("claimed")
        with log_context(attempt=2):
            logger.info("published")
    logger.info("idle")

    assert stream.getvalue().splitlines() == [
        "INFO claimed [article_id=42 task_id=t-1]",
        "INFO published [article_id=42 attempt=2 task_id=t-1]",
        "INFO idle",
    ]


def test_json_lines_carry_the_fields_as_keys(capture):
    logger, stream = capture(JsonFormatter("%(levelname)s %(message)s"))

    with log_context(article_id=7, attempt=1, task_id="abc", request_id="req-12345678"):
        logger.info("article 7 published (attempt 1)")

    line = json.loads(stream.getvalue())
    assert (line["article_id"], line["attempt"], line["task_id"], line["request_id"]) == (
        7,
        1,
        "abc",
        "req-12345678",
    )


def test_a_traceback_stays_below_the_line_with_the_fields(capture):
    logger, stream = capture(TextFormatter("%(message)s"))

    with log_context(article_id=3):
        try:
            raise ValueError("boom")
        except ValueError:
            logger.exception("attempt raised")

    first, *rest = stream.getvalue().splitlines()
    assert first == "attempt raised [article_id=3]"
    assert rest[0].startswith("Traceback")


def test_empty_values_are_left_out_and_the_context_ends_with_its_block():
    with log_context(article_id=5, task_id="", attempt=None):
        assert current() == {"article_id": 5}
    assert current() == {}
