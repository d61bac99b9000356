"""Bringing the shared views (front page, feed, archive, sitemap) in line with the database.

Always called by the refresher (one pass at a time), inside one snapshot of the
database. `update` is the refresh after outcomes: it costs the front page, the feed and
the archive pages that changed, whatever the size of the site. `rebuild` streams every
listed article once: after a delete or a new date, from reconcile, or when the site's
state row is missing; it writes the front page and feed first and keeps its progress in
a checkpoint, so a rebuild longer than a pass resumes instead of starting over.
"""

from __future__ import annotations

import bisect
import logging
import math
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime

from blogpublish.site import documents, look, paths, problems, selectors
from blogpublish.site.fenced import FencedSite
from blogpublish.site.lock import page_guard
from blogpublish.site.pagination import (
    PAGE_SIZE,
    full_pages,
    newer_than,
    older_than,
    older_than_front,
    page_of,
    pages_to_write,
    sitemap_chunks,
)
from blogpublish.site.selectors import Entry
from blogpublish.site.state import SiteState
from blogpublish.storage import SiteStorage
from blogpublish.storage.base import payload
from publishing.models import ArticleStatus, Tag
from publishing.reader_fields import tag_key
from publishing.text_limits import strip_xml_illegal
from work.checkpoints import checkpoint_clear, checkpoint_read, checkpoint_save

logger = logging.getLogger(__name__)

# Where the shared views are written: the storage, or it fenced by the refresher's
# token (blogpublish.site.fenced), which has the same writes.
Site = SiteStorage | FencedSite
# SiteStorage.write or SiteStorage.write_if_changed: (storage, path in it, data)
Write = Callable[[Site, str, str | bytes], object]
# Removes a folder of the site (a tag's archive page past its end); the full check's
# comparison (check.py) records it instead: restore_check without --repair writes nothing.
Remove = Callable[[Site, str], object]


def delete_tree(site: Site, rel: str) -> None:
    site.delete_tree(rel)


def atomic_write(site: Site, rel: str, data: str | bytes) -> None:
    site.write(rel, data)


def write_if_changed(site: Site, rel: str, data: str | bytes) -> bool:
    return site.write_if_changed(rel, data)


def settle_page_dirs(site: SiteStorage, slugs: Iterable[str]) -> None:
    """Remove the page directories no article needs: each under its page guard, after
    reading who needs it (a live page, or an attempt that may be writing one: the
    article whose note settles too, edited back to the slug since the pass's snapshot,
    a review's finding), so a page written meanwhile stays. A former address of a
    listed article (selectors.moved_to) gets, or keeps, the page that sends readers on
    to the article's live page (docs/site.md, "Former addresses")."""
    for slug in sorted({slug for slug in slugs if slug}):
        with page_guard(slugs=[slug]):
            if selectors.slug_owned(slug):
                continue
            target = selectors.moved_to(slug)
            if target is None:
                site.delete_tree(paths.page_name(slug))
            elif site.write_if_changed(paths.page_file(slug), documents.moved_page(target)):
                logger.info("%s/ sends readers on to %s/", slug, target)


def settle(state: SiteState) -> tuple[list[int], list[int]]:
    """Close the notes of pages whose attempt has finished, and of deleted articles.

    Returns the listed articles among them (their archive entry may have changed) and
    those of them that were not listed before (new positions). The directories they no
    longer need (the old slug after a slug edit, the page of an article that was
    deleted, or that died without ever being listed) are queued in `state.removals`,
    removed after the pass commits. An attempt still pending keeps its note until the
    refresh after its own outcome; a pending row no attempt may be writing (scheduled
    for later, its lease free: selectors.may_be_written) is settled as its live version
    says, and a page an earlier date's attempt wrote goes.
    """
    rows = selectors.article_states(state.written)
    # Its former addresses too (an import's new aliases among them): each sends readers
    # on to where it is now, or goes with it (a delete's note names them too).
    former = selectors.former_slugs_of(state.written)
    changed, inserted = [], []
    for article_id, written in list(state.written.items()):
        row = rows.get(article_id)
        if row is not None and row["status"] == ArticleStatus.PENDING and row["writing"]:
            if row["published_hash"] and not written.was_listed:
                # Published, then edited before any pass settled it: listed, so counted
                # now; its note stays for the refresh after the edit's outcome.
                changed.append(article_id)
                inserted.append(article_id)
                state.count_listed(article_id, selectors.listed_date(row["published_publish_at"]))
            continue
        state.settle(article_id)
        live = row["published_slug"] if row else ""
        leaving = {*written.slugs, *former.get(article_id, ())} - {live}
        state.removals.append((sorted(leaving), article_id))
        if row is None and article_id in former:
            selectors.former_addresses_forget([article_id])  # their folders go above
        listed_at = selectors.listed_date(row["published_publish_at"]) if row else ""
        if row is None:
            state.shifted = state.shifted or written.was_listed
            state.rebuild = state.rebuild or written.was_listed
        elif (
            row["published_hash"]
            and not written.slugs
            and written.was_listed
            and written.listed_at == listed_at
        ):
            # A note of its former addresses alone (`readdress`: no page was written):
            # its listing is as it was, and nothing shared is written again for it (a
            # review's finding: every shared view was, with the same bytes).
            pass
        elif row["published_hash"]:
            changed.append(article_id)
            if not written.was_listed:
                inserted.append(article_id)
            elif written.listed_at != listed_at:
                # A new date moved it: every position between shifts.
                state.rebuild = state.shifted = True
    return changed, inserted


def adopt_look(state: SiteState) -> bool:
    """Is this process's shared look (look.shared_look) new to the shared views? Then
    the state takes it, and the pass rebuilds every shared view from the first archive
    page (each written if it differs), the front page and the feeds first; True.

    A look that a newer process built them in is left alone (False), as the page
    re-render leaves a newer process's run (rerender.may_take): during a rolling
    deploy the old processes' passes do not take the shared views back and forth."""
    mine = look.shared_look()
    if state.look == mine:
        return False
    if state.look and state.look_born > look.born():
        return False
    logger.info("shared views: a new look; every one rebuilt")
    state.look, state.look_born = mine, look.born()
    state.rebuild = state.shifted = True  # from the first page, whatever the checkpoint
    return True


# --- writing the views -----------------------------------------------------------------


def write_front_page(
    site: Site,
    newest: list[Entry],
    *,
    count: int,
    write: Write,
    report: documents.Report = problems.report,
) -> None:
    """The front page: the newest PAGE_SIZE articles. Written after the feed and the
    sitemap by every refresh, so once a reader sees it, those of the same refresh are
    there too."""
    older = older_than_front(count)
    write(
        site,
        paths.FRONT_PAGE,
        documents.listing_page(
            newest,
            page=None,
            newer_href="",
            older_href=paths.archive_href(older) if older else "",
            report=report,
        ),
    )


def write_archive_page(
    site: Site,
    page: int,
    entries: list[Entry],
    *,
    count: int,
    write: Write,
    report: documents.Report = problems.report,
) -> None:
    """Archive page `page` (entries newest first) and its sitemap chunk."""
    older = older_than(page)
    html = documents.listing_page(
        entries,
        page=page,
        newer_href=paths.archive_href(newer_than(page, count)),
        older_href=paths.archive_href(older) if older else "",
        report=report,
    )
    write(site, paths.archive_file(page), html)
    write(site, paths.sitemap_chunk_name(page), documents.sitemap(entries, report=report))


def write_feeds(site: Site, *, write: Write, report: documents.Report = problems.report) -> None:
    """The Atom feed and the JSON Feed: the newest PAGE_SIZE articles, whole, from one
    read of them (the same entries in both)."""
    entries = selectors.feed_entries(PAGE_SIZE)
    write(site, paths.FEED, documents.atom_feed(entries, report=report))
    write(site, paths.JSON_FEED, documents.json_feed(entries, report=report))


# Tags' pages written by a pass at most; the rest by the next pass (the catch-up runs one
# every interval, a publish asks for one).
TAG_REFRESH_BATCH = 1000
# While publish work is due (`busy`: a burst draining), the seconds a pass gives the
# tags' pages: they are the views readers can best wait for, and a pass takes one of a
# worker's processes from the publishes. The rest waits for a pass after the burst,
# which the refresher sends (publishing.services.refresh, docs/site.md "Tag pages").
BUSY_TAG_SECONDS = 0.1
# Tags whose documents are written together (`TagDocuments`): one flush of the disk
# for them all, instead of two fsyncs a document.
TAG_WRITE_CHUNK = 100


class TagDocuments:
    """A pass's tag documents, kept and then written together (`flush`): on disk, all
    staged, ONE flush of the file system, then each renamed into place
    (SiteStorage.write_many; a PUT each in a bucket, as before). `write` and
    `write_if_changed` have the signature of build's `Write`, so `write_tag` takes them."""

    def __init__(self, site: Site):
        self.site = site
        self.items: list[tuple[str, str | bytes]] = []

    def write(self, site: Site, rel: str, data: str | bytes) -> None:
        self.items.append((rel, payload(data)))

    def write_if_changed(self, site: Site, rel: str, data: str | bytes) -> bool:
        data = payload(data)
        if site.holds(rel, data):
            return False
        self.items.append((rel, data))
        return True

    def flush(self) -> None:
        if self.items:
            self.site.write_many(self.items)
            self.items = []


def write_tag_pages(
    site: Site, *, write: Write, time_left: TimeLeft = None, busy: bool = False
) -> bool:
    """The pages and the Atom feed of each tag (each byline: author/<slug>/) a completion
    or a delete touched since the last pass (TagRefresh): its newest PAGE_SIZE live
    articles, and its archive pages numbered from the oldest as the site's are, from
    the one holding the oldest date a request touched; a tag left with none has its
    folder removed. What a publish costs here follows the tags it touched and where
    in them, not the number of tags or the site's size (docs/site.md, "Tag pages").
    The documents are written TAG_WRITE_CHUNK tags at a time (`TagDocuments`).

    Stops after a tag once `time_left()` is spent, so a burst's many tags never hold
    back the next pass's front page: False when requests are left, those it stopped
    before or those past the TAG_REFRESH_BATCH it reads (the next pass takes them).
    `busy` (publish work is due): stops after BUSY_TAG_SECONDS, and returns True with
    requests left: the refresher sends a pass for them after the burst."""
    tags = selectors.tag_refresh_requests(TAG_REFRESH_BATCH)
    ends = time.monotonic() + BUSY_TAG_SECONDS if busy else math.inf
    batch = TagDocuments(site)
    tag_write = batch.write if write is atomic_write else batch.write_if_changed
    done: list[int] = []
    left = False
    listings = _listings(tags, chunk=BUSY_READ_CHUNK if busy else TAG_READ_CHUNK)
    for number, (tag, listing) in enumerate(zip(tags, listings, strict=False), 1):
        renamed = shown_name(tag, listing[1])
        if renamed != tag["name"]:  # API and desk say it as its pages do (selectors)
            selectors.tag_rename(tag["id"], renamed)
            tag = {**tag, "name": renamed, "since": None}  # every archive page names it too
        written = write_tag(
            site, tag, write=tag_write, archive_write=batch.write_if_changed, listing=listing
        )
        if not written:
            site.delete_tree(paths.tag_dir(tag["slug"], tag["kind"]))
        done += tag["requests"]
        if number % TAG_WRITE_CHUNK == 0:
            batch.flush()
        spent = time_left is not None and time_left() <= 0
        if (spent or time.monotonic() >= ends) and number < len(tags):
            left = True
            break
    batch.flush()
    # Requests left past those read (more than TAG_REFRESH_BATCH): the next pass too.
    left = (selectors.tag_refresh_done(done) if done else False) or left
    if left and busy:
        logger.info("shared views: tags' pages put off while publishes are due")
    return not left or busy


# Tags whose counts and newest entries are read together (`_listings`): two queries for
# them all; fewer while publishes are due, when a pass writes only a few tags.
TAG_READ_CHUNK = 50
BUSY_READ_CHUNK = 10


def _listings(tags: list[dict], *, chunk: int) -> Iterator[tuple[int, list[Entry]]]:
    """(count, newest PAGE_SIZE entries) of each tag in turn, read `chunk` tags at a
    time, as `write_tag` reads them for one."""
    for start in range(0, len(tags), chunk):
        ids = [tag["id"] for tag in tags[start : start + chunk]]
        counts = selectors.count_tagged_many(ids)
        entries = selectors.tag_entries_many([i for i in ids if counts[i]], PAGE_SIZE)
        for tag_id in ids:
            yield counts[tag_id], entries.get(tag_id, [])


def write_tag(
    site: Site,
    tag: dict,
    *,
    write: Write,
    report: documents.Report = problems.report,
    archive_write: Write = write_if_changed,
    remove: Remove = delete_tree,
    listing: tuple[int, list[Entry]] | None = None,
) -> bool:
    """One tag's (byline's) page, feed and archive pages (tag: id, kind, name, slug and
    `since`, the oldest date its requests touched; absent: every archive page); False,
    writing nothing, when no live article carries it. `listing`: its count and newest
    PAGE_SIZE entries, read already (`_listings`)."""
    folder = paths.tag_dir(tag["slug"], tag["kind"])
    if listing is None:
        count = selectors.count_tagged(tag["id"])
        entries = selectors.tag_entries(tag["id"], PAGE_SIZE) if count else []
    else:
        count, entries = listing
    if not count:
        return False
    name = strip_xml_illegal(shown_name(tag, entries))  # a spelling saved past validation
    term = documents.Term(tag["kind"], name, tag["slug"])
    older = older_than_front(count)
    older_href = term.page_href(older) if older else ""
    page = documents.tag_page(term, entries, older_href=older_href, report=report)
    write(site, f"{folder}/{paths.FRONT_PAGE}", page)
    write(site, f"{folder}/{paths.FEED}", documents.tag_feed(term, entries, report=report))
    write_tag_archive(
        site,
        term,
        tag["id"],
        count=count,
        since=tag.get("since"),
        write=archive_write,
        remove=remove,
        report=report,
    )
    return True


def shown_name(tag: dict, entries: list[Entry]) -> str:
    """The name a tag's (byline's) pages show: its spelling on its newest article, so a
    tag respelled ("Javascript" → "JavaScript") is shown as written now once its newest
    article says so; the row's (the first spelling) when none of `entries` has it."""
    if entries:
        newest = entries[0]
        key = tag_key(tag["name"])
        names = (newest.byline,) if tag["kind"] == "author" else newest.tags
        for name in names:
            # A spelling saved past validation longer than the row's column (its key
            # folds the spaces that make it so) failed every pass's rename on PostgreSQL
            # and froze the shared views (a review's finding): the row's is shown.
            if tag_key(name) == key and len(name) <= TAG_NAME_MAX:
                return name
    return tag["name"]


TAG_NAME_MAX = Tag._meta.get_field("name").max_length or 200


def write_tag_archive(
    site: Site,
    term: documents.Term,
    tag_id: int,
    *,
    count: int,
    since: datetime | None,
    write: Write = write_if_changed,
    remove: Remove = delete_tree,
    report: documents.Report = problems.report,
) -> None:
    """A tag's full archive pages from the one holding `since` (None: every one), and the
    one below it (its "Newer" link follows the number of full pages); each written only
    if it changed (`write`). Pages past the last full one (the tag shrank) are removed
    (`remove`), all of them: a gap below one (a removal cut short, a bucket restored
    over) left it served for good when only the page after the last was looked for (a
    review's finding)."""
    full = full_pages(count)
    first = 1
    if since is not None and full:  # a tag of fewer than PAGE_SIZE has no archive page
        first = page_of(selectors.count_tagged_before(tag_id, since, total=count))
    numbers = range(max(1, first - 1), full + 1)
    for number, entries in selectors.tagged_pages(tag_id, numbers, size=PAGE_SIZE, total=count):
        newer = newer_than(number, count)
        older = older_than(number)
        html = documents.tag_page(
            term,
            entries,
            number=number,
            newer_href=term.page_href(newer),
            older_href=term.page_href(older) if older else "",
            report=report,
        )
        write(site, paths.tag_archive_file(term.slug, term.kind, number), html)
    pages = f"{paths.tag_dir(term.slug, term.kind)}/{paths.ARCHIVE_DIR}"
    for name in site.names(pages):
        if name.isdigit() and int(name) > full:
            remove(site, f"{pages}/{name}")


def write_site_files(site: Site, *, write: Write) -> None:
    """The files of the site that list no article: robots.txt, the 404 page, the favicon."""
    write(site, paths.ROBOTS, documents.robots_txt())
    write(site, paths.NOT_FOUND, documents.not_found_page())
    write(site, paths.FAVICON, documents.favicon())


def write_partial_chunk(
    site: Site,
    newest: list[Entry],
    *,
    count: int,
    write: Write,
    report: documents.Report = problems.report,
) -> None:
    """The sitemap chunk after the last full page: the newest `count % PAGE_SIZE`; an
    empty site's one chunk (its front page)."""
    rest = count % PAGE_SIZE
    if rest or not count:
        chunk = paths.sitemap_chunk_name(full_pages(count) + 1)
        write(site, chunk, documents.sitemap(newest[:rest], report=report))


# --- refresh ---------------------------------------------------------------------------

# The rebuild's progress (work.checkpoints): the last archive page written, and the key
# (publish_at, id) of its newest entry, where the next pass resumes.
REBUILD_CHECKPOINT = "site-rebuild"

# Seconds a pass has left for more work (the refresher's budget, inside its lease and
# its time limit); None: no limit.
TimeLeft = Callable[[], float] | None


def update(site: Site, state: SiteState, *, time_left: TimeLeft = None, busy: bool = False) -> bool:
    """The refresh after an outcome: front page, feed, and the archive pages that
    changed, then the tags' pages asked for (after the front page: they never hold
    it back). False when a rebuild it ran stopped at its budget (`rebuild`), or tags'
    pages are left for the next pass (`write_tag_pages`; `busy`: see there)."""
    changed, inserted = settle(state)
    if state.rebuild:
        return rebuild(site, state, time_left=time_left, changed=changed, busy=busy)
    old_count, count = state.count, state.count + len(inserted)
    entries = selectors.listed_entries(changed)
    positions = positions_of(entries, inserted=inserted, total=count)
    if any(not 0 <= position < count for position in positions.values()):
        logger.warning("the site's article count (%s) is out of date; rebuilding", count)
        state.shifted = True
        return rebuild(site, state, time_left=time_left, changed=changed, busy=busy)
    shifted = [positions[article_id] for article_id in inserted if article_id in positions]
    pages = pages_to_write(
        old_count=old_count,
        new_count=count,
        changed=positions.values(),
        shifted_from=min(shifted, default=None),
    )
    for page, page_entries in selectors.entries_pages(pages, size=PAGE_SIZE, total=count):
        write_archive_page(site, page, page_entries, count=count, write=atomic_write)
    newest = selectors.newest(PAGE_SIZE)
    write_feeds(site, write=atomic_write)
    write_partial_chunk(site, newest, count=count, write=atomic_write)
    if sitemap_chunks(count) != sitemap_chunks(old_count) or not old_count:
        # (not old_count: an index an earlier release wrote for an empty site, naming none)
        atomic_write(site, paths.SITEMAP, documents.sitemap_index(sitemap_chunks(count)))
    if not site.exists(paths.NOT_FOUND):  # a site before these, until its next rebuild
        write_site_files(site, write=atomic_write)
    write_front_page(site, newest, count=count, write=atomic_write)
    state.count = count
    return write_tag_pages(site, write=atomic_write, time_left=time_left, busy=busy)


# The keys a pass reads at most to place its changed articles near the top at once
# (`positions_of`): a burst's groups list its articles newest first, each group below
# the last, so its later passes place them up to a burst's length from the top.
NEAR_TOP_KEYS = 10_000


def positions_of(entries: dict[int, Entry], *, inserted: list[int], total: int) -> dict[int, int]:
    """The positions of the changed entries on a site of `total`. When there are several,
    or the one is newly listed, and they all lie within the newest NEAR_TOP_KEYS (a
    burst's groups: its first at the top, the later ones below it), the keys down to
    the oldest of them are read once and each is placed among them: one query for them
    all. Otherwise (an edited article, or deeper) each is located by counting
    (selectors.position_of)."""

    def key(entry: Entry) -> tuple:
        return (entry.publish_at, entry.id)

    if len(entries) > 1 or (entries and set(entries) <= set(inserted)):
        oldest = min(entries.values(), key=key)
        keys = selectors.keys_down_to(oldest, limit=NEAR_TOP_KEYS)
        if keys is not None:
            ascending = keys[::-1]
            return {
                article_id: total - len(ascending) + bisect.bisect_left(ascending, key(entry))
                for article_id, entry in entries.items()
            }
    return {
        article_id: selectors.position_of(entry, total=total)
        for article_id, entry in entries.items()
    }


def rebuild(
    site: Site,
    state: SiteState,
    *,
    time_left: TimeLeft = None,
    resume: bool = True,
    changed: Iterable[int] = (),
    busy: bool = False,
) -> bool:
    """Every view from the database; documents that did not change are left alone
    (write_if_changed). The front page, the feed and the sitemap index first, so they
    list what was just published however large the archive; then the tags' pages asked
    for (`write_tag_pages`; `busy`: see there); then the archive pages, oldest first,
    from where the last pass stopped (`REBUILD_CHECKPOINT`; `resume`).

    Stops after a page once `time_left()` is spent, with the checkpoint saved in the
    pass's transaction and the rebuild still due: False. The next pass writes the
    front page and feed again and carries on from there. True once every page is
    written (the site's end removed, the checkpoint cleared) and no tag's pages are
    left for the next pass (`write_tag_pages`). `changed`: articles
    whose entry changed, settled by the caller (`update`)."""
    changed = [*changed, *settle(state)[0]]
    count = selectors.count_listed()
    newest = selectors.newest(PAGE_SIZE)
    write_feeds(site, write=write_if_changed)
    write_partial_chunk(site, newest, count=count, write=write_if_changed)
    write_if_changed(site, paths.SITEMAP, documents.sitemap_index(sitemap_chunks(count)))
    write_site_files(site, write=write_if_changed)
    write_front_page(site, newest, count=count, write=write_if_changed)
    state.count = count
    tags_done = write_tag_pages(site, write=write_if_changed, time_left=time_left, busy=busy)
    mark = _resume_at(site, state, changed, count=count) if resume else None
    if not _write_archive(site, count=count, mark=mark, time_left=time_left):
        state.rebuild = True
        return False
    remove_beyond(site, pages=full_pages(count), chunks=sitemap_chunks(count))
    checkpoint_clear(REBUILD_CHECKPOINT)
    state.rebuild = state.shifted = False
    return tags_done


def _key(mark: dict) -> tuple[datetime, int]:
    return datetime.fromisoformat(mark["publish_at"]), mark["id"]


def _resume_at(site: Site, state: SiteState, changed: list[int], *, count: int) -> dict | None:
    """The checkpoint, if the pages it says are written still hold: no listed article
    left or moved since (`state.shifted`), and exactly `page` × PAGE_SIZE articles up
    to its key. An article changed in place below it has its page written again here."""
    mark = checkpoint_read(REBUILD_CHECKPOINT)
    if not mark or state.shifted:
        return None
    key = _key(mark)
    if selectors.count_up_to(key) != mark["page"] * PAGE_SIZE:
        return None
    below = {
        page_of(selectors.count_up_to((entry.publish_at, entry.id)) - 1)
        for entry in selectors.listed_entries(changed).values()
        if (entry.publish_at, entry.id) <= key
    }
    for page, entries in selectors.entries_pages(below, size=PAGE_SIZE, total=count):
        write_archive_page(site, page, entries, count=count, write=write_if_changed)
    return mark


def _write_archive(site: Site, *, count: int, mark: dict | None, time_left: TimeLeft) -> bool:
    """The full archive pages after `mark` (all of them without), oldest first; False
    when the budget ran out first (the checkpoint then says where to resume)."""
    page = mark["page"] if mark else 0
    batch: list[Entry] = []
    for entry in selectors.iter_oldest_first(after=_key(mark) if mark else None):
        batch.append(entry)
        if len(batch) < PAGE_SIZE:
            continue
        page += 1
        write_archive_page(site, page, batch[::-1], count=count, write=write_if_changed)
        last, batch = batch[-1], []
        if time_left is not None and time_left() <= 0 and page < full_pages(count):
            position = {"page": page, "publish_at": last.publish_at.isoformat(), "id": last.id}
            checkpoint_save(REBUILD_CHECKPOINT, position)
            logger.info(
                "shared views: the rebuild stopped at its budget after archive page %d of %d; "
                "the next pass resumes there",
                page,
                full_pages(count),
            )
            return False
    return True


def remove_beyond(site: Site, *, pages: int, chunks: int) -> None:
    """Archive pages and sitemap chunks past the end, after the site shrank. Never
    through a link: a link at `page/` stops the pass (blogpublish.files)."""
    for name in site.names(paths.ARCHIVE_DIR):
        if name.isdigit() and int(name) > pages:
            site.delete_tree(f"{paths.ARCHIVE_DIR}/{name}")
    for name in site.names():
        match = paths.SITEMAP_CHUNK_RE.match(name)
        if match and int(match[1]) > chunks:
            site.delete(name)
