"""A worker's re-render pass gives way to a waiting publish only where the worker would
take that publish (publishing.tasks.takes_publishes): a worker of the re-render's own
queue does not, and its passes run to their budget. Read from Celery's own selection of
a worker's queues (`-Q`), on a real Celery app configured as the project's."""

from __future__ import annotations

from celery import Celery

from config.queues import celery_queues, rerender_queue
from publishing.tasks import takes_publishes


def app_consuming(only: list[str] | None) -> Celery:
    app = Celery("give-way", set_as_current=False)
    routes, queues = celery_queues("blogpublish")
    app.conf.update(task_default_queue="blogpublish", task_routes=routes, task_queues=queues)
    if only is not None:
        app.amqp.queues.select(only)  # what `celery worker -Q …` does before the pool forks
    return app


def test_a_worker_of_every_queue_takes_publishes():
    assert takes_publishes(app_consuming(None))


def test_a_worker_of_the_rerender_queue_alone_does_not():
    assert not takes_publishes(app_consuming([rerender_queue("blogpublish")]))


def test_a_worker_of_the_publish_queue_and_the_rerender_queue_does():
    assert takes_publishes(app_consuming(["blogpublish", rerender_queue("blogpublish")]))
