"""A list filter the database cannot run is a bad link, not a 500 (a review's finding):
a year past the calendar's (`?created_at__year=99999`, `=0`) raised ValueError in
Django's year_lookup_bounds on every list but the Article list's own date. Every
ModelAdmin of the project's apps answers as Django does for a bad filter: back to the
list with `?e=1`. This walks them all, each date field of each."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.apps import apps
from django.conf import settings
from django.contrib import admin
from django.db import models
from django.urls import reverse

pytestmark = pytest.mark.django_db


def _project_admins() -> list[tuple[type[models.Model], admin.ModelAdmin]]:
    """The registered ModelAdmins of the apps in this repository (not Django's own)."""
    root = Path(settings.BASE_DIR).resolve()
    ours = {
        config.label
        for config in apps.get_app_configs()
        if Path(config.path).resolve().is_relative_to(root)
        and ".venv" not in Path(config.path).resolve().relative_to(root).parts
    }
    return sorted(
        (
            (model, model_admin)
            for model, model_admin in admin.site._registry.items()
            if model._meta.app_label in ours
        ),
        key=lambda pair: pair[0]._meta.label,
    )


def _cases():
    for model, model_admin in _project_admins():
        yield pytest.param(model, model_admin, id=model._meta.label)


def test_the_walk_finds_the_project_lists():
    labels = {model._meta.label for model, _admin in _project_admins()}
    assert {"publishing.Article", "publishing.Story", "api.ApiToken"} <= labels
    assert not any(label.startswith("auth.") for label in labels)


@pytest.mark.parametrize(("model", "model_admin"), list(_cases()))
def test_an_out_of_range_year_in_a_list_filter_is_a_bad_link(admin_client, model, model_admin):
    dated = [f.name for f in model._meta.get_fields() if isinstance(f, models.DateField)]
    assert dated, f"{model._meta.label} has no date to filter on"
    url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")

    for name in dated:
        for year in ("99999", "0"):
            response = admin_client.get(f"{url}?{name}__year={year}")

            assert response.status_code == 302, (name, year, response.status_code)
            assert response["Location"].endswith("?e=1"), (name, year, response["Location"])


def test_a_plain_list_still_answers(admin_client):
    assert admin_client.get(reverse("admin:publishing_story_changelist")).status_code == 200
