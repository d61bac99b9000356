"""Is this installation whole? The checks of `manage.py restore_check` (docs/operations.md,
"Backups"): after a restore, and whenever an operator doubts the site.

- every listed article's page is present and is its live version, byte for byte as the
  site would write it now (but its related articles, which may be older: docs/site.md);
- every image an article names (`media/<sha256>.<ext>`) is in the site's storage;
- the article counts the database keeps (triggers) agree with the articles;
- the shared documents (front page, feed, sitemap) are present.

It reads and renders; it writes nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from django.db.models import Count, Sum

from blogpublish.desk import images
from blogpublish.site import documents, paths, selectors
from blogpublish.storage import SiteStorage
from publishing.models import Article, ArticleCount

SHARED_DOCUMENTS = ("index.html", "feed.xml", "feed.json", "sitemap.xml")


@dataclass
class CheckReport:
    pages: int = 0
    images: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def installation_check(site: SiteStorage) -> CheckReport:
    report = CheckReport()
    report.problems.extend(_page_problems(site, report))
    report.problems.extend(_image_problems(site, report))
    report.problems.extend(_count_problems(report))
    report.problems.extend(
        f"the shared document {name} is missing"
        for name in SHARED_DOCUMENTS
        if not site.exists(name)
    )
    return report


def _page_problems(site: SiteStorage, report: CheckReport) -> Iterator[str]:
    for live in selectors.live_versions(exclude_slugs=set()):
        report.pages += 1
        page = paths.page_file(live.slug)
        stored = site.read(page)
        if stored is None:
            yield f"article {live.id}: its page {page} is missing"
        elif documents.without_related(stored.decode("utf-8", "replace")) != (
            documents.without_related(documents.article_page(live))
        ):
            yield f"article {live.id}: its page {page} is not its live version"


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
