"""The operator's dashboard (/admin/publishing/dashboard/), through Django's test client:
staff see every section, others are sent to the login page, the Requeue buttons
requeue, and the charts show what the metrics rollup holds."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, time, timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.db.models.functions import Now
from django.utils import timezone

from publishing import rollup
from publishing.models import Article, ArticleStatus, CatchUpRun, DeliveryStatus, WebhookDelivery

pytestmark = pytest.mark.django_db

URL = "/admin/publishing/dashboard/"
SECTIONS = ("bp-figures", "bp-health", "bp-catch-up", "bp-dead", "bp-retried", "bp-charts")


@pytest.fixture
def make_scheduled(make_article):
    """Articles due tomorrow: no worker that runs meanwhile (the session's, started by
    another test) publishes them, a requeued one included, under the test's feet."""

    def make(**fields) -> Article:
        return make_article(publish_at=timezone.now() + timedelta(days=1), **fields)

    return make


@pytest.fixture
def staff(client):
    def login(*codenames: str, superuser: bool = False) -> User:
        user = User.objects.create_user(
            f"op-{User.objects.count()}", is_staff=True, is_superuser=superuser
        )
        for codename in codenames:
            user.user_permissions.add(Permission.objects.get(codename=codename))
        client.force_login(user)
        return user

    return login


def dead_article(make_scheduled, error: str = "TransientPublishError: target said 503") -> Article:
    article = make_scheduled(title="Dies <b>loudly</b>")
    Article.objects.filter(pk=article.pk).update(
        status=ArticleStatus.DEAD, attempts=3, last_error=error
    )
    return article


def test_dashboard__staff_see_every_section(client, staff, make_scheduled):
    staff(superuser=True)
    dead = dead_article(make_scheduled)
    retried = make_scheduled(title="Tried twice")
    Article.objects.filter(pk=retried.pk).update(attempts=2, last_error="Timeout: slow")
    CatchUpRun.objects.create(
        pk=1,
        ran_at=Now(),
        host="beat-host",
        report={"stale_found": 4, "stale_sent": 3, "armed": 2, "alerts_sent": 1, "stuck": False},
    )

    response = client.get(URL)

    assert response.status_code == 200
    html = response.content.decode()
    for section in SECTIONS:
        assert f'id="{section}"' in html, section
    assert html.count('class="bp-chart"') == 3
    assert "TransientPublishError: target said 503" in html
    assert "Dies &lt;b&gt;loudly&lt;/b&gt;" in html  # escaped, as everywhere in the admin
    assert f'name="article_id" value="{dead.pk}"' in html
    assert 'id="bp-requeue-all"' in html
    assert "Tried twice" in html
    assert "beat-host" in html
    assert "publishing/dashboard.js" in html
    assert 'data-refresh-url="/admin/publishing/dashboard/?fragment=1"' in html


def test_dashboard__the_fragment_is_the_live_part_only(client, staff):
    staff(superuser=True)

    response = client.get(URL, {"fragment": "1"})

    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="bp-figures"' in html
    assert "<html" not in html
    assert "dashboard.js" not in html


@pytest.mark.parametrize("path", [URL, URL + "?fragment=1"])
def test_dashboard__anonymous_users_go_to_the_login_page(client, path):
    response = client.get(path)

    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/?next=")


def test_dashboard__a_user_who_is_not_staff_goes_to_the_login_page(client):
    client.force_login(User.objects.create_user("reader"))

    response = client.get(URL)

    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/")


def test_dashboard__staff_without_the_article_permission_are_forbidden(client, staff):
    staff()

    assert client.get(URL).status_code == 403


def test_dashboard__view_only_staff_see_no_requeue_and_cannot_post_one(
    client, staff, make_scheduled
):
    staff("view_article")
    dead = dead_article(make_scheduled)

    html = client.get(URL).content.decode()
    response = client.post(URL + "requeue/", {"article_id": dead.pk})

    assert 'id="bp-dead"' in html
    assert "Requeue" not in html
    assert response.status_code == 403
    assert Article.objects.get(pk=dead.pk).status == ArticleStatus.DEAD


def test_dashboard__its_requeue_button_requeues(client, staff, make_scheduled):
    staff("view_article", "change_article")
    dead, other = dead_article(make_scheduled), dead_article(make_scheduled)

    response = client.post(URL + "requeue/", {"article_id": dead.pk}, follow=True)

    row = Article.objects.get(pk=dead.pk)
    assert (row.status, row.attempts, row.last_error) == (ArticleStatus.PENDING, 0, "")
    assert Article.objects.get(pk=other.pk).status == ArticleStatus.DEAD
    assert f"Article {dead.pk} requeued." in response.content.decode()


def test_dashboard__requeue_all_requeues_every_dead_article(client, staff, make_scheduled):
    staff("view_article", "change_article")
    dead = [dead_article(make_scheduled) for _ in range(3)]
    published = make_scheduled()
    Article.objects.filter(pk=published.pk).update(status=ArticleStatus.PUBLISHED)

    response = client.post(URL + "requeue/", {"all": "1"}, follow=True)

    assert "3 dead article(s) requeued." in response.content.decode()
    statuses = set(
        Article.objects.filter(pk__in=[a.pk for a in dead]).values_list("status", flat=True)
    )
    assert statuses == {ArticleStatus.PENDING}
    assert Article.objects.get(pk=published.pk).status == ArticleStatus.PUBLISHED


def test_dashboard__requeue_of_an_article_that_is_not_dead_says_so(client, staff, make_scheduled):
    staff("view_article", "change_article")
    pending = make_scheduled()

    response = client.post(URL + "requeue/", {"article_id": pending.pk}, follow=True)

    assert "is not dead" in response.content.decode()
    for bad in ("x", "", "-1", str(2**70)):
        response = client.post(URL + "requeue/", {"article_id": bad}, follow=True)
        assert "No article to requeue was given." in response.content.decode(), bad


def test_dashboard__charts_show_the_rollup(client, staff):
    staff(superuser=True)
    for _ in range(3):
        rollup.record(outcome="ok", duration=0.02, latency=0.4)
    rollup.record(outcome="dead", duration=0.5)

    html = client.get(URL).content.decode()

    assert re.search(r"<title>\d\d:\d\d published: 3</title>", html)
    assert re.search(r"<title>\d\d:00 dead: 1</title>", html)
    assert re.search(r"<title>\d\d:00 p50: [\d.]+ ms</title>", html)


def test_admin_index_and_article_list_link_the_dashboard(client, staff):
    staff(superuser=True)

    for page in ("/admin/", "/admin/publishing/article/"):
        assert f'href="{URL}"' in client.get(page).content.decode(), page


def test_dashboard__its_time_said_utc_is_utc_whatever_time_zone(client, staff, settings):
    """`{% now %}` renders in TIME_ZONE: in Tokyo the page said "21:… UTC" at 12:…
    UTC (a review's finding); its script's refresh says UTC and is."""
    settings.TIME_ZONE = "Asia/Tokyo"
    staff(superuser=True)
    before = datetime.now(UTC).replace(microsecond=0)

    page = client.get(URL).content.decode()

    shown = re.search(r"rendered (\d\d:\d\d:\d\d) UTC", page)[1]
    after = datetime.now(UTC)
    told = datetime.combine(before.date(), time.fromisoformat(shown), UTC)
    if told < before - timedelta(hours=12):  # rendered just past midnight
        told += timedelta(days=1)
    assert before <= told <= after


def dead_delivery(
    error: str = "HTTP 500 from https://hooks.example/secret-path",
) -> WebhookDelivery:
    return WebhookDelivery.objects.create(
        article_id=1,
        event="article.published",
        key=uuid.uuid4().hex,
        body="{}",
        status=DeliveryStatus.DEAD,
        attempts=5,
        last_error=error,
    )


def test_dashboard__deliveries_are_listed_and_requeued_under_their_own_permissions(
    client, staff, make_scheduled
):
    """A review's finding: the dead deliveries (their errors name the receiver) were
    listed to anyone who may view articles, and requeued by anyone who may change
    articles, whatever their permissions on deliveries."""
    staff("view_article", "change_article")
    dead = dead_delivery()

    html = client.get(URL).content.decode()
    response = client.post(URL + "requeue/", {"delivery_id": dead.pk})

    assert 'id="bp-deliveries"' in html and "secret-path" not in html
    assert f'name="delivery_id" value="{dead.pk}"' not in html
    assert response.status_code == 403
    assert WebhookDelivery.objects.get(pk=dead.pk).status == DeliveryStatus.DEAD


def test_dashboard__delivery_staff_requeue_deliveries_and_not_articles(
    client, staff, make_scheduled
):
    staff("view_article", "view_webhookdelivery", "change_webhookdelivery")
    delivery, article = dead_delivery(), dead_article(make_scheduled)

    html = client.get(URL).content.decode()
    refused = client.post(URL + "requeue/", {"article_id": article.pk})
    refused_all = client.post(URL + "requeue/", {"all": "1", "delivery_id": delivery.pk})
    response = client.post(URL + "requeue/", {"delivery_id": delivery.pk}, follow=True)

    assert "secret-path" in html and f'name="delivery_id" value="{delivery.pk}"' in html
    assert f'name="article_id" value="{article.pk}"' not in html
    assert (refused.status_code, refused_all.status_code) == (403, 403)
    assert Article.objects.get(pk=article.pk).status == ArticleStatus.DEAD
    assert f"Webhook delivery {delivery.pk} requeued." in response.content.decode()
    assert WebhookDelivery.objects.get(pk=delivery.pk).status != DeliveryStatus.DEAD
