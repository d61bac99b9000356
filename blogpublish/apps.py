from __future__ import annotations

from django.apps import AppConfig


class BlogpublishConfig(AppConfig):
    name = "blogpublish"
    verbose_name = "Blog"

    def ready(self) -> None:
        from blogpublish import checks  # noqa: F401  (registers the system checks)
