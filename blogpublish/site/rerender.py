"""Every page in a new look: the re-render of the whole site, a batch with a checkpoint
(issue 20; docs/site.md, "The look"; docs/design.md, "The re-render").

When the look's fingerprint (blogpublish.site.look) differs from the one the site was
last rendered in, each listed article's page is written again from its live version,
in keyset order (the article's key), SITE_RERENDER_CHUNK pages at a time (rendered,
staged and made live under one guard):

- rendered and staged outside any lock (on disk a synced temporary file, the batch
  path's `stage_many`), then, under ONE page guard for the chunk's slugs and articles
  (the guard every attempt writes its page under), the chunk's rows and, on disk, the
  pages' first bytes read again, and a page made live only when it still shows the
  live version the re-render rendered (its content mark), in another look (its look
  mark), or is missing. In a bucket the pages are not read twice: each PUT is
  conditional on the ETag of the read made before rendering, so a page written since
  is not written over (`SiteStorage.reads_fence_writes`). An attempt that wrote newer
  content first keeps its page; one that writes after takes the guard after the
  re-render's chunk. A concurrent publish or edit always wins.
- each page replaced atomically (a rename on disk, one PUT in a bucket): a reader sees
  the old page or the new one, never none, never half of one.
- the progress (the last key done, counts, time spent) is the checkpoint
  (work.checkpoints), saved in the same transaction as the chunk, while the run's
  lease (work.lease, a `JobLease` row) is held: `Fence.hold` locks the lease row, so a
  runner whose lease ran out commits nothing after the runner that took over began.
  A killed runner resumes from the last chunk committed; two runners never run at once.
- nothing of the article changes: no status, no attempt, no `PublishAttempt`, no
  webhook. The shared views are rebuilt whole by the refresher's next pass, at the
  latest the catch-up's (SiteState.rebuild, set when a run begins).

A run belongs to one look. A process whose look differs from the run's takes the site
over for its own look only if it was started after the process that began that run (or
is it; `look.born()`, by the database's clock), so during a rolling deploy the processes
of the old look do not flip the site back; `manage.py rerender_site` (a new process)
always may.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Generator, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

from django.conf import settings
from django.db import Error as DatabaseFailure
from django.db import close_old_connections, transaction

from blogpublish.models import SITE_STATE_ID
from blogpublish.models import SiteState as SiteStateRow
from blogpublish.site import build, documents, paths, selectors
from blogpublish.site import look as site_look
from blogpublish.site.lock import page_guard
from blogpublish.site.look import look, page_look
from blogpublish.site.selectors import LiveVersion
from blogpublish.storage import SiteStorage, Staged
from publishing import renderers
from publishing.exceptions import TIME_LIMITS
from work.checkpoints import checkpoint_clear, checkpoint_read, checkpoint_save
from work.lease import Fence, db_now

logger = logging.getLogger(__name__)

# The checkpoint's name (work.models.Checkpoint): its position is a `Progress`.
RERENDER_CHECKPOINT = "site-rerender"


@dataclass
class Progress:
    """A run of the re-render: the checkpoint's position (JSON)."""

    look: str
    # The process that began it was started at (unix seconds, database clock).
    born: float
    # The listed articles when it began, and when (ISO, database clock).
    total: int
    started_at: str
    # The last article key done: the run resumes after it.
    after: int = 0
    # Pages handled (written, or found right), and of them written.
    done: int = 0
    written: int = 0
    # Seconds the passes spent: the rate is done / seconds.
    seconds: float = 0.0
    updated_at: str = ""
    finished_at: str | None = None
    # Pages of this walk not rendered or not staged (an error, a full disk): each keeps
    # its old look, so the run walks the site once more for them (`walk` 2), reading
    # the pages already in this look, not writing them; what fails again is left, and
    # counted here when the run finishes (`rerender_site --again` tries once more).
    failed: int = 0
    walk: int = 1
    # The last former address written again as the run ends (`_former_addresses_written`:
    # a pass that ran out of time there resumes after it).
    former_after: str = ""

    @property
    def rate(self) -> float:
        return self.done / self.seconds if self.seconds > 0 else 0.0


def progress_read() -> Progress | None:
    position = checkpoint_read(RERENDER_CHECKPOINT)
    if not isinstance(position, dict):
        return None
    try:
        return Progress(**position)
    except TypeError:  # an older shape: the run starts over
        return None


def may_take(progress: Progress | None, *, force: bool = False) -> bool:
    """May this process begin a run in its own look over `progress`: none yet, a run
    of its own look (again), or one a process no newer than this one began?"""
    if progress is None or force or progress.look == look():
        return True
    return progress.born <= site_look.born()


def rerender_due() -> bool:
    """Is there re-rendering for this process to do: a run of its look unfinished, or the
    site in another look that it may take over (`may_take`)? A site that never had a
    run is due once it lists an article (its pages may be from before look marks)."""
    progress = progress_read()
    if progress is None:
        return selectors.listed().exists()
    if progress.look == look():
        return progress.finished_at is None
    return may_take(progress)


def look_to_mend() -> str | None:
    """This process's look when the site's re-render run is in it (running or finished):
    then a page showing its live version in another look (an older process's write
    during a rolling deploy, after the run had passed it) is wrong, and the passes that
    read it (`_repair_settled`, the full check) write it again. None when the site's run
    is in another look (this process is the older one) or there is none yet: looks are
    not judged, so an old process never turns pages back to its look."""
    progress = progress_read()
    return look() if progress is not None and progress.look == look() else None


def rerender_status() -> dict:
    """The run as the dashboard and `rerender_site --status` show it."""
    progress = progress_read()
    status: dict = {"look": look(), "run": None}
    if progress is None:
        return status
    # Estimated from the run's own counts, not counted: the dashboard asks every few
    # seconds, and a count after the key walks the rest of a large site.
    left = 0 if progress.finished_at else max(0, progress.total - progress.done)
    status["run"] = {**asdict(progress), "rate": round(progress.rate, 1), "left": left}
    # Every page in this look: a run finished in it, with no page it had to leave.
    finished = progress.look == look() and progress.finished_at is not None
    status["current"] = finished and not progress.failed
    return status


def rerender_pass(
    site: SiteStorage, *, fence: Fence | None = None, force: bool = False, again: bool = False
) -> bool:
    """One pass of the re-render, one chunk at least and then until `fence.time_left()`
    is spent (no fence: to the end): False when it stopped there with pages left,
    True when the site is in this look (or in a look
    this process may not take over: nothing for it to do). `force`: begin a run in
    this process's look even over a newer process's run. `again`: begin a new run even
    if the site is in this look (a page an old process wrote during a rolling deploy;
    each page already in this look costs the read of its first bytes)."""
    progress = progress_read()
    if progress is None or progress.look != look() or again:
        if not may_take(progress, force=force):
            logger.info("re-render: the site is in the look of a newer process; not taken over")
            return True
        progress = _begin(fence)
    if progress.finished_at is not None:
        return True
    # One thread removes what each chunk's exchange replaced; the pass ends when it is done.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="rerender-discard") as cleaner:
        upcoming: _Chunk | None = None  # the next chunk, its rendering under way
        took = 0.0  # the last chunk's seconds
        try:
            while True:  # one chunk at least per pass, so that every pass makes progress
                size = settings.SITE_RERENDER_CHUNK
                started = time.monotonic()
                if upcoming is None:
                    lives = selectors.live_versions_after(progress.after, limit=size)
                    upcoming = _prepare(site, lives) if lives else None
                prepared, upcoming = upcoming, None
                chunk = prepared.lives if prepared else []
                if prepared is not None:
                    upcoming = _ahead(site, chunk, size, fence, took)
                    _rerender_chunk(site, prepared, progress, fence, cleaner, started)
                took = time.monotonic() - started
                if len(chunk) < size and progress.failed and progress.walk < WALKS:
                    _walk_again(progress, fence)
                elif len(chunk) < size:  # the last one
                    # The former addresses' pages carry no look, but name the article's
                    # address, which SITE_URL (a setting of the look) makes: each is
                    # written again if it differs (a review's: after a new SITE_URL
                    # they sent readers to the old one until the full check).
                    if not _former_addresses_written(site, progress, fence):
                        break
                    _finish(progress, fence)
                    return True
                if fence is not None and fence.time_left() <= 0:
                    break
        finally:
            if upcoming is not None:  # a pass that stopped: the next chunk is not rendered
                upcoming.cancel()
    logger.info(
        "re-render: stopped at its budget after article %s (%d done); the next pass resumes",
        progress.after,
        progress.done,
    )
    return False


def _former_addresses_written(site: SiteStorage, progress: Progress, fence: Fence | None) -> bool:
    """Each former address's page, written again if it differs, in the order of their
    slugs from where the last pass stopped; False when the pass's budget ran out first
    (its place kept in the checkpoint: the next pass resumes there)."""
    for slug in sorted(s for s in selectors.moved_slugs() if s > progress.former_after):
        if fence is not None and fence.time_left() <= 0:
            with transaction.atomic():
                fence.hold("keeping the former addresses' place")
                checkpoint_save(RERENDER_CHECKPOINT, asdict(progress))
            return False
        build.settle_page_dirs(site, [slug])
        progress.former_after = slug
    return True


def _ahead(
    site: SiteStorage, chunk: list[LiveVersion], size: int, fence: Fence | None, took: float
) -> _Chunk | None:
    """With renderer processes, the chunk after `chunk` read and its rendering begun
    before `chunk` is written, so the renderers work while this process stages, guards
    and commits (it reads pages and rows only: the writes stay in order, one chunk at
    a time). None when `chunk` is the last, there are none, or the budget will likely
    be spent once `chunk` is written (it took `took` seconds the last time): the pass
    would stop before this one and throw its rendering away."""
    if renderers.pool() is None or len(chunk) < size:
        return None
    if fence is not None and fence.time_left() <= took:
        return None
    lives = selectors.live_versions_after(chunk[-1].id, limit=size)
    return _prepare(site, lives) if lives else None


def _begin(fence: Fence | None) -> Progress:
    """A new run in this process's look: the pages from the first key, and the shared
    views rebuilt whole by the refresher's next pass (each written if it changed)."""
    now = db_now().isoformat()
    progress = Progress(
        look=look(),
        born=site_look.born(),
        total=selectors.count_listed(),
        started_at=now,
        updated_at=now,
    )
    with transaction.atomic():
        if fence is not None:
            fence.hold("beginning the re-render")
        checkpoint_save(RERENDER_CHECKPOINT, asdict(progress))
        SiteStateRow.objects.filter(pk=SITE_STATE_ID).update(rebuild=True)
        checkpoint_clear(build.REBUILD_CHECKPOINT)
    logger.info("re-render: the site's look changed; %d page(s) to write", progress.total)
    return progress


# Walks over the site a run makes at most: the second for pages the first failed.
WALKS = 2


def _walk_again(progress: Progress, fence: Fence | None) -> None:
    logger.warning(
        "re-render: %d page(s) were not written in the new look; walking the site again",
        progress.failed,
    )
    # The second walk's progress and rate are its own (started_at keeps the run's start).
    progress.after = progress.done = progress.failed = 0
    progress.seconds = 0.0
    progress.walk += 1
    with transaction.atomic():
        if fence is not None:
            fence.hold("walking the site again")
        checkpoint_save(RERENDER_CHECKPOINT, asdict(progress))


def _finish(progress: Progress, fence: Fence | None) -> None:
    progress.finished_at = progress.updated_at = db_now().isoformat()
    with transaction.atomic():
        if fence is not None:
            fence.hold("finishing the re-render")
        checkpoint_save(RERENDER_CHECKPOINT, asdict(progress))
    logger.log(
        logging.ERROR if progress.failed else logging.INFO,
        "re-render: done, %d page(s) handled, %d written, %d failed, %.0f pages/s",
        progress.done,
        progress.written,
        progress.failed,
        progress.rate,
    )


def _render(live: LiveVersion, around, related) -> str | Exception:
    """One page's HTML, or what stopped it: in a renderer process, an exception is
    returned as a value (one page's failure is that page's alone), as a plain one (any
    exception's text pickles; not every exception does)."""
    # Its connection (an image's renditions) checked before use, as a task's or a
    # request's is: a renderer's sits idle between chunks, where a server's idle
    # timeout or a proxy may drop it.
    close_old_connections()
    try:
        return documents.article_page(live, around=around, related=related)
    except Exception as exc:
        return RuntimeError(f"{type(exc).__name__}: {exc}")


Rendered = Generator[str | Exception, None, None]


# Pages a renderer takes at a time: fewer round trips between the processes.
RENDER_BATCH = 4


def _renders(due: list[LiveVersion], around: dict, related: dict) -> tuple[Rendered, list[Future]]:
    """Each page of `due` rendered, in order: by the renderer processes when there are
    (submitted now, RENDER_BATCH pages a future, streamed as they finish), else here as
    they are asked for; and the futures, for a pass that stops before it reads them to
    cancel. A renderer process that died leaves the rest of the chunk, and every later
    chunk, to this process."""
    args = [(live, around.get(live.id), related[live.id]) for live in due]
    pool = renderers.pool()
    if pool is None or not args:
        return _render_here(args), []
    batches = [args[n : n + RENDER_BATCH] for n in range(0, len(args), RENDER_BATCH)]
    futures: list[Future] = []
    try:
        for batch in batches:
            futures.append(pool.submit(_render_batch, batch))
    except BrokenProcessPool as exc:
        for future in futures:
            future.cancel()
        return _broken(exc, args), []
    return _streamed(futures, args), futures


def _render_batch(batch: list) -> list[str | Exception]:
    return [_render(*item) for item in batch]


def _streamed(futures: list[Future], args: list) -> Rendered:
    done = 0
    try:
        for future in futures:
            for html in future.result():
                done += 1
                yield html
    except BrokenProcessPool as exc:
        yield from _broken(exc, args[done:])
    finally:
        for future in futures:  # a pass that stopped reading: the rest not rendered
            future.cancel()


def _broken(exc: BrokenProcessPool, args: list) -> Rendered:
    logger.error("re-render: a renderer process died (%s); rendering here", exc)
    renderers.lost()
    return _render_here(args)


def _render_here(args: list) -> Rendered:
    for live, near, rel in args:
        try:
            yield documents.article_page(live, around=near, related=rel)
        except TIME_LIMITS:
            raise
        except Exception as exc:
            yield exc


@dataclass
class _Chunk:
    """A chunk read and its pages' rendering begun (`_prepare`), to be written
    (`_rerender_chunk`)."""

    lives: list[LiveVersion]
    due: list[LiveVersion]
    around: dict[int, selectors.Neighbours]
    pages: Rendered
    # The renderers' work for it (none when rendered here): cancelled if a pass stops
    # before writing it (closing `pages` would not: a generator never started runs no
    # `finally`).
    futures: list[Future]
    # Each page's write condition from the read before rendering (a bucket's ETag).
    expects: dict[str, str | None]

    def cancel(self) -> None:
        for future in self.futures:
            future.cancel()


def _prepare(site: SiteStorage, chunk: list[LiveVersion]) -> _Chunk:
    # Read first, outside the guard: a page already in this look (a publish since the
    # look changed, a chunk a killed runner wrote) costs no rendering. On disk read
    # again under the guard before any write; in a bucket each page's PUT is
    # conditional on the ETag this read answered with (`reads_fence_writes`), and only
    # a page written since is read again (`_write_chunk`).
    observed = site.read_observed(
        [paths.page_file(live.slug) for live in chunk], documents.CONTENT_MARK_WITHIN
    )
    due = [
        live
        for live in chunk
        if _needs_writing(observed[paths.page_file(live.slug)][0], live.published_hash)
    ]
    # Their previous and next articles in a few queries for the chunk, not two a page.
    around = selectors.neighbours_many([(live.publish_at, live.id) for live in due])
    # The related articles of the chunk's pages: one query (selectors.related_many).
    related = selectors.related_many({live.id: live.tags for live in due})
    pages, futures = _renders(due, around, related)
    expects = {rel: expect for rel, (_, expect) in observed.items()}
    return _Chunk(chunk, due, around, pages, futures, expects)


def _rerender_chunk(
    site: SiteStorage,
    prepared: _Chunk,
    progress: Progress,
    fence: Fence | None,
    cleaner: ThreadPoolExecutor,
    started: float,
) -> None:
    chunk, due = prepared.lives, prepared.due
    rendered: list[LiveVersion] = []

    def pages() -> Iterator[tuple[str, str]]:
        """Each page rendered as the storage asks for it: on disk the last one is
        written meanwhile (`stage_many`)."""
        for live, html in zip(due, prepared.pages, strict=True):
            if isinstance(html, Exception):  # this page only: it keeps its look
                logger.error("re-render: article %s's page was not rendered: %s", live.id, html)
                continue
            rendered.append(live)
            yield paths.page_file(live.slug), html

    staged = site.stage_many(pages())
    ready = list(zip(rendered, staged, strict=True))
    for live, item in ready:
        if isinstance(item, Exception):  # its page keeps its look; the run goes on
            logger.error("re-render: the page of article %s was not staged: %s", live.id, item)
    # Saved with the chunk's progress: the next walk comes for them (`Progress.failed`).
    progress.failed += len(due) - len(rendered) + sum(isinstance(i, Exception) for _, i in ready)
    made_live: list[tuple[LiveVersion, Staged]] = []
    try:
        written = _write_chunk(site, ready, prepared, progress, fence, started, made_live)
    except DatabaseFailure as exc:  # the guard failed: did it hold until the writes?
        _take_back(site, made_live, exc)
        raise
    finally:
        # The pages the exchange replaced (and what was not made live) removed while
        # the next chunk renders: nothing reads them, and a crash leaves them to the
        # full check's sweep, as a crash mid-chunk always did.
        cleaner.submit(_discard, site, [item for _, item in ready if isinstance(item, Staged)])
    logger.debug("re-render: %d of %d page(s) written up to %s", written, len(chunk), chunk[-1].id)


def _discard(site: SiteStorage, staged: list[Staged]) -> None:
    try:
        site.discard_many(staged)
    except Exception as exc:  # left to the full check's sweep
        logger.warning("re-render: %d staged file(s) not removed: %s", len(staged), exc)


def _write_chunk(
    site: SiteStorage,
    ready: list[tuple[LiveVersion, Staged | Exception]],
    prepared: _Chunk,
    progress: Progress,
    fence: Fence | None,
    started: float,
    made_live: list[tuple[LiveVersion, Staged]],
) -> int:
    """Under the chunk's page guard: the lease held, the pages still showing this live
    version (or missing) and in another look, and still with the neighbours they were
    rendered with (`around`), made live (each added to `made_live` as it goes, for
    `_take_back`); the progress saved. A page whose neighbours changed since it was
    rendered is not written: the pass that settles the change checks its links, and
    may have done so already (an older process writing it in its look during a rolling
    deploy); it counts as failed, so the next walk comes for it."""
    chunk, around = prepared.lives, prepared.around
    with page_guard(slugs=[live.slug for live in chunk], article_ids=[live.id for live in chunk]):
        if fence is not None:
            fence.hold(f"re-rendering the pages after article {progress.after}")
        live_now = {
            row["id"]: (row["published_hash"], row["published_slug"])
            for row in selectors.listed()
            .filter(pk__in=[live.id for live in chunk])
            .values("id", "published_hash", "published_slug")
        }
        staged = [(live, item) for live, item in ready if isinstance(item, Staged)]
        now = selectors.neighbours_many([(live.publish_at, live.id) for live, _ in staged])
        moved = {
            live.id
            for live, _ in staged
            if _links_mark(now.get(live.id)) != _links_mark(around.get(live.id))
        }
        if moved:
            logger.info(
                "re-render: articles %s got new neighbours meanwhile; not written", sorted(moved)
            )
            progress.failed += len(moved)
            staged = [(live, item) for live, item in staged if live.id not in moved]
        staged = [
            (live, item)
            for live, item in staged
            if live_now.get(live.id) == (live.published_hash, live.slug)
        ]
        if site.reads_fence_writes:
            # A bucket: each PUT only over the page the read before rendering saw (its
            # ETag), which showed this live version in another look, or none.
            for _, item in staged:
                item.expect = prepared.expects[item.rel]
                assert item.expect is not None, "a fenced write needs its condition"
            tried = [item for _, item in staged]
            refused = _refused(site, tried)
            made_live += [(live, i) for live, i in staged if id(i) not in refused]
            if refused:
                # Written since (an attempt, the refresher's repair, an older process):
                # judged again as on disk, by a read under the guard.
                again = _still_due(site, [(live, i) for live, i in staged if id(i) in refused])
                tried = [i for i in tried if id(i) not in refused] + again
                refused = _refused(site, again)
                retried = {id(i) for i in again} - refused
                made_live += [(live, i) for live, i in staged if id(i) in retried]
                if refused:
                    logger.info("re-render: %d page(s) written meanwhile, twice", len(refused))
                    progress.failed += len(refused)  # the next walk's
            chosen = [item for item in tried if id(item) not in refused]
        else:
            chosen = _still_due(site, staged)
            site.commit_many(chosen)
            placed = {id(item) for item in chosen}
            made_live += [(live, item) for live, item in staged if id(item) in placed]
        progress.after = chunk[-1].id
        progress.done += len(chunk)
        progress.written += len(chosen)
        progress.seconds += time.monotonic() - started
        progress.updated_at = datetime.now(UTC).isoformat()
        checkpoint_save(RERENDER_CHECKPOINT, asdict(progress))
    return len(chosen)


def _take_back(
    site: SiteStorage, made_live: list[tuple[LiveVersion, Staged]], exc: DatabaseFailure
) -> None:
    """The chunk's guard failed after some of its pages were written: nothing vouches
    that its locks held until then (a runner paused past the guard's idle timeout has
    its session, and its locks, ended by the server; a delete or a slug change may have
    gone through meanwhile). Under a new guard, the pages of the articles no longer
    live at the version rendered are taken back (the page each replaced put back, or
    the page removed where there was none, if the page there is still the one
    written: `SiteStorage.take_back`), as the publisher does after a broken guard. The
    others show their live version in the new look: kept, and rewritten by the next
    run (the checkpoint did not move) only if it finds them in another look."""
    if not made_live:
        return
    try:
        with page_guard(
            slugs=[live.slug for live, _ in made_live],
            article_ids=[live.id for live, _ in made_live],
        ):
            live_now = {
                row["id"]: (row["published_hash"], row["published_slug"])
                for row in selectors.listed()
                .filter(pk__in=[live.id for live, _ in made_live])
                .values("id", "published_hash", "published_slug")
            }
            for live, item in made_live:
                gone = live_now.get(live.id) != (live.published_hash, live.slug)
                if gone and site.take_back(item):
                    logger.warning(
                        "re-render: took back the page %s (its guard failed: %s)", item.rel, exc
                    )
    except DatabaseFailure as again:  # left to the full check, which removes it
        logger.error(
            "re-render: the chunk's guard failed (%s), and so did checking its %d page(s) "
            "after (%s)",
            exc,
            len(made_live),
            again,
        )


def _still_due(site: SiteStorage, staged: list[tuple[LiveVersion, Staged]]) -> list[Staged]:
    """Under the guard: each page's first bytes read again (and with them what its write
    is conditional on), and those still to write (`_needs_writing`)."""
    heads = site.observe_heads([item for _, item in staged], documents.CONTENT_MARK_WITHIN)
    return [item for live, item in staged if _needs_writing(heads[item.rel], live.published_hash)]


def _refused(site: SiteStorage, staged: list[Staged]) -> set[int]:
    """The pages made live with conditional writes; the ids of those refused (written
    since their read)."""
    return {id(item) for item in site.commit_each(staged)}


def _links_mark(around: selectors.Neighbours | None) -> str | None:
    """What a page's previous and next links show (documents.neighbours_mark)."""
    return documents.neighbours_mark(around) if around is not None else None


def _needs_writing(head: bytes | None, published_hash: str) -> bool:
    """Missing, or showing the live version (a page without a content mark is from
    before marks: the live version too) in another look. A page showing other content
    is an attempt's newer page, or a stale one that the refresher's check mends: the
    re-render leaves it alone."""
    if head is None:
        return True
    shown = documents.page_content_hash(head)
    if shown is not None and shown != published_hash:
        return False
    return page_look(head) != look()
