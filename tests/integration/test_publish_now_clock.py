""" "Publish now" dates the article by the database's clock, the one every due time is
read by (DESIGN.md, "Time"), not the web host's (a review's finding: a host whose clock
ran ahead left the article scheduled, by the database, until its old time; one behind
dated it earlier than it went live, and the date is on the page)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from publishing.models import ArticleStatus
from publishing.services.operator import article_publish_now
from tests.support.broker import broker
from tests.support.processes import free_port
from work.lease import db_now

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("skew", [timedelta(minutes=5), -timedelta(minutes=5)])
def test_publish_now_dates_the_article_by_the_database_clock(make_article, monkeypatch, skew):
    # Its messages go where nothing listens: only the row is looked at.
    with broker(f"redis://127.0.0.1:{free_port()}/0"):
        article = make_article(publish_at=db_now() + timedelta(seconds=60))
        real = timezone.now
        monkeypatch.setattr(timezone, "now", lambda: real() + skew)  # this host's clock
        before = db_now()
        assert article_publish_now(article_id=article.pk)
        after = db_now()
    article.refresh_from_db()
    assert article.status == ArticleStatus.PENDING
    assert before - timedelta(seconds=1) < article.publish_at <= after
