from __future__ import annotations

from django.apps import AppConfig
from django.db.models.signals import post_delete, post_migrate, post_save


class PublishingConfig(AppConfig):
    name = "publishing"
    verbose_name = "Publishing"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from publishing import checks  # noqa: F401  (registers the system checks)
        from publishing.counts import repair_after_migrate
        from publishing.models import Article
        from publishing.signals import article_deleted, article_saved

        post_save.connect(article_saved, sender=Article, dispatch_uid="publishing.article_saved")
        post_delete.connect(
            article_deleted, sender=Article, dispatch_uid="publishing.article_deleted"
        )
        # The kept article counts are recounted if a flush left them impossible.
        post_migrate.connect(
            repair_after_migrate, sender=self, dispatch_uid="publishing.article_counts"
        )
