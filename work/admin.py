"""What each scheduled run cost. Read-only: the runs write these rows."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.views.main import ERROR_FLAG, IGNORED_PARAMS, PAGE_VAR, ChangeList
from django.db.models.constants import LOOKUP_SEP
from django.http import HttpRequest

from work.models import JobRun


class BadLookupsAreBadLinks(admin.ModelAdmin):
    """A list's filter the database cannot run is a bad link, not a 500.

    Django builds a date lookup's bounds only when the query runs, after the list has
    taken the filters from the address: `?created_at__year=99999` (or `=0`) raises
    ValueError ("year 99999 is out of range") there, and an integer past the database's
    range OverflowError. Raised as IncorrectLookupParameters, the list answers as it does
    for any bad filter: back to itself with `?e=1`. Every ModelAdmin of the project takes
    this as a base (tests/security/test_admin_lookups.py walks them all); it is here, in
    the package every other imports, so that each can.

    A regular expression from the address is refused (Django's 400 for a lookup it does
    not allow): on SQLite it runs in Python's `re`, where `?body__regex=(a%2B)%2B$` took
    10 s of a worker on one body of 26 characters and doubles with each more, and on
    PostgreSQL a malformed one (`?title__regex=(`) was a 500 (a review's finding). The
    search box and the filters in the sidebar use none."""

    REFUSED_LOOKUPS = frozenset({"regex", "iregex"})

    def lookup_allowed(self, lookup: str, value: str, request: HttpRequest) -> bool:
        if lookup.rsplit(LOOKUP_SEP, 1)[-1] in self.REFUSED_LOOKUPS:
            return False
        return super().lookup_allowed(lookup, value, request)

    def get_changelist_instance(self, request: HttpRequest):
        try:
            return super().get_changelist_instance(request)
        except (ValueError, OverflowError) as exc:
            if not _has_lookups(request):
                raise  # a plain list failing is a bug to see, not a link to correct
            raise IncorrectLookupParameters(exc) from exc


class RowsWithout(ChangeList):
    """A list whose rows leave out its admin's `list_deferred` columns (a body of up to
    1 MiB, which no column of the list shows): a page of 100 stories read 100 full
    bodies (a review's finding). Only the rows shown: the change view reads them all,
    and an action's queryset is the list's as Django makes it."""

    def get_results(self, request: HttpRequest) -> None:
        self.queryset = self.queryset.defer(*getattr(self.model_admin, "list_deferred", ()))
        super().get_results(request)


class ListsWithout:
    """A ModelAdmin's mixin: its list reads no `list_deferred` column (RowsWithout)."""

    list_deferred: tuple[str, ...] = ()

    def get_changelist(self, request: HttpRequest, **kwargs):
        return RowsWithout


def _has_lookups(request: HttpRequest) -> bool:
    """The address filters the list (beyond its order, search, page and such)."""
    own = {*IGNORED_PARAMS, PAGE_VAR, ERROR_FLAG}
    return any(name not in own for name in request.GET)


class ReadOnlyAdmin(BadLookupsAreBadLinks):
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
