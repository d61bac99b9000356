"""Every day's digest with its state (sent, skipped, failed: when, to whom), and what
each scheduled run cost. Read-only: the clock writes these rows; `send_digest --date`
sends a skipped or failed day."""

from __future__ import annotations

from django.contrib import admin

from clock.models import Digest, JobRun


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


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


@admin.register(JobRun)
class JobRunAdmin(ReadOnlyAdmin):
    list_display = (
        "job",
        "outcome",
        "started_at",
        "wall_s",
        "cpu_s",
        "rows_read",
        "rows_written",
        "io_read_bytes",
        "io_write_bytes",
        "peak_rss_bytes",
        "host",
    )
    list_filter = ("job", "outcome")
    date_hierarchy = "started_at"
