"""Bringing the shared views (front page, feed, archive, sitemap) in line with the database.

Always called by the refresher (one pass at a time), inside one snapshot of the
database. `update` is the refresh after outcomes: it costs the front page, the feed and
the archive pages that changed, whatever the size of the site. `rebuild` streams every
listed article once: after a delete or a new date, from reconcile, or when the site's
state row is missing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from blogpublish.site import documents, paths, problems, selectors
from blogpublish.site.lock import page_guard
from blogpublish.site.pagination import (
    PAGE_SIZE,
    first_position,
    full_pages,
    newer_than,
    older_than,
    older_than_front,
    pages_to_write,
    sitemap_chunks,
)
from blogpublish.site.selectors import Entry
from blogpublish.site.state import SiteState
from blogpublish.storage import SiteStorage
from publishing.models import ArticleStatus

logger = logging.getLogger(__name__)

# SiteStorage.write or SiteStorage.write_if_changed: (storage, path in it, data)
Write = Callable[[SiteStorage, str, str | bytes], object]


def atomic_write(site: SiteStorage, rel: str, data: str | bytes) -> None:
    site.write(rel, data)


def write_if_changed(site: SiteStorage, rel: str, data: str | bytes) -> bool:
    return site.write_if_changed(rel, data)


def remove_unneeded(site: SiteStorage, slugs: Iterable[str], *, besides: int | None = None) -> None:
    """Remove the page directories no article (other than `besides`) needs: each under
    its page guard, after reading who needs it, so a page written meanwhile stays."""
    for slug in sorted({slug for slug in slugs if slug}):
        with page_guard(slugs=[slug]):
            if not selectors.slug_owned(slug, besides=besides):
                site.delete_tree(paths.page_name(slug))


def settle(state: SiteState) -> tuple[list[int], list[int]]:
    """Close the notes of pages whose attempt has finished, and of deleted articles.

    Returns the listed articles among them (their archive entry may have changed) and
    those of them that were not listed before (new positions). The directories they no
    longer need (the old slug after a slug edit, the page of an article that was
    deleted, or that died without ever being listed) are queued in `state.removals`,
    removed after the pass commits. An attempt still pending keeps its note until the
    refresh after its own outcome.
    """
    rows = selectors.article_states(state.written)
    changed, inserted = [], []
    for article_id, written in list(state.written.items()):
        row = rows.get(article_id)
        if row is not None and row["status"] == ArticleStatus.PENDING:
            if row["published_hash"] and not written.was_listed:
                # Published, then edited before any pass settled it: listed, so counted
                # now; its note stays for the refresh after the edit's outcome.
                changed.append(article_id)
                inserted.append(article_id)
                state.count_listed(article_id, selectors.listed_date(row["published_publish_at"]))
            continue
        state.settle(article_id)
        live = row["published_slug"] if row else ""
        state.removals.append((sorted(set(written.slugs) - {live}), article_id))
        if row is None:
            state.rebuild = state.rebuild or written.was_listed
        elif row["published_hash"]:
            changed.append(article_id)
            if not written.was_listed:
                inserted.append(article_id)
            elif written.listed_at != selectors.listed_date(row["published_publish_at"]):
                state.rebuild = True  # a new date moved it: every position between shifts
    return changed, inserted


# --- writing the views -----------------------------------------------------------------


def write_front_page(site: SiteStorage, newest: list[Entry], *, count: int, write: Write) -> None:
    """The front page: the newest PAGE_SIZE articles. Written last by every refresh, so
    once a reader sees it, the feed and sitemap of the same refresh are there too."""
    older = older_than_front(count)
    write(
        site,
        paths.FRONT_PAGE,
        documents.listing_page(
            newest,
            page=None,
            newer_href="",
            older_href=paths.archive_href(older) if older else "",
            report=problems.report,
        ),
    )


def write_archive_page(
    site: SiteStorage, page: int, entries: list[Entry], *, count: int, write: Write
) -> None:
    """Archive page `page` (entries newest first) and its sitemap chunk."""
    older = older_than(page)
    html = documents.listing_page(
        entries,
        page=page,
        newer_href=paths.archive_href(newer_than(page, count)),
        older_href=paths.archive_href(older) if older else "",
        report=problems.report,
    )
    write(site, paths.archive_file(page), html)
    write(site, paths.sitemap_chunk_name(page), documents.sitemap(entries, report=problems.report))


def write_partial_chunk(
    site: SiteStorage, newest: list[Entry], *, count: int, write: Write
) -> None:
    """The sitemap chunk after the last full page: the newest `count % PAGE_SIZE`."""
    rest = count % PAGE_SIZE
    if rest:
        chunk = paths.sitemap_chunk_name(full_pages(count) + 1)
        write(site, chunk, documents.sitemap(newest[:rest], report=problems.report))


# --- refresh ---------------------------------------------------------------------------


def update(site: SiteStorage, state: SiteState) -> None:
    """The refresh after an outcome: front page, feed, and the archive pages that changed."""
    changed, inserted = settle(state)
    if state.rebuild:
        rebuild(site, state)
        return
    old_count, count = state.count, state.count + len(inserted)
    entries = selectors.listed_entries(changed)
    positions = positions_of(entries, inserted=inserted, total=count)
    if any(not 0 <= position < count for position in positions.values()):
        logger.warning("the site's article count (%s) is out of date; rebuilding", count)
        rebuild(site, state)
        return
    shifted = [positions[article_id] for article_id in inserted if article_id in positions]
    pages = pages_to_write(
        old_count=old_count,
        new_count=count,
        changed=positions.values(),
        shifted_from=min(shifted, default=None),
    )
    for page in pages:
        page_entries = selectors.entries_at(first=first_position(page), size=PAGE_SIZE, total=count)
        write_archive_page(site, page, page_entries, count=count, write=atomic_write)
    newest = selectors.newest(PAGE_SIZE)
    atomic_write(site, paths.FEED, documents.atom_feed(newest, report=problems.report))
    write_partial_chunk(site, newest, count=count, write=atomic_write)
    if sitemap_chunks(count) != sitemap_chunks(old_count):
        atomic_write(site, paths.SITEMAP, documents.sitemap_index(sitemap_chunks(count)))
    if not site.exists(paths.ROBOTS):  # a site before robots.txt, until its next rebuild
        atomic_write(site, paths.ROBOTS, documents.robots_txt())
    write_front_page(site, newest, count=count, write=atomic_write)
    state.count = count


def positions_of(entries: dict[int, Entry], *, inserted: list[int], total: int) -> dict[int, int]:
    """The positions of the changed entries on a site of `total`. When all of them are
    newly listed and newer than every other listed article (a burst of new articles,
    the usual case), they take the top positions in their order: one query for them
    all. Otherwise each is located by counting (selectors.position_of)."""

    def key(entry: Entry) -> tuple:
        return (entry.publish_at, entry.id)

    if entries and set(entries) <= set(inserted):
        below = selectors.newest(1, exclude=entries)
        if not below or min(map(key, entries.values())) > key(below[0]):
            ranked = sorted(entries.values(), key=key)
            return {entry.id: total - len(ranked) + rank for rank, entry in enumerate(ranked)}
    return {
        article_id: selectors.position_of(entry, total=total)
        for article_id, entry in entries.items()
    }


def rebuild(site: SiteStorage, state: SiteState) -> None:
    """Every view from the database, streaming the articles once; files that did not
    change are left alone (write_if_changed)."""
    settle(state)
    count, page, batch = 0, 0, []
    held: tuple[int, list[Entry]] | None = None  # the last full page: is it the newest?
    for entry in selectors.iter_oldest_first():
        batch.append(entry)
        count += 1
        if len(batch) == PAGE_SIZE:
            page += 1
            if held:
                write_archive_page(site, *held, count=count, write=write_if_changed)
            held, batch = (page, batch[::-1]), []
    if held:
        write_archive_page(site, *held, count=count, write=write_if_changed)
    newest = selectors.newest(PAGE_SIZE)
    write_if_changed(site, paths.FEED, documents.atom_feed(newest, report=problems.report))
    write_partial_chunk(site, newest, count=count, write=write_if_changed)
    write_if_changed(site, paths.SITEMAP, documents.sitemap_index(sitemap_chunks(count)))
    remove_beyond(site, pages=full_pages(count), chunks=sitemap_chunks(count))
    write_if_changed(site, paths.ROBOTS, documents.robots_txt())
    write_front_page(site, newest, count=count, write=write_if_changed)
    state.count, state.rebuild = count, False


def remove_beyond(site: SiteStorage, *, pages: int, chunks: int) -> None:
    """Archive pages and sitemap chunks past the end, after the site shrank. Never
    through a link: a link at `page/` stops the pass (blogpublish.files)."""
    for name in site.names(paths.ARCHIVE_DIR):
        if name.isdigit() and int(name) > pages:
            site.delete_tree(f"{paths.ARCHIVE_DIR}/{name}")
    for name in site.names():
        match = paths.SITEMAP_CHUNK_RE.match(name)
        if match and int(match[1]) > chunks:
            site.delete(name)
