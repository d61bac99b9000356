"""A list filter the database cannot run is a bad link, not a 500 (a review's finding):
a year past the calendar's (`?created_at__year=99999`, `=0`) raised ValueError in
Django's year_lookup_bounds on every list but the Article list's own date. Every
ModelAdmin answers as Django does for a bad filter: back to the list with `?e=1`:
the project's apps' and Django's own (users, groups; blogpublish/admin.py). This walks
them all, each date field of each."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.db import models
from django.urls import reverse

from work.admin import BadLookupsAreBadLinks

pytestmark = pytest.mark.django_db


def _admins() -> list[tuple[type[models.Model], admin.ModelAdmin]]:
    """Every registered ModelAdmin: the project's apps' and Django's own (users, groups:
    `?date_joined__year=99999` was a 500 on the users' list)."""
    return sorted(admin.site._registry.items(), key=lambda pair: pair[0]._meta.label)


def _dated(model: type[models.Model]) -> list[str]:
    return [f.name for f in model._meta.get_fields() if isinstance(f, models.DateField)]


def _cases():
    for model, model_admin in _admins():
        if _dated(model):
            yield pytest.param(model, model_admin, id=model._meta.label)


def test_the_walk_finds_the_project_lists_and_djangos():
    labels = {model._meta.label for model, _admin in _admins()}
    assert {"publishing.Article", "publishing.Story", "api.ApiToken", "auth.User"} <= labels
    assert "auth.User" in {param.id for param in _cases()}


def test_every_registered_list_takes_a_bad_filter_for_a_bad_link():
    """Lists without a date to filter on too (auth.Group): a date field added later, or
    a lookup the database refuses, finds the mixin there."""
    assert [
        model._meta.label
        for model, model_admin in _admins()
        if not isinstance(model_admin, BadLookupsAreBadLinks)
    ] == []


@pytest.mark.parametrize(("model", "model_admin"), list(_cases()))
def test_an_out_of_range_year_in_a_list_filter_is_a_bad_link(admin_client, model, model_admin):
    dated = _dated(model)
    url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")

    for name in dated:
        for year in ("99999", "0"):
            response = admin_client.get(f"{url}?{name}__year={year}")

            assert response.status_code == 302, (name, year, response.status_code)
            assert response["Location"].endswith("?e=1"), (name, year, response["Location"])


def test_a_plain_list_still_answers(admin_client, admin_user):
    for name, args in (
        ("admin:publishing_story_changelist", ()),
        ("admin:auth_user_changelist", ()),
        ("admin:auth_user_add", ()),  # Django's own user admin, kept under the mixin
        ("admin:auth_user_password_change", (admin_user.pk,)),
        ("admin:auth_group_changelist", ()),
    ):
        assert admin_client.get(reverse(name, args=args)).status_code == 200, name


@pytest.mark.parametrize(
    ("model", "model_admin"),
    [pytest.param(model, model_admin, id=model._meta.label) for model, model_admin in _admins()],
)
def test_a_regular_expression_in_a_list_filter_is_refused(admin_client, model, model_admin):
    """`?<field>__regex=` ran the address's pattern in the database: on SQLite in
    Python's `re` (catastrophic backtracking: 10 s of a worker for one 26-character body
    and `(a+)+$`), on PostgreSQL a malformed one was a 500. Every list refuses it as a
    lookup it does not allow (400), on any text field, through a relation too."""
    url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
    texts = [
        f.name
        for f in model._meta.get_fields()
        if isinstance(f, models.CharField | models.TextField)
    ]
    for name in texts[:2] or ["pk"]:
        for lookup in ("regex", "iregex"):
            response = admin_client.get(url, {f"{name}__{lookup}": "(a+)+$("})
            assert response.status_code == 400, (model._meta.label, name, lookup)
