"""The retry backoff: Celery's exponential policy with full jitter, capped."""

from __future__ import annotations

import pytest

from publishing.tasks import publish_article, publish_batch


@pytest.mark.parametrize("attempt", [1, 2, 3, 4, 8, 30])
def test_backoff_stays_within_the_exponential_envelope(attempt):
    envelope = min(publish_article.retry_backoff_max, 2 ** (attempt - 1))

    delays = {publish_article.backoff(attempt) for _ in range(200)}

    assert all(0 <= d <= envelope for d in delays)
    assert len(delays) > 1 or envelope == 0  # jittered, not a constant


def test_backoff_grows_with_the_attempt_number_up_to_its_cap():
    def mean(attempt: int) -> float:
        return sum(publish_article.backoff(attempt) for _ in range(400)) / 400

    assert mean(1) < mean(2)  # envelopes 1 and 2 (the tests cap backoff at 2 s)
    assert max(publish_article.backoff(20) for _ in range(200)) == publish_article.retry_backoff_max


def test_task_limits_stay_inside_the_lease(settings):
    assert publish_article.soft_time_limit < publish_article.time_limit
    assert publish_article.time_limit < settings.PUBLISH_LEASE_SECONDS
    assert publish_article.acks_late and publish_article.reject_on_worker_lost
    # A job ended by the hard time limit is requeued, not acked (tests/system/test_recovery).
    assert publish_article.acks_on_timeout is False
    assert publish_batch.acks_on_timeout is False
