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
import http.client
import socket
import ssl
from datetime import UTC, datetime

import requests
import urllib3

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


def post_signed(
    *,
    url: str,
    secret: str,
    key: str,
    body: bytes,
    read_timeout: float,
    setting: str = "PUBLISH_WEBHOOK_URL",
) -> int:
    """POST `body` signed under `key`; the receiver's status code when it answered 2xx.
    Raises `NoAnswer` (a `TransientPublishError`: timed out, unreachable) or, through
    `check_answer`, what a non-2xx answer means; the status code is in the message.
    No message holds the URL, whose path or query may be a secret (Slack's): the
    `setting` that names it, and why (`failure_reason`)."""
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
            # The status line and the headers decide; the body only adds its words.
            status = response.status_code
            retry_after = response.headers.get("Retry-After")
            text = "" if 200 <= status < 300 else answer_start(response)
    except requests.ConnectTimeout as exc:
        connect = timeouts(read_timeout)[0]
        raise NoAnswer(f"{setting} timed out: no connection within {connect:g} s") from exc
    except requests.Timeout as exc:
        raise NoAnswer(f"{setting} timed out: nothing read for {read_timeout:g} s") from exc
    except requests.RequestException as exc:  # connection refused, DNS, TLS, …
        raise NoAnswer(f"{setting} unreachable: {failure_reason(exc)}") from exc
    check_answer(status, text, retry_after=retry_after)
    return status


def failure_reason(exc: BaseException) -> str:
    """Why a request failed, without its URL: requests' and urllib3's messages repeat the
    URL's path and query, which may be the receiver's secret (a review's finding: it was
    in `last_error`, the dashboard, the logs and the alerts). The root cause's own
    words: "connection refused", "name not resolved (…)", "TLS failed (…)", or the
    error's type."""
    if isinstance(exc, requests.Timeout):
        return "timed out"
    for cause in _causes(exc):
        if isinstance(cause, socket.gaierror):
            return f"name not resolved ({cause.strerror})"
        if isinstance(cause, ssl.SSLError):
            return f"TLS failed ({cause.reason or cause.strerror})"
        if isinstance(cause, OSError) and cause.errno is not None and cause.strerror:
            return cause.strerror[:1].lower() + cause.strerror[1:]
        if isinstance(cause, http.client.HTTPException):  # the receiver's words, if any
            return " ".join(f"{type(cause).__name__}: {cause}".split())[:ANSWER_EXCERPT_CHARS]
    return type(exc).__name__


def _causes(exc: BaseException) -> list[BaseException]:
    """`exc` and what it wraps (causes, contexts, urllib3's `reason`, arguments), outer
    first."""
    seen: list[BaseException] = []
    stack = [exc]
    while stack:
        error = stack.pop(0)
        if any(error is s for s in seen):
            continue
        seen.append(error)
        wrapped = [error.__cause__, error.__context__, getattr(error, "reason", None)]
        stack += [e for e in [*wrapped, *error.args] if isinstance(e, BaseException)]
    return seen


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


# What reading a body that the status line already classified can raise: cut short, a
# broken chunk or gzip stream (requests' wrappers, urllib3's own), a read timeout, a
# reset.
UNREADABLE = (
    requests.RequestException,
    urllib3.exceptions.HTTPError,
    http.client.HTTPException,
    OSError,
)


def answer_start(response: requests.Response) -> str:
    """The first ANSWER_READ_BYTES of a streamed answer's body, as text. The answer is
    classified by its status line and headers, whatever its body: one that cannot be
    read or decoded is said so here, never raised (a review's finding: a 404 with a
    body cut short, a broken gzip or an unknown charset was taken for an unreachable
    receiver and tried again, and a 503's Retry-After was lost)."""
    try:
        start = next(response.iter_content(ANSWER_READ_BYTES, decode_unicode=False), b"")
    except UNREADABLE as exc:
        return f"(its body could not be read: {failure_reason(exc)})"
    try:
        return start.decode(response.encoding or "utf-8", errors="replace")
    except (LookupError, UnicodeError):
        # A charset Python does not know, or a codec that refuses errors="replace" (idna,
        # punycode): its bytes, as UTF-8 would read them.
        return start.decode("utf-8", errors="replace")
