"""Signal receivers. They carry no rules: whether a save made work is the model's call
(`Article.wants_publish`); the receiver only sends it after the commit."""

from __future__ import annotations

from functools import partial

from django.db import transaction

from publishing.dispatch import dispatch_when_due


def article_saved(sender, instance, raw: bool = False, **kwargs) -> None:
    if raw or not getattr(instance, "wants_publish", False):
        return
    # After commit, so a worker never looks for a row it cannot see yet; robust, so a
    # failing dispatch can neither fail the save nor drop other on-commit callbacks.
    transaction.on_commit(
        partial(dispatch_when_due, article_id=instance.pk, publish_at=instance.publish_at),
        robust=True,
    )
