"""Telling people: the log, the site admins' mail, and ALERT_WEBHOOK_URL when set.

Alerts run after the state change has committed; a failing channel is logged and
never undoes or delays the state change. `send_alert` says whether some channel took
the alert, so a death's that none took is sent again later (services.alarms).

The alert webhook is a POST of JSON, signed as the publishing webhook is
(publishing/signing.py) with ALERT_WEBHOOK_SECRET, under an Idempotency-Key of its own
per alert (a death's the same at each try of its alert). It follows no redirect: a POST
must not be carried to another address, and a 3xx means the URL is wrong, so it is a
failure, logged like any other.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import uuid
from collections.abc import Callable
from enum import StrEnum

import requests
from django.conf import settings
from django.core.mail import mail_admins

from publishing.signing import signed_headers
from publishing.webhook_post import failure_reason

logger = logging.getLogger(__name__)

WEBHOOK_TIMEOUT = (2.0, 3.0)  # connect, read
# Seconds an alert's POST may take in all, whatever its endpoint does meanwhile.
ALERT_DEADLINE = 5.0
# Seconds its mail to the ADMINS may take in all: EMAIL_TIMEOUT (10 s) bounds each of
# the SMTP exchange's reads, and a server that answers a line every few seconds held
# the backup executor, or the catch-up to its time limit (a review's finding).
MAIL_DEADLINE = 15.0


def _within(seconds: float, name: str, call: Callable[[], object]) -> list:
    """`call()` in a thread of its own, waited for at most `seconds`: [its result, or
    the exception it raised], or [] when it did not end in time (the thread is left to
    end with its connection)."""
    ended: list = []

    def run() -> None:
        try:
            ended.append(call())
        except Exception as exc:
            ended.append(exc)

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    thread.join(seconds)
    return ended


def _post(url: str, body: bytes, headers: dict) -> requests.Response:
    """POST the alert; its response (the body never read)."""
    with requests.post(
        url,
        data=body,
        headers=headers,
        timeout=WEBHOOK_TIMEOUT,
        allow_redirects=False,
        stream=True,
    ) as response:
        return response


class Sent(StrEnum):
    """What became of an alert."""

    # A channel took it, or none is set (the log is all there is).
    TAKEN = "taken"
    # No channel took it, and one at least is still at it past its deadline: it may yet
    # arrive, or never (a DNS lookup that hangs, a server that then drops it).
    LATE = "late"
    # Every channel set refused or failed. A caller that can send it again later (a
    # death's) does so for this and LATE alike.
    FAILED = "failed"


def send_alert(
    *, kind: str, subject: str, message: str, data: dict, key: str | None = None
) -> Sent:
    """Log the alert, mail it to the ADMINS and POST it to ALERT_WEBHOOK_URL (under `key`,
    the same for every try of one alert, or a new one)."""
    logger.error("%s: %s", subject, message)
    mailed = _mail(kind, subject, message) if settings.ADMINS else None
    posted = _webhook(kind, subject, message, data, key) if settings.ALERT_WEBHOOK_URL else None
    channels = [c for c in (mailed, posted) if c is not None]
    if not channels or Sent.TAKEN in channels:
        return Sent.TAKEN
    return Sent.LATE if Sent.LATE in channels else Sent.FAILED


def _mail(kind: str, subject: str, message: str) -> Sent:
    ended = _within(
        MAIL_DEADLINE,
        "alert-mail",
        lambda: mail_admins(f"[blogpublish] {subject}", message, fail_silently=False),
    )
    if not ended:
        logger.error(
            "alert %s: the mail server did not take the mail within %s s; left", kind, MAIL_DEADLINE
        )
        return Sent.LATE
    if isinstance(ended[0], Exception):
        logger.error("alert %s: mail to the admins failed", kind, exc_info=ended[0])
        return Sent.FAILED
    return Sent.TAKEN


def _webhook(kind: str, subject: str, message: str, data: dict, key: str | None) -> Sent:
    url = settings.ALERT_WEBHOOK_URL
    payload = {"kind": kind, "subject": subject, "message": message, "host": socket.gethostname()}
    body = json.dumps({**payload, **data}, ensure_ascii=False, default=str).encode("utf-8")
    key = key or uuid.uuid4().hex
    headers = signed_headers(secret=settings.ALERT_WEBHOOK_SECRET, key=key, body=body)
    answered = _within(ALERT_DEADLINE, "alert", lambda: _post(url, body, headers))
    if not answered:
        # A thread of its own with a deadline on the whole request: the timeouts bound
        # each read only, and an endpoint that answers a byte a second held a publish
        # (and the catch-up) for the task's time limit (a review's finding). The thread
        # is left to end with the connection.
        logger.error(
            "alert %s: ALERT_WEBHOOK_URL did not answer within %s s; left", kind, ALERT_DEADLINE
        )
        return Sent.LATE
    response = answered[0]
    if isinstance(response, Exception):
        # Its reason alone: the URL's path or query may be a secret.
        logger.error("alert %s: ALERT_WEBHOOK_URL failed: %s", kind, failure_reason(response))
        return Sent.FAILED
    if not 200 <= response.status_code < 300:
        redirect = " (a redirect: not followed)" if 300 <= response.status_code < 400 else ""
        logger.error(
            "alert %s: ALERT_WEBHOOK_URL failed: HTTP %s%s",
            kind,
            response.status_code,
            redirect,
        )
        return Sent.FAILED
    return Sent.TAKEN
