"""Issue 19, finding 6: `publish_at` is held to the years 1900-9000 at every way in
(full_clean, the admin's form, the API, the import), and the admin answers 200 for any
stored date, in any TIME_ZONE, also one written past validation at the calendar's
edges."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from django.core.exceptions import ValidationError

from publishing.models import Article
from tests.support.admin_forms import ADD_URL, article_form
from tests.support.import_files import post, run_import, write

pytestmark = pytest.mark.django_db

RANGE_MESSAGE = "The date must be in the years 1900 to 9000 (UTC)."
# Both ends of the offset range, and UTC.
ZONES = ["Etc/GMT+12", "Pacific/Kiritimati", "UTC"]
# What only a write past validation stores: the calendar's first and last hours.
EDGES = [
    datetime(9999, 12, 31, 23, 30, tzinfo=UTC),
    datetime(1, 1, 1, 0, 30, tzinfo=UTC),
]


@pytest.mark.parametrize(
    "when",
    [
        datetime(9999, 12, 31, 23, 30, tzinfo=UTC),
        datetime(9001, 1, 1, tzinfo=UTC),
        datetime(1899, 12, 31, 23, 59, 59, tzinfo=UTC),
        datetime(1, 1, 1, tzinfo=UTC),
    ],
)
def test_full_clean_refuses_a_date_outside_the_years(when):
    with pytest.raises(ValidationError) as refused:
        Article(title="T", body="b", publish_at=when).full_clean()
    assert refused.value.message_dict["publish_at"] == [RANGE_MESSAGE]


@pytest.mark.parametrize(
    "when",
    [datetime(1900, 1, 1, tzinfo=UTC), datetime(9000, 12, 31, 23, 59, 59, tzinfo=UTC)],
)
def test_full_clean_accepts_the_first_and_last_moments(when):
    Article(title="T", body="b", publish_at=when).full_clean()


def test_the_api_refuses_a_date_outside_the_years(api):
    response = api.post(
        "/api/articles",
        json.dumps({"title": "T", "body": "b", "publish_at": "9999-12-31T23:30:00Z"}),
        content_type="application/json",
    )
    assert response.status_code == 400, response.content
    assert response.json()["errors"]["publish_at"] == [RANGE_MESSAGE]
    assert not Article.objects.exists()


def test_the_import_refuses_a_date_outside_the_years(tmp_path):
    bad = write(tmp_path, "bad.md", post("Far", slug="sec-far", date="9999-12-31 23:30:00"))
    write(tmp_path, "good.md", post("Near", slug="sec-near", date="2024-05-01"))
    _out, err, code = run_import(str(tmp_path))
    assert code == 1
    assert f"failed: {bad}: publish_at: {RANGE_MESSAGE}" in err
    assert list(Article.objects.values_list("slug", flat=True)) == ["sec-near"]


@pytest.mark.parametrize("zone", ZONES)
@pytest.mark.parametrize(("day", "time"), [("9999-12-31", "23:30:00"), ("0001-01-01", "00:30:00")])
def test_the_admin_form_refuses_a_date_outside_the_years(admin_client, settings, zone, day, time):
    settings.TIME_ZONE = zone
    response = admin_client.post(ADD_URL, article_form(title="Far", day=day, time=time))
    assert response.status_code == 200  # the form again, with the error
    assert RANGE_MESSAGE in response.content.decode()
    assert not Article.objects.exists()


@pytest.mark.parametrize("zone", ZONES)
@pytest.mark.parametrize("edge", EDGES, ids=["last-hour", "first-hour"])
def test_the_admin_shows_a_stored_edge_date_in_any_zone(admin_client, settings, zone, edge):
    settings.TIME_ZONE = zone
    article = Article.objects.create(title="Edge", slug="sec-edge", body="b")
    Article.objects.filter(pk=article.pk).update(publish_at=edge, published_publish_at=edge)

    pages = {
        "list": "/admin/publishing/article/",
        "scheduled": "/admin/publishing/article/?state=scheduled",
        "change": f"/admin/publishing/article/{article.pk}/change/",
        "dashboard": "/admin/publishing/dashboard/",
    }
    for name, url in pages.items():
        response = admin_client.get(url)
        assert response.status_code == 200, f"{name}: {response.status_code}"
    assert "Edge" in admin_client.get(pages["list"]).content.decode()
