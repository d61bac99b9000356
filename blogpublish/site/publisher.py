"""The static site as a publisher (the contract is in publishing/publishers.py)."""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

from django.conf import settings

from blogpublish.files import atomic_write, remove_tree
from blogpublish.site import build, documents, paths, selectors
from blogpublish.site.lock import site_lock
from blogpublish.site.state import SiteState
from publishing.exceptions import TransientPublishError

logger = logging.getLogger(__name__)


class StaticSitePublisher:
    """SITE_ROOT: `<slug>/index.html` per article, `index.html` (the newest 50),
    `page/<n>/index.html` (the archive), `feed.xml` (Atom) and `sitemap.xml`.

    Every write is atomic and happens under the site lock (blogpublish.site.lock),
    after reading the database, so concurrent workers never leave an older view on top
    of a newer one. Layout and choices: docs/site.md.
    """

    def __init__(self, root: Path | None = None):
        self.root = Path(root or settings.SITE_ROOT)

    def publish(self, article) -> None:
        """Write the article's page, unless its content changed since the claim: then
        newer content is on its way, and this attempt's completion will not match."""
        html = documents.article_page(article)  # outside the lock: it may take a while
        try:
            with site_lock(self.root):
                current = selectors.listed_if_current(
                    article_id=article.pk, content_hash=article.content_hash
                )
                if current is None:
                    logger.info("article %s was edited or deleted; page not written", article.pk)
                    return
                state = SiteState.load(self.root)
                atomic_write(paths.page_path(self.root, article.slug), html)
                state.note_write(
                    article_id=article.pk,
                    content_hash=article.content_hash,
                    # The live page it replaces goes once the new one is live (build.settle).
                    slugs=[article.slug, article.published_slug],
                    # From the database now, not the claim: a stale attempt of content
                    # already published must not count the article a second time.
                    listed=current[0],
                    listed_at=current[1],
                )
                state.save(self.root)
        except OSError as exc:  # disk full, permissions: may pass; retried, then dead
            raise TransientPublishError(f"writing the page failed: {exc}") from exc

    def unpublish(self, article) -> None:
        """The article was deleted: its page directories go, and if it was listed, the
        next refresh rebuilds the archive (every position above it moved)."""
        try:
            with site_lock(self.root):
                state = SiteState.load(self.root)
                written = state.written.pop(article.pk, None)
                slugs = {article.slug, article.published_slug, *(written.slugs if written else ())}
                build.remove_unneeded(self.root, slugs)
                if article.published_slug or (written and written.was_listed):
                    state.rebuild = True
                state.save(self.root)
        except OSError as exc:
            raise TransientPublishError(f"removing the page failed: {exc}") from exc

    def refresh(self) -> None:
        """Front page, feed, sitemap and the archive pages that changed."""
        with site_lock(self.root):
            state = SiteState.load(self.root)
            if state.rebuild:
                build.rebuild(self.root, state)
            else:
                build.update(self.root, state)
            state.save(self.root)

    def reconcile(self) -> None:
        """The full check (the catch-up runs it): remove every page directory no
        article needs (a delete made while the broker was down), then rebuild."""
        with site_lock(self.root):
            needed = selectors.owned_slugs()
            for entry in os.scandir(self.root):
                if not entry.is_dir(follow_symlinks=False):
                    continue
                if paths.is_trash(entry.name):  # a removal interrupted by a crash
                    shutil.rmtree(entry.path, ignore_errors=True)
                elif paths.is_article_dir_name(entry.name) and entry.name not in needed:
                    logger.info("reconcile: removing %s/, which no article needs", entry.name)
                    remove_tree(Path(entry.path))
            state = SiteState.load(self.root)
            build.rebuild(self.root, state)
            state.save(self.root)
