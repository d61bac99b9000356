"""A receiver that does not answer never puts a publish in line behind its tries: the
webhook's deliveries have a queue of their own (config/queues.py) and, as `make run` and
the compose file start them, a worker of their own (a review's finding: after an import,
a new save waited minutes behind hundreds of deliveries to a silent receiver).

Real processes on a private redis-server: a worker of the publishing queues, a worker
of the deliveries' queue (one process), and a receiver that holds every request past
the POST's read timeout."""

from __future__ import annotations

import pytest
from django.conf import settings

from config.queues import webhooks_queue
from publishing.broker_status import queue_message_counts
from publishing.models import CatchUpRun, DeliveryStatus, WebhookDelivery
from tests.support.waiting import wait_for
from tests.system.conftest import WEBHOOK_SECRET
from tests.system.helpers import save_articles, wait_all_published

pytestmark = [pytest.mark.system, pytest.mark.django_db(transaction=True)]


def test_a_save_is_published_while_a_silent_receivers_deliveries_wait(pipeline, receiver):
    silent_receiver = receiver  # each delivery's request held past the POST's timeout
    pipeline.env.update(
        {
            "PUBLISH_WEBHOOK_URL": silent_receiver.url,
            "PUBLISH_WEBHOOK_SECRET": WEBHOOK_SECRET,
            "PUBLISH_WEBHOOK_TIMEOUT": "1.5",  # each try holds its process this long
        }
    )
    hooks = webhooks_queue(settings.CELERY_TASK_DEFAULT_QUEUE)
    others = [q.name for q in settings.CELERY_TASK_QUEUES if q.name != hooks]
    pipeline.worker(name="publishing", queues=others)
    pipeline.worker(name="webhooks", queues=[hooks], concurrency=1)
    earlier = save_articles("earlier", 20)
    for article in earlier:
        silent_receiver.plan(article.slug, *["stall"] * 5)
    wait_all_published(earlier, timeout=60)

    (late,) = save_articles("late", 1)
    wait_all_published([late], timeout=60)

    # Published before every earlier delivery was even tried: its message was not in
    # line behind theirs (on one queue, first in first out, it ran only once each of
    # theirs had been taken, and each try holds a process for 1.5 s).
    untried = WebhookDelivery.objects.filter(
        article_id__in=[a.pk for a in earlier], attempts=0
    ).count()
    assert untried > 0, "every earlier delivery was tried before the late save was published"

    # The catch-up (every 2 s here, a delivery stale after 2 s) finds the deliveries
    # waiting longer than that, and their messages in the queue: it sends none again
    # (each run sent one more a delivery, and the queue grew by as many a run).
    pipeline.beat()
    runs = []

    def caught_up_thrice() -> bool:
        row = CatchUpRun.objects.filter(pk=1).values_list("ran_at", flat=True).first()
        if row is not None and row not in runs:
            runs.append(row)
        return len(runs) >= 3

    wait_for(caught_up_thrice, timeout=60, what="three catch-up runs")
    waiting = queue_message_counts(names=[hooks])[hooks]
    pending = WebhookDelivery.objects.filter(status=DeliveryStatus.PENDING).count()
    assert waiting <= pending, f"{waiting} messages for {pending} pending deliveries"
