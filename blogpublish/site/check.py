"""Is this installation whole? The checks of `manage.py restore_check` (docs/operations.md,
"Backups"): after a restore, and whenever an operator doubts the site.

- every listed article's page is present and is its live version, byte for byte as the
  site would write it now (but its related articles, which may be older: docs/site.md);
- every image an article names (`media/<sha256>.<ext>`) is in the site's storage;
- the article counts the database keeps (triggers) agree with the articles;
- the shared views (front page, feeds, archive pages, sitemap and its chunks, tag and
  author pages and feeds, robots.txt, the 404 page, the favicon) are each what a
  rebuild would write now, byte for byte, streamed one archive page at a time;
- nothing is served that no article or tag needs any more: a page directory, a tag's
  folder, an archive page or sitemap chunk past the end (a bucket restored over, a
  site folder newer than the dump: a withdrawn story still public).

It reads and renders; it writes nothing (an entry a view cannot show is logged, not
alerted). On a live site a publish since the refresher's last pass shows as a view
that differs until the next pass: check again.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from django.db.models import Count, Sum

from blogpublish.desk import images
from blogpublish.site import build, documents, paths, selectors
from blogpublish.site.look import page_look
from blogpublish.site.pagination import PAGE_SIZE, full_pages, sitemap_chunks
from blogpublish.storage import SiteStorage
from blogpublish.storage.base import payload
from publishing.models import Article, ArticleCount, Tag


@dataclass
class CheckReport:
    pages: int = 0
    images: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    # The listed articles whose page is there but not their live version.
    pages_differing: list[int] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def installation_check(site: SiteStorage) -> CheckReport:
    report = CheckReport()
    report.problems.extend(_page_problems(site, report))
    report.problems.extend(_image_problems(site, report))
    report.problems.extend(_count_problems(report))
    report.problems.extend(_view_problems(site))
    report.problems.extend(_unneeded_problems(site))
    return report


def _page_problems(site: SiteStorage, report: CheckReport) -> Iterator[str]:
    for live in selectors.live_versions(exclude_slugs=set()):
        report.pages += 1
        page = paths.page_file(live.slug)
        stored = site.read(page)
        if stored is None:
            yield f"article {live.id}: its page {page} is missing"
        elif documents.without_related(stored.decode("utf-8", "replace")) != (
            documents.without_related(expected := documents.article_page(live))
        ):
            why = _differs_by(stored, expected.encode())
            report.pages_differing.append(live.id)
            yield f"article {live.id}: its page {page} is not its live version ({why})"


def _differs_by(stored: bytes, expected: bytes) -> str:
    """What the marks in a page's head say about how it differs from what the site
    would write now (for the operator, and a failing test's message)."""
    marks = (
        ("content", documents.page_content_hash),
        ("look", page_look),
        ("previous and next links", documents.page_neighbours_mark),
    )
    for name, read in marks:
        if read(stored) != read(expected):
            return f"its {name} mark differs: {read(stored)} instead of {read(expected)}"
    return "its marks agree; the text differs"


def _image_problems(site: SiteStorage, report: CheckReport) -> Iterator[str]:
    for rel in sorted(images.used_paths()):
        report.images += 1
        if not site.exists(rel):
            yield f"the image {rel} is named by an article and missing"


def _count_problems(report: CheckReport) -> Iterator[str]:
    real = dict(Article.objects.values_list("status").annotate(n=Count("id")).order_by())
    kept = dict(ArticleCount.objects.values_list("status").annotate(n=Sum("n")).order_by())
    report.counts = real
    for status in sorted(set(real) | set(kept)):
        if real.get(status, 0) != (kept.get(status) or 0):
            yield (
                f"{kept.get(status) or 0} articles counted {status}, "
                f"{real.get(status, 0)} in the table"
            )


def _view_problems(site: SiteStorage) -> list[str]:
    """Each shared view compared with what `build.rebuild` would write now."""
    found: list[str] = []

    def compare(_site: object, rel: str, data: str | bytes) -> None:
        stored = site.read(rel)
        if stored is None:
            found.append(f"the shared document {rel} is missing")
        elif stored != payload(data):
            found.append(f"the shared document {rel} is not as the database has it")

    def past_end(_site: object, rel: str) -> None:
        # A check writes nothing: it removed these (a review's finding).
        found.append(f"the archive page {rel}/ is past the end")

    quiet = documents.log_problem
    count = selectors.count_listed()
    newest = selectors.newest(PAGE_SIZE)
    build.write_feeds(site, write=compare, report=quiet)
    build.write_partial_chunk(site, newest, count=count, write=compare, report=quiet)
    compare(site, paths.SITEMAP, documents.sitemap_index(sitemap_chunks(count)))
    build.write_site_files(site, write=compare)
    build.write_front_page(site, newest, count=count, write=compare, report=quiet)
    page, batch = 0, []
    for entry in selectors.iter_oldest_first():
        batch.append(entry)
        if len(batch) == PAGE_SIZE:
            page += 1
            build.write_archive_page(
                site, page, batch[::-1], count=count, write=compare, report=quiet
            )
            batch = []
    ids = selectors.tags_in_use().values()
    for tag in Tag.objects.filter(pk__in=ids).order_by("id").values("id", "kind", "name", "slug"):
        build.write_tag(
            site, dict(tag), write=compare, report=quiet, archive_write=compare, remove=past_end
        )
    return found


def _unneeded_problems(site: SiteStorage) -> Iterator[str]:
    """What is served and no article or tag needs: what the full check removes. The
    site is listed before the database is read: a page is written only once its row
    (and a tag's folder once its rows) committed, so one published between the two
    reads is listed and found needed, not reported (a review's finding)."""
    present = sorted(site.page_dirs())
    folders = {kind: site.names(folder) for kind, folder in paths.TERM_DIRS.items()}
    archive, top = site.names(paths.ARCHIVE_DIR), site.names()
    owned, targets = selectors.owned_slugs(), selectors.moved_targets()
    for name in present:
        if paths.is_article_dir_name(name) and name not in owned and name not in targets:
            yield f"the page {name}/ is served and no article has it"
    for slug in sorted(set(targets) - owned):
        stored = site.read(paths.page_file(slug))
        if stored != payload(documents.moved_page(targets[slug])):
            yield f"the former address {slug}/ does not send readers on to {targets[slug]}/"
    in_use = selectors.tags_in_use()
    for kind, folder in paths.TERM_DIRS.items():
        for name in folders[kind]:
            if not name.startswith(".") and (kind, name) not in in_use:
                yield f"the folder {folder}/{name}/ is served and no {kind} has it"
    count = selectors.count_listed()
    for name in archive:
        if name.isdigit() and int(name) > full_pages(count):
            yield f"the archive page {paths.ARCHIVE_DIR}/{name}/ is past the end"
    for name in top:
        match = paths.SITEMAP_CHUNK_RE.match(name)
        if match and int(match[1]) > sitemap_chunks(count):
            yield f"the sitemap chunk {name} is past the end"
