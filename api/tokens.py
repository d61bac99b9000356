"""API tokens: made for a staff user with a permission on articles, with a scope (read or
write), shown once, stored as a SHA-256, revocable."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.contrib.auth.models import User
from django.db.models import Q
from django.db.models.functions import Now
from django.utils import timezone

from api.models import ApiToken, TokenScope
from api.permissions import check_token_allowed

# "bp_" says what the secret is (secret scanners and people recognise it); 32 random
# bytes make it unguessable, which is why a plain SHA-256 is enough to store it.
TOKEN_PREFIX = "bp_"
TOKEN_BYTES = 32
# Longer than any token we make: a longer value is refused without hashing it.
TOKEN_MAX_LENGTH = 100
# last_used_at is written at most this often per token, not on every request.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def token_create(
    *, user: User, name: str = "", scope: str = TokenScope.READ
) -> tuple[ApiToken, str]:
    """A new token for `user` (an active staff user with a permission on articles that
    a token of `scope` can use): (its row, the token). Raises TokenRefused otherwise.
    The token itself is stored nowhere: show it to the person now."""
    check_token_allowed(user=user, scope=scope)
    token = TOKEN_PREFIX + secrets.token_urlsafe(TOKEN_BYTES)
    row = ApiToken.objects.create(
        user=user,
        name=name,
        scope=scope,
        prefix=token[: len(TOKEN_PREFIX) + 6],
        digest=token_digest(token),
    )
    return row, token


def tokens_revoke(*, token_ids) -> int:
    """Revoke these tokens (the ones not revoked yet); returns how many."""
    return ApiToken.objects.filter(pk__in=token_ids, revoked_at__isnull=True).update(
        revoked_at=Now()
    )


def token_lookup(token: str) -> ApiToken | None:
    """The token row a request's token is (its `user` loaded); None for a token that is
    unknown, revoked, or whose user is no longer an active staff user. What the token
    may do is checked per operation (api/permissions.py)."""
    if not token or len(token) > TOKEN_MAX_LENGTH:
        return None
    row = (
        ApiToken.objects.select_related("user")
        .filter(digest=token_digest(token), revoked_at__isnull=True)
        .first()
    )
    if row is None or not (row.user.is_active and row.user.is_staff):
        return None
    cutoff = timezone.now() - LAST_USED_RESOLUTION
    ApiToken.objects.filter(pk=row.pk).filter(
        Q(last_used_at__isnull=True) | Q(last_used_at__lt=cutoff)
    ).update(last_used_at=Now())
    return row
