"""Every day's digest with its state (sent, skipped, failed: when, to whom). Read-only:
the digest job writes these rows; `send_digest --date` sends a skipped or failed day."""

from __future__ import annotations

from django.contrib import admin

from work.admin import ReadOnlyAdmin
from work.models import Digest


@admin.register(Digest)
class DigestAdmin(ReadOnlyAdmin):
    list_display = (
        "day",
        "state",
        "sent_at",
        "mailed_at",
        "mailed_to",
        "posted_at",
        "posted_to",
        "attempts",
        "last_error",
    )
    list_filter = ("state",)
    date_hierarchy = "day"
    exclude = ("content",)
    readonly_fields = (
        "day",
        "state",
        "attempts",
        "claims",
        "lease_expires_at",
        "next_attempt_at",
        "last_error",
        "mailed_at",
        "mailed_to",
        "posted_at",
        "posted_to",
        "sent_at",
        "created_at",
        "updated_at",
    )
