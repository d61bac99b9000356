"""The API's errors that are not a field's (those are Django's ValidationError)."""

from __future__ import annotations


class ApiError(Exception):
    """The request cannot be done."""

    status = 400

    def __init__(self, message: str | None = None):
        super().__init__(message or self.__doc__)


class IdempotencyConflict(ApiError):
    """This Idempotency-Key was already used with another request."""

    status = 409


class NotRequeueable(ApiError):
    """Only a dead article can be requeued."""

    status = 409


class DeliveryNotRequeueable(ApiError):
    """Only a dead webhook delivery can be requeued."""

    status = 409


class NotWithdrawable(ApiError):
    """Only an article that is on the blog (pending, published or dead) can be withdrawn."""

    status = 409


class DraftConflict(ApiError):
    """The draft was saved since the version this request names (If-Match)."""

    status = 412


class PermissionMissing(ApiError):
    """The token's user may not do this."""

    status = 403


class InsufficientScope(PermissionMissing):
    """This token's scope does not allow this (a read token, and a write)."""


class TokenRefused(Exception):
    """Only an active staff user with a permission on articles can have an API token."""

    def __init__(self, message: str | None = None):
        super().__init__(message or self.__doc__)
