"""Telling people: the log, the site admins' mail, and ALERT_WEBHOOK_URL when set.

Alerts run after the state change has committed; a failing channel is logged and
never undoes or delays the state change.
"""

from __future__ import annotations

import logging
import socket

import requests
from django.conf import settings
from django.core.mail import mail_admins

logger = logging.getLogger(__name__)

WEBHOOK_TIMEOUT = (2.0, 3.0)  # connect, read


def send_alert(*, kind: str, subject: str, message: str, data: dict) -> None:
    logger.error("%s: %s", subject, message)
    try:
        mail_admins(f"[blogpublish] {subject}", message, fail_silently=False)
    except Exception:
        logger.exception("alert %s: mail to the admins failed", kind)
    url = settings.ALERT_WEBHOOK_URL
    if not url:
        return
    payload = {"kind": kind, "subject": subject, "message": message, "host": socket.gethostname()}
    try:
        response = requests.post(url, json={**payload, **data}, timeout=WEBHOOK_TIMEOUT)
        response.raise_for_status()
    except requests.RequestException as exc:
        logger.error("alert %s: ALERT_WEBHOOK_URL failed: %s", kind, exc)
