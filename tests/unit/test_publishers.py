"""The publisher interface is declared whole (issue 18, item 5): a target named in
PUBLISH_PUBLISHERS without every method of `Publisher` is refused with the names it
lacks, and BasePublisher's `publish_many` keeps each article's failure its own, but
never takes a time limit for one article's failure (issue 17, finding 1)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from celery.exceptions import SoftTimeLimitExceeded
from django.core.exceptions import ImproperlyConfigured

from publishing.exceptions import AttemptTimeLimitExceeded, TransientPublishError
from publishing.publishers import BasePublisher, Publisher, get_publishers


class OnlyPublish:
    def publish(self, article) -> None:
        return None


class FailsOdd(BasePublisher):
    def publish(self, article) -> None:
        if article.pk % 2:
            raise TransientPublishError(f"odd {article.pk}")


def test_a_publisher_without_the_whole_interface_is_refused_by_name(settings):
    settings.PUBLISH_PUBLISHERS = [f"{__name__}.OnlyPublish"]

    with pytest.raises(
        ImproperlyConfigured, match="lacks in_groups, publish_many, unpublish, withdraw, forget"
    ):
        get_publishers()


def test_a_base_publisher_has_the_whole_interface(settings):
    settings.PUBLISH_PUBLISHERS = [f"{__name__}.FailsOdd"]

    [publisher] = get_publishers()
    assert isinstance(publisher, Publisher)


def test_publish_many__each_articles_failure_is_its_own():
    articles = [SimpleNamespace(pk=n, attempts=1) for n in (1, 2, 3)]

    failures = FailsOdd().publish_many(articles)

    assert sorted(failures) == [1, 3]
    assert str(failures[3]) == "odd 3"


@pytest.mark.parametrize("limit", [SoftTimeLimitExceeded, AttemptTimeLimitExceeded])
def test_publish_many__a_time_limit_stops_the_group_instead_of_failing_one_article(limit):
    published = []

    class SlowSecond(BasePublisher):
        def publish(self, article) -> None:
            if article.pk == 2:
                raise limit()
            published.append(article.pk)

    articles = [SimpleNamespace(pk=n, attempts=1) for n in (1, 2, 3)]

    with pytest.raises(limit):
        SlowSecond().publish_many(articles)
    assert published == [1]


def test_the_site_and_the_webhook_outbox_take_groups_at_once():
    from blogpublish.site import StaticSitePublisher
    from blogpublish.webhooks import WebhookPublisher

    assert StaticSitePublisher.in_groups is True
    assert WebhookPublisher.in_groups is True
    assert BasePublisher.in_groups is False


def test_a_publisher_written_before_listed_with_is_called_without_it():
    """`listed_with` came after the interface: a group publisher whose `publish_many`
    does not take it is called without it, not failed with a TypeError each group."""
    from publishing.publishers import publish_many_of

    seen = []

    class Older(BasePublisher):
        in_groups = True

        def publish_many(self, articles):  # type: ignore[override]  # the older signature
            seen.append([a.pk for a in articles])
            return {}

    class Newer(BasePublisher):
        in_groups = True

        def publish_many(self, articles, *, listed_with=()):
            seen.append(([a.pk for a in articles], [a.pk for a in listed_with]))
            return {}

    slice_, group = [SimpleNamespace(pk=1)], [SimpleNamespace(pk=1), SimpleNamespace(pk=2)]

    assert publish_many_of(Older(), slice_, listed_with=group) == {}
    assert publish_many_of(Newer(), slice_, listed_with=group) == {}
    assert seen == [[1], ([1], [1, 2])]
