"""The static site under SITE_ROOT: one directory per article, `<slug>/index.html`."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.template.loader import render_to_string

from blogpublish.files import atomic_write, remove_tree
from blogpublish.rendering import render_markdown
from publishing.exceptions import TransientPublishError


def page_path(root: Path, slug: str) -> Path:
    path = (root / slug / "index.html").resolve()
    if path.parent.parent != root.resolve():  # the slug validators make this impossible
        raise ValueError(f"slug {slug!r} would leave SITE_ROOT")
    return path


def render_article_page(article) -> str:
    return render_to_string(
        "blogpublish/article.html",
        {
            "article": article,
            "body_html": render_markdown(article.body),
            "site_title": settings.SITE_TITLE,
        },
    )


class StaticSitePublisher:
    """Writes the article's page; idempotent (the same content gives the same file)."""

    def __init__(self, root: Path | None = None):
        self.root = Path(root or settings.SITE_ROOT)

    def publish(self, article) -> None:
        html = render_article_page(article)
        try:
            atomic_write(page_path(self.root, article.slug), html)
        except OSError as exc:  # disk full, permissions: may pass; retried, then dead
            raise TransientPublishError(f"writing the page failed: {exc}") from exc

    def unpublish(self, article) -> None:
        try:
            remove_tree(page_path(self.root, article.slug).parent)
        except OSError as exc:
            raise TransientPublishError(f"removing the page failed: {exc}") from exc
