"""Errors of the publishing pipeline.

Publishers (in `blogpublish`) raise `TransientPublishError` or `PermanentPublishError`;
that is the whole contract between the pipeline and the targets it publishes to.
"""

from __future__ import annotations

from celery.exceptions import SoftTimeLimitExceeded


class PublishingError(Exception):
    """The publishing pipeline failed."""

    def __init__(self, message: str | None = None):
        super().__init__(message or self.__doc__)


class TransientPublishError(PublishingError):
    """A publishing target failed in a way that may pass; the attempt is retried."""

    def __init__(
        self,
        message: str | None = None,
        *,
        retry_in: float | None = None,
        asked_wait: float | None = None,
        site_wide: bool = False,
    ):
        super().__init__(message)
        #: Seconds until the next attempt is due, once the pipeline has recorded it.
        self.retry_in = retry_in
        #: Seconds the target asked to be left alone for (HTTP's Retry-After), if it did.
        self.asked_wait = asked_wait
        #: The target takes no article now (SITE_ROOT read-only, or full): the attempt
        #: is retried without being counted, so a whole site's pending articles do not
        #: all go dead while an operator mends it; the stuck alarm tells of it.
        self.site_wide = site_wide


class NoAnswer(TransientPublishError):
    """A receiver gave no answer: it timed out, or could not be reached."""


class PermanentPublishError(PublishingError):
    """A publishing target refused the article; retrying cannot help, so it is dead."""


class ArticleDeadError(PublishingError):
    """The article failed for the last time and is now dead; requeue it to try again."""

    def __init__(self, message: str | None = None, *, article_id: int | None = None):
        super().__init__(message)
        self.article_id = article_id


class AttemptTimeLimitExceeded(PublishingError):
    """The attempt ran past its time limit (PUBLISH_SOFT_TIME_LIMIT) and was stopped; it
    is retried like any transient failure, and the article is dead after the budget."""


# What stops an attempt or a group from outside (the worker's soft limit, the backup
# executor's): never one article's own error for the articles it did not reach.
TIME_LIMITS = (SoftTimeLimitExceeded, AttemptTimeLimitExceeded)


class StoryConflict(PublishingError):
    """The draft was saved elsewhere since this copy was loaded (another tab or writer);
    reload it, or save again to overwrite."""

    def __init__(self, message: str | None = None, *, current: int, given: int):
        super().__init__(message)
        self.current = current
        self.given = given


class NotOnTheBlog(PublishingError):
    """It is not on the blog: there is nothing to withdraw."""
