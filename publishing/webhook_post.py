"""One signed POST of a webhook body, and what the receiver's answer means.

The request blogpublish's webhooks send (docs/site.md, "The webhook"): the body as
given, `Content-Type: application/json`, `Idempotency-Key`, `X-Blogpublish-Signature`
(publishing/signing.py, signed at each try, so a retry's timestamp is fresh and its key
the same) and `User-Agent: blogpublish-webhook/1`; no redirect followed (a POST must not
be carried to another address).

A timeout, a connection error, 408, 429 or 5xx is transient (`TransientPublishError`:
worth another try); any other answer outside 2xx is permanent (`PermanentPublishError`:
the receiver refuses this request, or the URL is wrong).
"""

from __future__ import annotations

import email.utils
from datetime import UTC, datetime

import requests

from publishing.exceptions import NoAnswer, PermanentPublishError, TransientPublishError
from publishing.signing import signed_headers

TRANSIENT_STATUSES = frozenset({408, 429})
CONNECT_TIMEOUT = 3.05  # a little over a multiple of 3 s, the TCP retransmission window
ANSWER_EXCERPT_CHARS = 200
USER_AGENT = "blogpublish-webhook/1"


def check_answer(status: int, text: str, *, retry_after: str | None = None) -> None:
    """Raise what the sender needs to know about the receiver's answer; with the wait a
    transient one asked for (`retry_after`, the Retry-After header) when it gave one."""
    if 200 <= status < 300:
        return
    message = f"webhook answered HTTP {status}"
    answer = " ".join(text.split())[:ANSWER_EXCERPT_CHARS]
    if answer:
        message = f"{message}: {answer}"
    if status in TRANSIENT_STATUSES or status >= 500:
        raise TransientPublishError(message, asked_wait=seconds_asked(retry_after))
    # Other 4xx: the receiver refuses this event. 3xx: the URL is wrong (a POST must not
    # be followed to another address). Retrying cannot help either.
    raise PermanentPublishError(message)


def timeouts(read: float) -> tuple[float, float]:
    """(connect, read) of one request: connecting never takes longer than the answer may."""
    return (min(CONNECT_TIMEOUT, read), read)


def post_signed(*, url: str, secret: str, key: str, body: bytes, read_timeout: float) -> int:
    """POST `body` signed under `key`; the receiver's status code when it answered 2xx.
    Raises `NoAnswer` (a `TransientPublishError`: timed out, unreachable) or, through
    `check_answer`, what a non-2xx answer means; the status code is in the message."""
    headers = {**signed_headers(secret=secret, key=key, body=body), "User-Agent": USER_AGENT}
    try:
        # Streamed: of the answer's body only what the error message keeps is read (a
        # review's finding: a receiver's 1.5 GB error page took the worker to 3 GB).
        with requests.post(
            url,
            data=body,
            headers=headers,
            timeout=timeouts(read_timeout),
            allow_redirects=False,
            stream=True,
        ) as response:
            status = response.status_code
            text = "" if 200 <= status < 300 else answer_start(response)
            retry_after = response.headers.get("Retry-After")
    except requests.Timeout as exc:
        raise NoAnswer(f"webhook timed out: {exc}") from exc
    except requests.RequestException as exc:  # connection refused, DNS, TLS, …
        raise NoAnswer(f"webhook unreachable: {exc}") from exc
    check_answer(status, text, retry_after=retry_after)
    return status


def seconds_asked(retry_after: str | None) -> float | None:
    """Retry-After's wait in seconds (RFC 9110 §10.2.3: a number of seconds, or an HTTP
    date); None when there is none, or it is neither."""
    if not retry_after:
        return None
    text = retry_after.strip()
    if text.isascii() and text.isdigit():
        return float(text)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


# Bytes of a non-2xx answer's body read for its message (of which ANSWER_EXCERPT_CHARS
# are kept): enough for any error's first sentence, whatever the receiver sends.
ANSWER_READ_BYTES = 4096


def answer_start(response: requests.Response) -> str:
    """The first ANSWER_READ_BYTES of a streamed answer's body, as text."""
    start = next(response.iter_content(ANSWER_READ_BYTES, decode_unicode=False), b"")
    return start.decode(response.encoding or "utf-8", errors="replace")
