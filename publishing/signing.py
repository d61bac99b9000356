"""The signature of every webhook request blogpublish sends (publishing and alerts).

As Stripe signs its webhooks: the timestamp and the idempotency key are signed with the
raw body, so a captured request can be neither replayed later (receivers reject a
timestamp older than five minutes) nor sent again under another key:

    X-Blogpublish-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<key>.<raw body>">

docs/site.md ("The webhook") shows the receiving side.
"""

from __future__ import annotations

import hashlib
import hmac
import time

SIGNATURE_HEADER = "X-Blogpublish-Signature"
IDEMPOTENCY_HEADER = "Idempotency-Key"


def sign(*, secret: str, key: str, body: bytes, timestamp: int | None = None) -> str:
    """The signature header's value for this request, exactly as sent."""
    t = int(time.time()) if timestamp is None else timestamp
    signed = f"{t}.{key}.".encode() + body
    digest = hmac.new(secret.encode("utf-8"), signed, hashlib.sha256).hexdigest()
    return f"t={t},v1={digest}"


def signed_headers(*, secret: str, key: str, body: bytes) -> dict[str, str]:
    """The headers every webhook request carries, signed now."""
    return {
        "Content-Type": "application/json",
        IDEMPOTENCY_HEADER: key,
        SIGNATURE_HEADER: sign(secret=secret, key=key, body=body),
    }
