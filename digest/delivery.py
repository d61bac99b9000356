"""How the digest travels: a mail (HTML and plain text) to DIGEST_RECIPIENTS through
Django's mail (the EMAIL_* settings), and a signed POST to DIGEST_WEBHOOK_URL in the
publish webhook's format (publishing/signing.py) under `Idempotency-Key:
digest-YYYY-MM-DD`, so a receiver drops a repeat (a retry, a take-over)."""

from __future__ import annotations

import json
from urllib.parse import urlsplit

from django.conf import settings
from django.core.mail import EmailMultiAlternatives

from digest.content import digest_render, digest_subject
from digest.exceptions import DigestSendError
from publishing.exceptions import PermanentPublishError, TransientPublishError
from publishing.webhook_post import post_signed


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
    """POST the day's digest through the article webhook's request (publishing's
    `post_signed`): streamed, so a 2xx answer's body is not read and of an error's only
    its first few KiB (a review's finding: a receiver's 300 MB error page read whole
    took the worker's memory up by 900 MB); what the answer means, as for articles."""
    try:
        post_signed(
            url=url,
            secret=secret,
            key=digest_key(content["day"]),
            body=encode(content),
            read_timeout=settings.PUBLISH_WEBHOOK_TIMEOUT,
            setting="DIGEST_WEBHOOK_URL",
        )
    except TransientPublishError as exc:
        raise DigestSendError(f"digest {exc}") from exc
    except PermanentPublishError as exc:
        raise DigestSendError(f"digest {exc}", permanent=True) from exc
