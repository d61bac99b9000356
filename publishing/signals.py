"""Signal receivers. They carry no rules: whether a save made work is the model's call
(`Article.wants_publish`); the receiver only sends it after the commit."""

from __future__ import annotations

from publishing.dispatch import dispatch_unpublish, dispatch_when_due
from publishing.services import article_forget, article_to_trash, unpublish_snapshot
from work.db import after_commit


def article_saved(sender, instance, raw: bool = False, **kwargs) -> None:
    if raw or not instance.wants_publish:
        return
    # After commit, so a worker never looks for a row it cannot see yet; robust, so a
    # failing dispatch can neither fail the save nor drop other on-commit callbacks.
    after_commit(
        dispatch_when_due,
        article_id=instance.pk,
        publish_at=instance.publish_at,
        # The id the save stored with its content: a group that publishes the row
        # besides its own has this message dropped unrun (Article.message_id).
        task_id=instance.message_id,
    )


def article_deleted(sender, instance, **kwargs) -> None:
    # Every delete, not only of live articles: an attempt in flight may already have
    # written the page of an article that never completed (docs/site.md, "Deletes").
    snapshot = unpublish_snapshot(instance)
    article_forget(snapshot=snapshot)  # in the delete's transaction: nothing is lost
    article_to_trash(article=instance)  # a delete (not a withdraw) keeps it in the trash
    after_commit(dispatch_unpublish, snapshot)
