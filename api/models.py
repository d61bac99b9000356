"""The API's own rows: its tokens, and the Idempotency-Keys it has answered.

A token is shown once, when it is made; only its SHA-256 is stored. That is enough
(no salt, no slow hash) because the token is 256 random bits, not a password a person
chose: there is no dictionary to try, and a stolen table of hashes gives nothing that
opens the API.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q


class TokenScope(models.TextChoices):
    """What a token may do, chosen when it is made (as GitHub's and Ghost's tokens)."""

    # GET only: read articles, within its user's permissions.
    READ = "read", "read (GET only)"
    # Everything its user's permissions allow: create, edit, delete, requeue, read.
    WRITE = "write", "write (all its user may do)"


class ApiToken(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="api_tokens",
        limit_choices_to={"is_staff": True},
        help_text="A staff user; the API acts as this user.",
    )
    name = models.CharField(
        max_length=100, blank=True, default="", help_text="What uses it (a CI job, a tool)."
    )
    # Least privilege by default: a new token reads unless write is asked for. (Tokens
    # made before scopes existed were migrated to write: they keep working as they did.)
    scope = models.CharField(
        max_length=5,
        choices=TokenScope.choices,
        default=TokenScope.READ,
        help_text="read: GET only. write: everything the user's permissions allow. "
        "Fixed when the token is made.",
    )
    # The token's first characters, to tell tokens apart in lists; never enough to use.
    prefix = models.CharField(max_length=16, editable=False)
    # sha256(token), hex: what a request's token is looked up by.
    digest = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    # Set when revoked: the token is refused from then on (the row stays, for the record).
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        verbose_name = "API token"
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(scope__in=TokenScope.values), name="api_token_scope_known"
            ),
        ]

    def __str__(self) -> str:
        label = f" ({self.name})" if self.name else ""
        return f"{self.prefix}… of {self.user}{label}"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class IdempotencyKey(models.Model):
    """An `Idempotency-Key` a user sent with a POST that created an article: the same
    key again with the same request gets that article, with another request a 409.
    Kept in the database, so a retry after a restart (or on another web process) is
    answered alike."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=255)
    # sha256 of the request body in a canonical form (the JSON re-serialised, keys sorted).
    request_digest = models.CharField(max_length=64)
    # The article the key created; NULL once that article is deleted (the key stays
    # spent: a retry must not create it again).
    article = models.ForeignKey(
        "publishing.Article", on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "key"], name="api_idempotency_key_per_user"),
            models.CheckConstraint(condition=~Q(key=""), name="api_idempotency_key_not_blank"),
        ]

    def __str__(self) -> str:
        return f"{self.key} → article {self.article_id}"
