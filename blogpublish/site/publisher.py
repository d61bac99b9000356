"""The static site as a publisher (the contract is in publishing/publishers.py)."""

from __future__ import annotations

import contextlib
import logging
import os
import time
from pathlib import Path

from django.conf import settings

from blogpublish import files
from blogpublish.desk import images
from blogpublish.exceptions import SymlinkRefused
from blogpublish.site import build, documents, paths, selectors
from blogpublish.site.lock import page_guard, snapshot
from blogpublish.site.state import SiteState, add_note
from publishing.exceptions import PermanentPublishError, TransientPublishError

logger = logging.getLogger(__name__)


class StaticSitePublisher:
    """SITE_ROOT: `<slug>/index.html` per article, `index.html` (the newest 50),
    `page/<n>/index.html` (the archive), `feed.xml` (Atom) and `sitemap.xml`.

    No site-wide lock: an attempt writes its own page under the guard of its slug and
    article (blogpublish.site.lock); the shared views are written by `refresh` and
    `reconcile`, which the pipeline runs one at a time (publishing.services.refresh).
    Every write is atomic. Layout and choices: docs/site.md.
    """

    def __init__(self, root: Path | None = None):
        self.root = Path(root or settings.SITE_ROOT)

    def publish(self, article) -> None:
        """Write the article's page, unless its content changed since the claim: then
        newer content is on its way, and this attempt's completion will not match."""
        page = paths.page_file(article.slug)
        try:
            # Rendering and the synced temporary file happen outside the guard, in a
            # staging folder: no page directory appears before the guard says it may.
            html = documents.article_page(article)
            staged = files.stage(self.root, paths.STAGING_DIR, "index.html", html)
            try:
                with page_guard(slugs=[article.slug], article_id=article.pk):
                    current = selectors.listed_if_current(
                        article_id=article.pk, content_hash=article.content_hash
                    )
                    if current is None:
                        logger.info(
                            "article %s was edited or deleted; page not written", article.pk
                        )
                        return
                    add_note(
                        article_id=article.pk,
                        # The live page it replaces goes once the new one is live (settle).
                        slugs=[article.slug, article.published_slug],
                        # From the database now, not the claim: a stale attempt of content
                        # already published must not count the article a second time.
                        listed=current[0],
                        listed_at=current[1],
                    )
                    files.move_staged(self.root, paths.STAGING_DIR, staged, page)
            finally:
                files.discard_staged(self.root, paths.STAGING_DIR, staged)
        except SymlinkRefused as exc:
            # A link where the page's folder (or .staging) should be is an operator's
            # problem that no retry solves: not written through, dead now with an alert
            # whose error names the link (docs/site.md, "Links in SITE_ROOT").
            raise PermanentPublishError(str(exc)) from exc
        except OSError as exc:  # disk full, permissions: may pass; retried, then dead
            raise TransientPublishError(f"writing the page failed: {exc}") from exc

    def forget(self, article) -> None:
        """The article is being deleted (inside the delete's transaction): the next
        refresh takes its pages off and, if it was listed, rebuilds the archive."""
        with page_guard(slugs=(), article_id=article.pk):
            add_note(
                article_id=article.pk,
                slugs=[article.slug, article.published_slug],
                listed=bool(article.published_slug),
            )

    def unpublish(self, article) -> None:
        """After a delete: the same note as `forget` (a delete that bypassed it), then
        the refresh the pipeline runs next removes the pages and relists."""
        self.forget(article)

    def refresh(self) -> None:
        """Front page, feed, sitemap and the archive pages that changed: one pass in
        one snapshot of the database, then the directories it settled are removed."""
        try:
            self._refresh()
        except SymlinkRefused as exc:  # the pass fails, is logged, and is wanted again
            logger.error("the shared views were not written: %s", exc)
            raise

    def _refresh(self) -> None:
        with snapshot():
            state = SiteState.load()
            if state.rebuild:
                build.rebuild(self.root, state)
            else:
                build.update(self.root, state)
            state.save_pass()
        self._remove(state)

    def reconcile(self) -> None:
        """The full check: remove every page directory no article needs (a delete that
        bypassed the signals, a crash between a pass and its removals), then rebuild."""
        self.root.mkdir(parents=True, exist_ok=True)
        needed = selectors.owned_slugs()
        # lstat only (follow_symlinks=False): a link is neither a page directory nor
        # trash, whatever it points to, so it is left alone and never deleted through.
        for entry in os.scandir(self.root):
            if not entry.is_dir(follow_symlinks=False):
                continue
            if paths.is_trash(entry.name):  # a removal interrupted by a crash
                files.remove_tree(self.root, entry.name, aside=False)
            elif paths.is_article_dir_name(entry.name) and entry.name not in needed:
                logger.info("reconcile: removing %s/, which no article needs", entry.name)
                build.remove_unneeded(self.root, [entry.name])
        self._sweep_staging()
        self._sweep_images()
        with snapshot():
            state = SiteState.load()
            build.rebuild(self.root, state)
            state.save_pass()
        self._remove(state)

    def _sweep_staging(self) -> None:
        """Staged pages a crash left behind (older than any attempt can be)."""
        cutoff = time.time() - 2 * settings.PUBLISH_LEASE_SECONDS
        try:
            with files.open_dir(self.root, paths.STAGING_DIR) as staging:
                for name in os.listdir(staging):
                    with contextlib.suppress(FileNotFoundError, IsADirectoryError):
                        if os.lstat(name, dir_fd=staging).st_mtime < cutoff:
                            os.unlink(name, dir_fd=staging)
        except FileNotFoundError:
            pass
        except SymlinkRefused as exc:
            logger.error("reconcile: %s", exc)

    def _sweep_images(self) -> None:
        """Uploaded images no article has used for IMAGE_GRACE_SECONDS (blogpublish.desk)."""
        try:
            images.sweep(self.root)
        except (OSError, SymlinkRefused) as exc:  # the next full check tries again
            logger.error("reconcile: the images were not swept: %s", exc)

    def _remove(self, state: SiteState) -> None:
        for slugs, article_id in state.removals:
            with contextlib.suppress(OSError):  # the full check removes what is left
                build.remove_unneeded(self.root, slugs, besides=article_id)
