"""What each scheduled run cost. Read-only: the runs write these rows."""

from __future__ import annotations

from django.contrib import admin

from work.models import JobRun


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


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
