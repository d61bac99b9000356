"""How the digest travels: a mail (HTML and plain text) to DIGEST_RECIPIENTS through
Django's mail (the EMAIL_* settings), and a signed POST to DIGEST_WEBHOOK_URL in the
publish webhook's format (publishing/signing.py) under `Idempotency-Key:
digest-YYYY-MM-DD`, so a receiver drops a repeat (a retry, a take-over)."""

from __future__ import annotations

import json
from urllib.parse import urlsplit

import requests
from django.conf import settings
from django.core.mail import EmailMultiAlternatives

from digest.content import digest_render, digest_subject
from digest.exceptions import DigestSendError
from publishing.exceptions import PermanentPublishError, TransientPublishError
from publishing.signing import signed_headers
from publishing.webhook_post import CONNECT_TIMEOUT, check_answer


def digest_key(day: str) -> str:
    """The webhook's Idempotency-Key of a day's digest: the same at every try."""
    return f"digest-{day}"


def mail_digest(content: dict, *, recipients: list[str]) -> None:
    text, html = digest_render(content)
    host = urlsplit(settings.SITE_URL).hostname or "blogpublish"
    message = EmailMultiAlternatives(
        subject=digest_subject(content),
        body=text,
        to=recipients,
        # The same for every try of the day: a mail client shows a repeat once.
        headers={"Message-ID": f"<{digest_key(content['day'])}@{host}>"},
    )
    message.attach_alternative(html, "text/html")
    try:
        message.send(fail_silently=False)
    except Exception as exc:  # refused, unreachable, timed out: all worth another try
        raise DigestSendError(f"mail to {', '.join(recipients)} failed: {exc}") from exc


def encode(content: dict) -> bytes:
    """The body: keys sorted, so that the content kept on the row (PostgreSQL's jsonb
    orders keys its own way) is sent byte for byte the same at every try."""
    return json.dumps(content, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode()


def post_digest(content: dict, *, url: str, secret: str) -> None:
    body = encode(content)
    key = digest_key(content["day"])
    headers = {
        **signed_headers(secret=secret, key=key, body=body),
        "User-Agent": "blogpublish-webhook/1",
    }
    read = settings.PUBLISH_WEBHOOK_TIMEOUT
    try:
        response = requests.post(
            url,
            data=body,
            headers=headers,
            timeout=(min(CONNECT_TIMEOUT, read), read),
            allow_redirects=False,
        )
        check_answer(response.status_code, response.text)
    except requests.RequestException as exc:
        raise DigestSendError(f"digest webhook unreachable: {exc}") from exc
    except TransientPublishError as exc:
        raise DigestSendError(f"digest {exc}") from exc
    except PermanentPublishError as exc:
        raise DigestSendError(f"digest {exc}", permanent=True) from exc
