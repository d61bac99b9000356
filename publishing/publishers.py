"""The one small interface between the pipeline and what it publishes to.

A publisher is any class named in settings.PUBLISH_PUBLISHERS, built with no
arguments, that has every method of `Publisher` (checked when the publishers are first
built; `BasePublisher` gives the ones a target may not need):

    publish(article) -> None     make this content of the article live. Called while
                                 the attempt holds its lease, before it completes.
                                 Idempotent.
    in_groups: bool              True: the pipeline hands this publisher a group's
                                 articles at once (`publish_many`), and the publisher
                                 checks each one's token at its own write (the static
                                 site: one page guard for the group). False (the
                                 default): the pipeline calls `publish` article by
                                 article, checking before each one that the attempt
                                 still holds the row and is within its time.
    publish_many(articles, *, listed_with=()) -> dict[int, Exception]
                                 `publish` for a group's articles (publishing.services.
                                 publish): each with `publish`'s guarantees, the
                                 failures returned by article id instead of raised, so
                                 one article's failure is its own; a time limit
                                 (exceptions.TIME_LIMITS) is raised, never returned as
                                 one article's. `listed_with`: the rest of the group
                                 (a slice of it is `articles`), listed at the same
                                 commit, so pages that link to each other can say so
                                 from the start; a publisher whose `publish_many`
                                 does not take it (one written before it) is called
                                 without (`publish_many_of`). BasePublisher's calls
                                 `publish` article by article.
    unpublish(article) -> None   the article was deleted: take it off. `article` is an
                                 unsaved Article carrying id, uid, slug, published_slug
                                 and title. Idempotent.
    withdraw(article) -> None    the writer took the article back to draft (issue 22):
                                 off the site as `unpublish` takes it; a target that
                                 tells others says "withdrawn", not "deleted".
                                 BasePublisher's calls `unpublish`.
    forget(article) -> None      the article is being deleted or withdrawn: called inside the
                                 delete's transaction (same `article` as unpublish),
                                 so what must go is known even if no message arrives.
    readdress(article_ids) -> None
                                 these live articles have former addresses that no
                                 publish will write (an import's aliases of articles it
                                 left unchanged): note them for the next refresh.
                                 BasePublisher's does nothing.
    refresh(*, fence=None, busy=False) -> bool | None
                                 bring shared views (index, feed, …) in line with the
                                 database. Run by the coalescing refresher
                                 (publishing.services.refresh), one pass at a time on
                                 any host, after outcomes and deletes have committed.
                                 Cheap: its cost follows what changed, not the site.
                                 `fence` (work.lease.Fence) is the pass's token: every
                                 write of a shared view checks it before and after
                                 (raising work.lease.Overtaken), and the pass keeps to
                                 `fence.time_left()`. False: it stopped at that budget
                                 with work left (a rebuild's checkpoint); the refresher
                                 asks for the next pass at once. `busy`: publish work
                                 is due (a burst draining): views readers can wait for
                                 (tag pages) may be put off to a later pass, which the
                                 refresher sends after the burst (True is returned).
    check() -> None              the full check of what the target holds, from the
                                 catch-up now and then: remove whatever the database no
                                 longer has, write again what is missing or stale. Runs
                                 beside publishes and passes, holding no lease of the
                                 refresher's (it may read for minutes), so it writes no
                                 shared view and guards each page as a publish does.
                                 A publisher written before it was added is given one
                                 that does nothing (a warning in the log).
    reconcile(*, fence=None) -> bool | None
                                 the full check's pass, run by the refresher after
                                 `check` as `refresh` is: every shared view brought in
                                 line with the database, not only what changed.
    rerender(*, fence=None, force=False, again=False) -> bool | None
                                 one pass of writing every page again in this process's
                                 look (issue 20; `force`: even over a run a newer
                                 process began; `again`: a new run even if the target
                                 is in this look): from the target's checkpoint, keeping
                                 to `fence.time_left()`, its progress committed only
                                 while `fence` (the re-render's lease) holds. True: the
                                 target is in this look; False: stopped at the budget
                                 with pages left. Changes no article. None: the target
                                 has no look (BasePublisher's).
    rerender_due() -> bool       is there re-rendering for this process to do (the look
                                 changed, or a run is unfinished)? BasePublisher: False.
    rerender_status() -> dict | None
                                 the re-render's progress for the dashboard and
                                 `rerender_site --status` (JSON-able); None: no look.

`publish`, `unpublish` and `withdraw` raise `TransientPublishError` or `PermanentPublishError`
(publishing.exceptions); any other exception is treated as transient: a bug is
retried, then lands in dead. `refresh` and `reconcile` failures are logged and the
pass is wanted again; a `check` failing is logged, the others' checks and the pass go on,
and the full check is due again in 10 minutes; `forget` failing fails the delete. A time
limit (exceptions.TIME_LIMITS) is raised at once, from any of them.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Sequence
from functools import cache
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.module_loading import import_string

from publishing.exceptions import TIME_LIMITS
from publishing.logcontext import log_context

if TYPE_CHECKING:
    from publishing.models import Article
    from work.lease import Fence

logger = logging.getLogger(__name__)


@runtime_checkable
class Publisher(Protocol):
    """Every method the pipeline calls on a target (the module's docstring says when)."""

    in_groups: bool

    def publish(self, article: Article) -> None: ...

    def publish_many(
        self, articles: list[Article], *, listed_with: Sequence[Article] = ()
    ) -> dict[int, Exception]: ...

    def unpublish(self, article: Article) -> None: ...

    def withdraw(self, article: Article) -> None: ...

    def forget(self, article: Article) -> None: ...

    def readdress(self, article_ids: list[int]) -> None: ...

    def refresh(self, *, fence: Fence | None = None, busy: bool = False) -> bool | None: ...

    def check(self) -> None: ...

    def reconcile(self, *, fence: Fence | None = None) -> bool | None: ...

    def rerender(
        self, *, fence: Fence | None = None, force: bool = False, again: bool = False
    ) -> bool | None: ...

    def rerender_due(self) -> bool: ...

    def rerender_status(self) -> dict | None: ...


INTERFACE = (
    "in_groups",
    "publish",
    "publish_many",
    "unpublish",
    "withdraw",
    "forget",
    "readdress",
    "refresh",
    "check",
    "reconcile",
    "rerender",
    "rerender_due",
    "rerender_status",
)


class BasePublisher:
    """The parts a target may not need: nothing to note at a delete, no shared views to
    refresh or check, no look to re-render, and a group published article by article."""

    in_groups: bool = False

    def publish(self, article: Article) -> None:
        raise NotImplementedError

    def publish_many(
        self, articles: list[Article], *, listed_with: Sequence[Article] = ()
    ) -> dict[int, Exception]:
        failures: dict[int, Exception] = {}
        for article in articles:
            with log_context(article_id=article.pk, attempt=article.attempts):
                try:
                    self.publish(article)
                except TIME_LIMITS:
                    raise
                except Exception as exc:  # transient, permanent, or a bug: its own
                    failures[article.pk] = exc
        return failures

    def unpublish(self, article: Article) -> None:
        return None

    def withdraw(self, article: Article) -> None:
        self.unpublish(article)

    def forget(self, article: Article) -> None:
        return None

    def readdress(self, article_ids: list[int]) -> None:
        return None

    def refresh(self, *, fence: Fence | None = None, busy: bool = False) -> bool | None:
        return None

    def check(self) -> None:
        return None

    def reconcile(self, *, fence: Fence | None = None) -> bool | None:
        return None

    def rerender(
        self, *, fence: Fence | None = None, force: bool = False, again: bool = False
    ) -> bool | None:
        return None

    def rerender_due(self) -> bool:
        return False

    def rerender_status(self) -> dict | None:
        return None


def publish_many_of(
    publisher: Publisher, articles: list[Article], *, listed_with: Sequence[Article]
) -> dict[int, Exception]:
    """`publisher.publish_many(articles, listed_with=…)`, or without `listed_with` for a
    publisher whose `publish_many` does not take it: one written before it was added
    keeps working, its pages without the rest of the group."""
    if _takes_listed_with(type(publisher)):
        return publisher.publish_many(articles, listed_with=listed_with)
    return publisher.publish_many(articles)


@cache
def _takes_listed_with(kind: type[Publisher]) -> bool:
    parameters = inspect.signature(kind.publish_many).parameters.values()
    return any(p.name == "listed_with" or p.kind is p.VAR_KEYWORD for p in parameters)


@cache
def get_publishers() -> tuple[Publisher, ...]:
    publishers = tuple(publisher_class(path)() for path in settings.PUBLISH_PUBLISHERS)
    for path, publisher in zip(settings.PUBLISH_PUBLISHERS, publishers, strict=True):
        if not isinstance(publisher, Publisher):
            raise ImproperlyConfigured(_lacking(path, publisher))
    return publishers


def publisher_class(path: str) -> type:
    """The class at `path`; one written before `check` was added (the full check's
    reading, outside the refresher's lease) as a subclass with a `check` that does
    nothing, its `reconcile` the full check's pass, as its whole full check was
    (docs/operations.md, "Rolling deploy")."""
    kind = import_string(path)
    if isinstance(kind, type) and not hasattr(kind, "check"):
        logger.warning(
            "PUBLISH_PUBLISHERS: %s has no check() (added to the publisher interface "
            "since): its full check is its reconcile() alone",
            path,
        )
        return type(kind.__name__, (kind,), {"check": _nothing_to_check})
    return kind


def _lacking(path: str, publisher: object) -> str:
    missing = [
        name
        for name in INTERFACE
        if not (hasattr if name == "in_groups" else _callable)(publisher, name)
    ]
    return (
        f"PUBLISH_PUBLISHERS: {path} lacks {', '.join(missing)} of the publisher "
        "interface (publishing.publishers; subclass BasePublisher for the defaults)"
    )


def _callable(publisher: object, name: str) -> bool:
    return callable(getattr(publisher, name, None))


def _nothing_to_check(self: object) -> None:
    return None


def publishers_problems() -> list[str]:
    """Why the publishers cannot be built, for the system check (at `manage.py check` and
    `migrate`, not at the first publish, where every attempt would fail): a path that
    does not import, a class that lacks a method of the interface. The classes are
    looked at, not built: a constructor may need the database `migrate` is about to
    make, or a target that is down (that is an attempt's transient failure)."""
    problems = []
    for path in settings.PUBLISH_PUBLISHERS:
        try:
            kind = publisher_class(path)
        except Exception as exc:
            problems.append(f"PUBLISH_PUBLISHERS: {path} cannot be imported: {exc!r}")
            continue
        if any(not _callable(kind, name) for name in INTERFACE if name != "in_groups"):
            problems.append(_lacking(path, kind))
    return problems


def each_publisher(
    call: Callable[[Publisher], object],
    *,
    what: str,
    raising: bool = False,
    expected: Callable[[Exception], bool] = lambda exc: False,
):
    """`call(publisher)` for every publisher; failures are logged and, with `raising`, the
    first one is raised once every publisher had its call. Those `expected` (a write
    that met a concurrent one, which the caller tries again) are left to the caller to
    say, without a traceback: an ERROR for each paged operators for nothing (a review's
    finding)."""
    failure: Exception | None = None
    for publisher in get_publishers():
        try:
            call(publisher)
        except TIME_LIMITS:
            raise  # the task's time is up: no other publisher's call begins
        except Exception as exc:
            if not expected(exc):
                logger.exception("%s.%s() failed", type(publisher).__name__, what)
                exc.logged = True  # type: ignore[attr-defined]  # its caller logs no second traceback
            failure = failure or exc
    if raising and failure is not None:
        raise failure


@receiver(setting_changed)
def _forget_publishers(*, setting: str, **kwargs) -> None:
    if setting.startswith(("PUBLISH_", "SITE_")):
        get_publishers.cache_clear()
