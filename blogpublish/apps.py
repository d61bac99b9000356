from __future__ import annotations

from django.apps import AppConfig


class BlogpublishConfig(AppConfig):
    name = "blogpublish"
    verbose_name = "Blog"
