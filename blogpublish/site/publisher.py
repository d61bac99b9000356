"""The static site as a publisher (the contract is in publishing/publishers.py)."""

from __future__ import annotations

import contextlib
import errno
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from itertools import islice

from django.conf import settings
from django.db import DatabaseError
from django.db import Error as DatabaseFailure

from blogpublish.desk import images
from blogpublish.exceptions import PageChanged, StorageError, StorageUnreachable, SymlinkRefused
from blogpublish.models import SITE_STATE_ID
from blogpublish.models import SiteState as SiteStateRow
from blogpublish.site import build, documents, full_check, paths, rerender, selectors
from blogpublish.site.fenced import FencedSite
from blogpublish.site.lock import page_guard, snapshot
from blogpublish.site.look import page_look
from blogpublish.site.selectors import ListedPage
from blogpublish.site.state import (
    ChecksDue,
    Note,
    SiteState,
    add_note,
    add_notes,
    checks_done,
    checks_due_add,
)
from blogpublish.storage import SiteStorage, Staged, site_storage
from publishing.exceptions import TIME_LIMITS, PermanentPublishError, TransientPublishError
from publishing.models import tags_refresh
from publishing.publishers import BasePublisher
from publishing.services.live_tags import live_tags_heal
from work.checkpoints import checkpoint_clear
from work.lease import Fence, Overtaken, db_now

logger = logging.getLogger(__name__)

# Pages written again under one guard (`_write_live_pages`).
REPAIR_CHUNK = 200


@contextlib.contextmanager
def _overtaken_rebuilds() -> Iterator[None]:
    """A pass that was overtaken after one of its writes may have written an older
    document over the newer pass's: once its snapshot is rolled back, it asks for a
    full rebuild from the first page (blogpublish.site.fenced), which rewrites every
    shared document that differs from the database, whoever wrote last."""
    try:
        yield
    except Overtaken as exc:
        if exc.wrote:
            logger.warning("shared views: %s; a full rebuild is due", exc)
            SiteStateRow.objects.filter(pk=SITE_STATE_ID).update(rebuild=True)
            checkpoint_clear(build.REBUILD_CHECKPOINT)
        raise


class StaticSitePublisher(BasePublisher):
    """The site under SITE_ROOT (a folder or a bucket, blogpublish.storage):
    `<slug>/index.html` per article, `index.html` (the newest 50),
    `page/<n>/index.html` (the archive), `feed.xml` (Atom) and `sitemap.xml`.

    No site-wide lock: an attempt writes its own page under the guard of its slug and
    article (blogpublish.site.lock); the shared views are written by `refresh` and
    `reconcile`, which the pipeline runs one at a time (publishing.services.refresh);
    the full check's `check` writes and removes pages as an attempt does, beside them.
    Every write is atomic. Layout and choices: docs/site.md.
    """

    # A group's pages are written under one guard, each page's token checked there.
    in_groups = True

    def __init__(self, storage: SiteStorage | None = None):
        self._storage = storage

    @property
    def site(self) -> SiteStorage:
        """The given storage, else SITE_ROOT's, read when used (blogpublish.storage)."""
        return self._storage or site_storage()

    def publish(self, article) -> None:
        """Write the article's page, unless its content changed since the claim: then
        newer content is on its way, and this attempt's completion will not match."""
        page = paths.page_file(article.slug)
        try:
            # Rendering and staging (on disk: a synced temporary file in a staging
            # folder) happen outside the guard: no page appears before the guard says
            # it may, and the guard is held for a rename or one PUT.
            html = documents.article_page(article)
            staged = self.site.stage(page, html)
            try:
                self._write_page(article, staged)
            finally:
                self.site.discard(staged)
        except SymlinkRefused as exc:
            # A link where the page's folder (or .staging) should be is an operator's
            # problem that no retry solves: not written through, dead now with an alert
            # whose error names the link (docs/site.md, "Links in SITE_ROOT").
            raise PermanentPublishError(str(exc)) from exc
        except OSError as exc:  # disk full, permissions: may pass; retried
            raise write_failed(exc) from exc
        except StorageError as exc:  # the bucket unreachable or refusing: retried, then dead
            raise TransientPublishError(f"writing the page failed: {exc}") from exc

    def _write_page(self, article, staged: Staged) -> None:
        """Under the page guard: the attempt's token checked, the page as it is now
        observed (a bucket's PUT is conditional on it), the note, then the page live."""
        try:
            with page_guard(slugs=[article.slug], article_id=article.pk):
                # The attempt's token too: an attempt overtaken meanwhile (a host cut
                # off past its lease) never writes over the newer one's page.
                current = selectors.listed_if_current(
                    article_id=article.pk,
                    content_hash=article.content_hash,
                    claims=article.claims,
                )
                if current is None:
                    logger.info(
                        "article %s was edited, deleted or taken over by a newer "
                        "attempt; page not written",
                        article.pk,
                    )
                    return
                self.site.observe(staged)
                add_note(
                    article_id=article.pk,
                    # The live page it replaces goes once the new one is live (settle).
                    slugs=[article.slug, article.published_slug],
                    # From the database now, not the claim: a stale attempt of content
                    # already published must not count the article a second time.
                    listed=current[0],
                    listed_at=current[1],
                )
                self.site.commit(staged)
        except (PageChanged, DatabaseFailure) as exc:
            if self._after_broken_guard([(article, staged)], exc):
                raise TransientPublishError(
                    f"the page guard did not hold until the page was written ({exc}); "
                    "the page is written again"
                ) from exc
        except TIME_LIMITS as exc:
            self._after_time_limit([(article, staged)], exc)
            raise

    def _after_time_limit(self, ready: list, exc: BaseException) -> None:
        """The time limit came under the guard, maybe after the write (a worker paused
        past its lease raises it the moment it runs again, as the page goes in; a
        review's finding): nothing vouches that the guard held, so each write is taken
        back as a broken guard's is, and the caller goes on with the time limit."""
        try:
            self._after_broken_guard(ready, exc)
        except TransientPublishError as again:  # the database failing too: logged
            logger.error("a write cut by its time limit was not checked: %s", again)

    def _after_broken_guard(self, ready: list, exc: BaseException) -> list[int]:
        """The guard's transaction failed, or a PUT found the page changed since the
        token check: nothing vouches that the guard's locks held until the write (a
        database session dropped while its host was paused ends them). Under a new
        guard, each write taken back (the page it replaced put back, if the page there
        is still the one written; a conditional PUT needs nothing), and the tokens
        read again. The attempts overtaken meanwhile stop here and say so; returns the
        others, whose pages are to be written again (issue 17, docs/design.md)."""
        try:
            with page_guard(
                slugs=[article.slug for article, _ in ready],
                article_ids=[article.pk for article, _ in ready],
            ):
                for _, staged in ready:
                    if self.site.take_back(staged):
                        logger.warning("took back the page %s: its guard did not hold", staged.rel)
                current = selectors.listed_if_current_many(
                    {article.pk: (article.content_hash, article.claims) for article, _ in ready}
                )
        except DatabaseFailure as again:
            raise TransientPublishError(
                f"writing the page failed ({exc}), and so did checking it after ({again})"
            ) from again
        overtaken = sorted({article.pk for article, _ in ready} - set(current))
        if overtaken:
            logger.warning(
                "articles %s were overtaken while their pages were written (%s): an "
                "edit, a delete or a newer attempt came first; pages not written",
                overtaken,
                exc,
            )
        return sorted(current)

    def publish_many(self, articles: list, *, listed_with: Sequence = ()) -> dict[int, Exception]:
        """`publish` for a batch's articles, with the same guarantees per article and
        the per-batch costs paid once (docs/performance.md, "Import → published"):
        every page rendered and staged (on disk: the staged files flushed in one call;
        `SiteStorage.stage_many`); then ONE page guard over all their slugs and ids, one
        query for which are still current, their notes written in one statement or
        two, and the pages made live (renames on disk, a PUT each in a bucket). Returns
        the failures by article id (what `publish` would have raised for each);
        an article missing from it was written, or was edited meanwhile (not written,
        and its completion will not match, as with `publish`).

        One article that cannot be rendered or staged fails alone. A failure under the
        guard (a database error, a link where a page's folder should be, a bucket
        refusing a PUT) undoes the
        guard's transaction, and the articles are then published one by one, so only
        the article it belongs to fails; the articles whose pages a bucket did not
        answer for (in time, or at all) fail with its error named, not tried again here,
        and the others are published one by one."""
        failures: dict[int, Exception] = {}
        rendered = []
        # The group's articles as listed once it completes (`listed_with`: the whole
        # group when `articles` is a slice of it): their pages link to each other from
        # the start, and the neighbours cost a few queries for the slice. Without the
        # rest of the group, each slice's pages at its ends named articles beyond the
        # group's, and the next pass wrote them again (docs/performance.md).
        group = list({a.pk: a for a in (*listed_with, *articles)}.values())
        around = selectors.neighbours_many(
            [(article.publish_at, article.pk) for article in articles],
            extra=[selectors.Entry.of_article(article) for article in group],
        )
        # Their related articles too, the slice's own counted: one query for the slice.
        # Not the rest of the group: a later slice may not be written (its deadline, a
        # failure, an edit), and a related list is never checked again (docs/site.md,
        # "Related articles"), where a wrong previous or next link is.
        related = selectors.related_many(
            {article.pk: article.tags or [] for article in articles},
            extra=[(selectors.Entry.of_article(a), a.tags or []) for a in articles],
        )
        for article in articles:
            try:
                page = documents.article_page(
                    article, around=around[article.pk], related=related[article.pk]
                )
                rendered.append((article, page))
            except TIME_LIMITS:
                raise
            except Exception as exc:  # over the renderer's limits, or a bug: its own
                failures[article.pk] = exc
        if not rendered:
            return failures
        site = self.site
        try:
            staged = site.stage_many([(paths.page_file(a.slug), html) for a, html in rendered])
        except (OSError, SymlinkRefused, StorageError):  # the staging folder itself
            return failures | self._publish_each([article for article, _ in rendered])
        ready = []
        for (article, _), item in zip(rendered, staged, strict=True):
            if isinstance(item, Exception):
                failures[article.pk] = write_failed(item)
            else:
                ready.append((article, item))
        try:
            self._write_staged(site, ready)
        except (
            OSError,
            SymlinkRefused,
            StorageError,
            DatabaseFailure,
            TransientPublishError,
        ) as exc:
            logger.warning("a batch's pages were not written together (%s); one by one", exc)
            # The pages a bucket did not answer for (in time, or at all) fail their
            # articles, each retried with its error named: written again one by one, each
            # would wait as long, past the attempt's time limit (a slow bucket ended in
            # the hard limit's kill: a review's finding). The others, written or not,
            # go one by one (failing them too left their pages served, unpublished: the
            # review of that mend).
            slow = set(exc.rels) if isinstance(exc, StorageUnreachable) else set()
            failures |= {
                article.pk: write_failed(exc) for article, item in ready if item.rel in slow
            }
            failures |= self._publish_each(
                [article for article, item in ready if item.rel not in slow]
            )
        finally:
            for _, item in ready:
                with contextlib.suppress(OSError, SymlinkRefused, StorageError):
                    site.discard(item)
        return failures

    def _write_staged(self, site: SiteStorage, ready: list) -> None:
        """Under one guard: the current articles' notes, then their pages made live."""
        if not ready:
            return
        try:
            self._write_staged_guarded(site, ready)
        except (PageChanged, DatabaseFailure) as exc:
            # Taken back and checked as `publish` does; then the caller writes the
            # pages one by one, and the overtaken ones find themselves so.
            self._after_broken_guard(ready, exc)
            raise
        except TIME_LIMITS as exc:
            self._after_time_limit(ready, exc)
            raise

    def _write_staged_guarded(self, site: SiteStorage, ready: list) -> None:
        with page_guard(
            slugs=[article.slug for article, _ in ready],
            article_ids=[article.pk for article, _ in ready],
        ):
            # Each attempt's token too, as `publish` checks it: a row overtaken meanwhile
            # never has its page written over the newer attempt's.
            current = selectors.listed_if_current_many(
                {article.pk: (article.content_hash, article.claims) for article, _ in ready}
            )
            live = [(article, item) for article, item in ready if article.pk in current]
            if len(live) < len(ready):
                logger.info(
                    "articles %s were edited, deleted or taken over by a newer attempt; "
                    "pages not written",
                    sorted({a.pk for a, _ in ready} - set(current)),
                )
            for _, item in live:
                site.observe(item)
            add_notes(
                [
                    Note(
                        article_id=article.pk,
                        slugs=[article.slug, article.published_slug],
                        listed=current[article.pk][0],
                        listed_at=current[article.pk][1],
                    )
                    for article, _ in live
                ]
            )
            site.commit_many([item for _, item in live])

    def _publish_each(self, articles: list) -> dict[int, Exception]:
        failures: dict[int, Exception] = {}
        for article in articles:
            try:
                self.publish(article)
            except TIME_LIMITS:
                raise
            except Exception as exc:  # as `publish` raises it, for this article alone
                failures[article.pk] = exc
        return failures

    def forget(self, article) -> None:
        """The article is being deleted (inside the delete's transaction): the next
        refresh takes its pages off and, if it was listed, rebuilds the archive."""
        listed = bool(article.published_slug)
        with page_guard(slugs=(), article_id=article.pk):
            add_note(
                article_id=article.pk,
                # Its former addresses' rows go with it: the note names their folders.
                slugs=[
                    article.slug,
                    article.published_slug,
                    *selectors.former_slugs_of([article.pk]).get(article.pk, ()),
                ],
                listed=listed,
                # Where it was listed: its neighbours' links name it (`_repair_settled`).
                listed_at=selectors.listed_date(article.published_publish_at) if listed else "",
            )

    def readdress(self, article_ids: list[int]) -> None:
        """These live articles have former addresses their pages do not show yet (an
        import's aliases of an article it left unchanged: no publish comes to settle
        them): a note each, which the next pass settles as a publish's, writing the
        pages that send readers on (build.settle_page_dirs)."""
        if not article_ids:
            return
        with page_guard(slugs=(), article_ids=sorted(set(article_ids))):
            live = selectors.listed_dates(article_ids)  # read under the guard
            add_notes(
                [
                    Note(article_id=i, slugs=[], listed=True, listed_at=listed_at)
                    for i, listed_at in sorted(live.items())
                ]
            )

    def unpublish(self, article) -> None:
        """After a delete: the same note as `forget` (a delete that bypassed it), then
        the refresh the pipeline runs next removes the pages and relists."""
        self.forget(article)

    def refresh(self, *, fence: Fence | None = None, busy: bool = False) -> bool:
        """Front page, feed, sitemap and the archive pages that changed: one pass in
        one snapshot of the database, then the directories it settled are removed.
        With `fence` (the refresher's token), every shared document's write is checked
        against it (blogpublish.site.fenced) and the pass keeps to its budget: False
        when a rebuild stopped there, to be resumed by the next pass. `busy`: publish
        work is due, the tag pages get a short slice (build.write_tag_pages)."""
        try:
            return self._refresh(fence, busy=busy)
        except SymlinkRefused as exc:  # the pass fails, is logged, and is wanted again
            logger.error("the shared views were not written: %s", exc)
            raise

    def _refresh(self, fence: Fence | None, *, busy: bool = False) -> bool:
        def views(site: build.Site, state: SiteState, time_left: build.TimeLeft) -> bool:
            if build.adopt_look(state):
                # Every tag's and author's page in the new look too (TAG_REFRESH_BATCH a
                # pass: the rest by the next passes), as the full check asks for them.
                tags_refresh(selectors.tags_in_use().values())
            if state.rebuild:
                return build.rebuild(site, state, time_left=time_left, busy=busy)
            return build.update(site, state, time_left=time_left, busy=busy)

        return self._pass(fence, views)

    def _pass(
        self,
        fence: Fence | None,
        views: Callable[[build.Site, SiteState, build.TimeLeft], bool],
    ) -> bool:
        """One pass over the shared views in one snapshot of the database: `views`
        writes them and settles the notes (build.settle); once it commits, the page
        directories the settled notes no longer need are removed, and the pages of the
        settled articles and of their neighbours checked (`_repair_settled`). The
        refresh and the full check both end so: a note either settles is checked. What
        is to be checked is saved with the pass (state.checks_due_add) and cleared once
        checked, so a pass killed before its check leaves it to the next pass."""
        site, time_left = self._shared(fence)
        with _overtaken_rebuilds(), snapshot():
            state = SiteState.load()
            # Where the articles about to settle were listed: their old neighbours'
            # links may name them (a delete, a new date, a new title or slug).
            were_at = {i: w.listed_at for i, w in state.written.items() if w.was_listed}
            done = views(site, state, time_left)
            due = checks_due_add(
                list(state.settled),
                [(i, were_at[i]) for i in state.settled if were_at.get(i)],
                [slug for slugs, _ in state.removals for slug in slugs],
            )
            state.save_pass()
        if due is None:
            return done
        # A folder the storage refused to remove stays in the checkpoint alone, for every
        # later pass (and the full check) to try again; the pass itself is not failed for
        # it (a review of the mend: a folder refused for good failed every pass, each
        # wanting the next, about 15,000 a day, and the checked ids piled up).
        refused = self._remove(due.removals)
        again = self._remove_again(due, refused)
        if self._repair_settled(due.ids, were_at=due.were_at):
            checks_done(due, removals_left=refused, again=again)
        return done

    def _remove_again(self, due: ChecksDue, refused: list[str]) -> dict[str, float]:
        """The folders removed, once more by the first pass after the storage's late
        writes have all landed (`SiteStorage.late_write_seconds`: a bucket's PUT in flight
        when its attempt gave up, retried by botocore after the removal, put back the page
        of an article deleted meanwhile, for good: a review's finding). Those refused
        now are added to `refused`; returns those still to remove again, and when."""
        window = self.site.late_write_seconds()
        if not window and not due.again:
            return {}
        now = db_now().timestamp()
        again = {slug: at for slug, at in due.again.items() if slug not in due.removals}
        if window:
            again |= {slug: now + window for slug in due.removals if slug not in refused}
        ripe = sorted(slug for slug, at in again.items() if at <= now)
        refused += self._remove(ripe)  # refused: removed, then waited for, again
        return {slug: at for slug, at in again.items() if slug not in ripe}

    def _shared(self, fence: Fence | None) -> tuple[build.Site, build.TimeLeft]:
        """Where the shared views are written: fenced by the pass's token, if given."""
        if fence is None:
            return self.site, None
        return FencedSite(self.site, fence), fence.time_left

    def check(self) -> None:
        """The full check of the pages and files (the publisher interface's `check`): list
        the site (a folder or every key of the bucket, page by page), remove every page
        directory no article needs (a delete that bypassed the signals, a crash between
        a pass and its removals), write again the live pages that are missing or stale
        (each page's first bytes read for its content mark), and sweep the staged files
        and images left behind. The pages read are those that may have changed since the
        last check, and a rotating slice of the rest (blogpublish.site.full_check).

        It holds no lease of the refresher's: at a million pages, or in a bucket, it
        reads for minutes while publishes and their passes go on. Every write and removal
        is an article's, under its page guard, decided on what the database says under
        it (as an attempt's); it writes no shared view (`reconcile` does, after it). What
        else it removes no writer shares: staged files and trash older than two leases,
        images no article has used for IMAGE_GRACE_SECONDS."""
        owned = selectors.owned_slugs()
        moved = selectors.moved_slugs()
        scope = full_check.scope_begin()
        present = self.site.page_dirs()
        self._remove_strays(
            sorted(n for n in present if paths.is_article_dir_name(n)), owned | moved
        )
        # Each former address's page, written if missing or sending readers elsewhere.
        build.settle_page_dirs(self.site, moved - owned)
        counts = [0, 0]  # pages read, pages listed
        self._repair_pages(selectors.listed_pages(), present=present, scope=scope, counts=counts)
        full_check.scope_done(scope, read=counts[0], listed=counts[1])
        try:
            self.site.sweep(older_than=time.time() - 2 * settings.PUBLISH_LEASE_SECONDS)
        except SymlinkRefused as exc:
            logger.error("reconcile: %s", exc)
        self._sweep_images()

    def _remove_strays(self, names: list[str], needed: set[str]) -> None:
        """Remove the page folders no article needs, those the site wrote only: a folder
        whose index.html carries none of the site's marks was put in SITE_ROOT by someone
        else (backups/, uploads/, another site sharing the folder: a review's finding,
        when the full check removed every one of them) and is left, with a warning."""
        strays = [name for name in names if name not in needed]
        heads = self.site.read_heads(
            [f"{name}/index.html" for name in strays], documents.CONTENT_MARK_WITHIN
        )
        for name in strays:
            if not documents.is_site_page(heads[f"{name}/index.html"]):
                logger.warning(
                    "reconcile: %s/ in the site's folder is not a page of this site (its "
                    "index.html carries no mark of it): left alone; SITE_ROOT should hold "
                    "the site only, as all of it is served",
                    name,
                )
                continue
            logger.info("reconcile: removing %s/, which no article needs", name)
            try:
                build.settle_page_dirs(self.site, [name])
            except (OSError, StorageError) as exc:
                # The rest of the check goes on: one folder it cannot remove stopped it
                # before the pages' repair (a review's finding).
                logger.error("reconcile: %s/ was not removed: %s", name, exc)

    def reconcile(self, *, fence: Fence | None = None) -> bool:
        """The full check's pass over the shared views, after `check`, under the
        refresher's lease (`fence`): the tag and author folders checked (only a pass
        writes them, so none is being written meanwhile), then every shared view rebuilt
        from the first page (each rewritten only if it differs; with `fence`, as
        `refresh`, stopping at the budget: the next passes resume it). The former
        addresses of articles gone are forgotten here, not in `check`: a pass settling a
        delete forgets its own, and two transactions deleting one row conflict."""
        selectors.former_addresses_forget()
        self._check_tags(self._shared(fence)[0])

        def views(site: build.Site, state: SiteState, time_left: build.TimeLeft) -> bool:
            build.adopt_look(state)  # rebuilt from the first page, tags asked for: as a new look
            return build.rebuild(site, state, time_left=time_left, resume=False)

        # The notes its rebuild settles are checked as a refresh's are: an article
        # listed after the pages were read has its neighbours' pages written.
        return self._pass(fence, views)

    def rerender(
        self, *, fence: Fence | None = None, force: bool = False, again: bool = False
    ) -> bool:
        """One pass of the re-render in this process's look (blogpublish.site.rerender)."""
        return rerender.rerender_pass(self.site, fence=fence, force=force, again=again)

    def rerender_due(self) -> bool:
        return rerender.rerender_due()

    def rerender_status(self) -> dict:
        return rerender.rerender_status()

    def _check_tags(self, site: build.Site) -> None:
        """The full check of the tag and author pages: every tag and byline a listed
        article carries is asked for (a TagRefresh each), so the rebuild below writes
        its page and feed again where they differ; a folder under tag/ or author/ that
        names no such tag or byline is removed. First the index itself is repaired
        (rows an earlier release made by its own keys, rows naming a tag merged away:
        live_tags_heal). A folder is removed through `site` (fenced by the pass's token:
        a pass that outlived its lease removes nothing a newer pass wrote), each once the
        database says again, just before, that no listed article carries its tag."""
        healed = live_tags_heal()
        if healed:
            logger.warning("reconcile: the live tags of %d articles made again", healed)
        in_use = selectors.tags_in_use()
        tags_refresh(in_use.values())
        for kind, folder in paths.TERM_DIRS.items():
            for name in site.names(folder):
                if name.startswith(".") or (kind, name) in in_use:
                    continue
                if selectors.tag_in_use(kind, name):  # tagged since the read above
                    continue
                logger.info("reconcile: removing %s/%s/, which no %s needs", folder, name, kind)
                site.delete_tree(f"{folder}/{name}")

    def _repair_pages(
        self,
        pages: Iterable[ListedPage],
        *,
        present: dict[str, float | None] | None = None,
        scope: full_check.Scope | None = None,
        counts: list[int] | None = None,
    ) -> int:
        """Listed articles whose page is missing, or stale: its content mark is neither
        its live version nor, while it is pending, the content its attempt writes (a
        write that landed after it was overtaken, a rename a power loss undid). The
        live version written again under the page guard, only while it is still live
        and the page still wrong, so an attempt writing newer content meanwhile wins.
        `present`: the full check's listing (page folder → when its index.html was put
        in place, None when it is not there); of the pages there, only those `scope`
        finds due are read. A page without a mark (written before pages carried one)
        is left alone. `counts` gets the pages read and listed. Returns how many were
        written (issue 17, docs/design.md)."""
        wrong, pages, counts = [], iter(pages), counts if counts is not None else [0, 0]
        mend_look = rerender.look_to_mend()
        while chunk := list(islice(pages, 1000)):
            missing = [] if present is None else [p for p in chunk if present.get(p.slug) is None]
            there = [p for p in chunk if present is None or present.get(p.slug) is not None]
            if present is not None and scope is not None:
                there = [p for p in there if scope.due(p, present[p.slug] or 0.0)]
            heads = self.site.read_heads(
                [paths.page_file(p.slug) for p in there], documents.CONTENT_MARK_WITHIN
            )
            counts[0] += len(there)
            counts[1] += len(chunk)
            wrong += [p.id for p in missing]
            wrong += [
                p.id for p in there if _is_wrong(p, heads[paths.page_file(p.slug)], mend_look)
            ]
        return sum(
            self._write_live_pages(wrong[start : start + REPAIR_CHUNK])
            for start in range(0, len(wrong), REPAIR_CHUNK)
        )

    def write_pages_again(self, article_ids: list[int]) -> int:
        """The live pages of these articles written again even where their marks say
        they are right (`restore_check --repair`: a page whose text differs below its
        head, which the full check reads alone; a review's finding). Returns how many."""
        return self._write_live_pages(article_ids, whole=True)

    def _write_live_pages(self, article_ids: list[int], *, whole: bool = False) -> int:
        """The live versions of these articles written again, as a batch writes its pages
        (publish_many): rendered and staged together (one flush), then under ONE page
        guard, each made live only if it is still live as rendered, its neighbours are
        still those it links to, and its page still wrong (`whole`: or its text other
        than the one rendered). Returns how many were."""
        site = self.site
        lives = list(selectors.live_versions_of(article_ids))
        seen = {page.id: page for page in selectors.listed_pages([live.id for live in lives])}
        related = selectors.related_many({live.id: live.tags for live in lives})
        rendered = [
            (
                live,
                documents.article_page(
                    live, around=seen[live.id].neighbours, related=related[live.id]
                ),
            )
            for live in lives
            if live.id in seen
        ]
        if not rendered:
            return 0
        staged = site.stage_many([(paths.page_file(live.slug), html) for live, html in rendered])
        ready = [
            (live, item)
            for (live, _), item in zip(rendered, staged, strict=True)
            if not isinstance(item, Exception)
        ]
        try:
            with page_guard(
                slugs=[live.slug for live, _ in ready], article_ids=[live.id for live, _ in ready]
            ):
                now = {page.id: page for page in selectors.listed_pages(seen)}
                mend_look = rerender.look_to_mend()
                # Each page's first bytes, and its write's condition (a bucket's ETag)
                # from the same read: never a later page's (observe_heads).
                heads = site.observe_heads(
                    [item for _, item in ready], documents.CONTENT_MARK_WITHIN
                )
                due = []
                for live, item in ready:
                    if (
                        (page := now.get(live.id)) is not None
                        and (page.slug, page.published_hash) == (live.slug, live.published_hash)
                        and page.neighbours == seen[live.id].neighbours
                        and (
                            why := _why_wrong(page, heads[item.rel], mend_look)
                            or (whole and TEXT_DIFFERS)
                        )
                    ):
                        due.append(item)
                        # New links or a new look are routine; a page missing or stale is a repair.
                        level = logging.INFO if why in ROUTINE else logging.WARNING
                        logger.log(level, "writing the page %s again: %s", item.rel, why)
                # A page changed since its read (in a bucket: a writer whose guard did
                # not hold, a conditional write in flight) is that writer's; the next
                # check judges it. The others are written, and the check goes on.
                for item in site.commit_each(due):
                    logger.info("the page %s changed since it was read; left as it is", item.rel)
                    due.remove(item)
        finally:
            for _, item in ready:
                with contextlib.suppress(OSError, SymlinkRefused, StorageError):
                    site.discard(item)
        return len(due)

    def _repair_settled(self, article_ids: list[int], *, were_at: list[tuple[int, str]]) -> bool:
        """After a pass: the pages of the articles it settled, and of their neighbours
        where they were listed (`were_at`: (id, listed date) pairs) and where they are
        now, each read once (its first bytes), so a listed article's missing or stale
        page, or one whose previous or next link names an article no longer there or no
        longer so, is written again by the pass, not the next full check. False when it
        failed: the next pass checks them again (docs/site.md, "Previous and next")."""
        if not article_ids:
            return True
        try:
            keys = [(datetime.fromisoformat(at), i) for i, at in were_at]
            keys += [(e.publish_at, e.id) for e in selectors.listed_entries(article_ids).values()]
            around = selectors.neighbour_ids(keys)
            self._repair_pages(selectors.listed_pages(sorted({*article_ids, *around})))
        except (OSError, SymlinkRefused, StorageError, DatabaseError, PageChanged) as exc:
            logger.error("the pages of the articles settled were not checked: %s", exc)
            return False
        return True

    def _sweep_images(self) -> None:
        """Uploaded images no article has used for IMAGE_GRACE_SECONDS (blogpublish.desk)
        removed; the copies of images uploaded before copies were made, a few a check."""
        try:
            images.sweep(self.site)
            images.make_missing_renditions(self.site)
        except (OSError, SymlinkRefused, StorageError) as exc:  # the next full check tries again
            logger.error("reconcile: the images were not swept: %s", exc)

    def _remove(self, slugs: list[str]) -> list[str]:
        """The page folders the settled notes no longer need, removed (or sending
        readers on); those the storage refused, each logged: they stay in the checks
        due, for the next pass to try again."""
        refused = []
        for slug in slugs:
            try:
                build.settle_page_dirs(self.site, [slug])
            except (OSError, StorageError) as exc:
                refused.append(slug)
                logger.error(
                    "%s/ was not removed (%s); the next pass of the shared views tries again",
                    slug,
                    exc,
                )
        return refused


# What no page of the site can be written through: SITE_ROOT read-only, not the
# workers' to write, or full. Every pending article failed its budget within minutes and
# went dead, each with an alert and a requeue to make (a review's finding).
SITE_WIDE_ERRNOS = frozenset({errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT})


def write_failed(exc: BaseException) -> TransientPublishError:
    """A page's write failed: retried, and not counted when no page could be written."""
    if isinstance(exc, OSError) and exc.errno in SITE_WIDE_ERRNOS:
        return TransientPublishError(
            f"writing the page failed: {exc}; SITE_ROOT cannot be written, so the attempt "
            "is not counted: every page waiting goes out once it can",
            site_wide=True,
        )
    return TransientPublishError(f"writing the page failed: {exc}")


# Why a page is written again that no one did wrong: a publish or a withdraw gave it new
# neighbours, or the site has a new look.
NEW_LINKS = "its previous or next article changed"
# Why restore_check --repair writes a page whose marks are right.
TEXT_DIFFERS = "restore_check --repair: its text is written again whole"
OTHER_LOOK = "it is in another look"
ROUTINE = frozenset({NEW_LINKS, OTHER_LOOK})


def _is_wrong(page: ListedPage, head: bytes | None, mend_look: str | None = None) -> bool:
    return _why_wrong(page, head, mend_look) is not None


def _why_wrong(page: ListedPage, head: bytes | None, mend_look: str | None = None) -> str | None:
    """Why the page needs writing again, or None: missing (no first bytes), or marked
    with content the article does not show now, or showing its live version with
    previous and next links to other neighbours than its own now, or (`mend_look`:
    rerender.look_to_mend) in another look than the site's, or without the content mark
    every page has carried since issue 17 (emptied, cut short, written over by something
    else: restore_check named it and its repair left it, a review's finding). A page
    showing an attempt's content is left to that attempt, whose outcome settles it and
    checks it again."""
    if head is None:
        return "it is missing"
    shown = documents.page_content_hash(head)
    if shown is None:
        if documents.MOVED_MARK.search(head):  # a former address's, at a live page's place
            return "it sends readers to another address"
        return "it carries no content mark"
    if not page.shows_right(shown):
        return "it shows content the article does not"
    if shown != page.published_hash:
        return None
    links = documents.page_neighbours_mark(head)
    if links is not None and links != documents.neighbours_mark(page.neighbours):
        return NEW_LINKS
    if mend_look is not None and page_look(head) != mend_look:
        return OTHER_LOOK
    return None
