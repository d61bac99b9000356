"""The writer's desk on the article's admin page (issue 12).

`publishing.admin.ArticleAdmin` is the pipeline's screen and knows no HTML; this
subclass, registered in its place, adds what renders: the life sentence with its live
link and Requeue and Withdraw buttons, the preview, image uploads and the Markdown help
(docs/writing.md). The drafts' page (desk/drafts.py, issue 22) is registered here too.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponseRedirect, JsonResponse
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from django.utils import timezone
from django.utils.decorators import method_decorator
from django.utils.html import format_html, format_html_join
from django.views.decorators.http import require_POST

from blogpublish.desk import drafts, images
from blogpublish.desk.life import life_of
from blogpublish.desk.limits import PreviewRefused
from blogpublish.desk.preview import guarded_preview_of
from blogpublish.site.paths import article_url
from publishing.admin import ArticleAdmin
from publishing.models import Article, ArticleStatus, Story
from publishing.services import article_requeue
from work.admin import BadLookupsAreBadLinks

logger = logging.getLogger(__name__)
method_post = method_decorator(require_POST)

LIFE_COLOURS = {
    "live": "#2e7d32",
    "scheduled": "#3465a4",
    "publishing": "#b26b00",
    "dead": "#c62828",
}


class DeskArticleAdmin(ArticleAdmin):
    change_form_template = "blogpublish/desk/change_form.html"
    list_display = (*ArticleAdmin.list_display, "view_link")
    readonly_fields = ("life", *ArticleAdmin.readonly_fields)

    class Media:
        css = {"all": ["blogpublish/desk/desk.css"]}
        js = ["blogpublish/desk/desk.js"]

    def get_fieldsets(self, request: HttpRequest, obj: Article | None = None):
        fieldsets = super().get_fieldsets(request, obj)
        if obj is None:
            return fieldsets
        return (("At a glance", {"fields": ("life",)}), *fieldsets)

    def get_ordering(self, request: HttpRequest):
        # The scheduled articles in calendar order: the next to go out first.
        if request.GET.get("state") == "scheduled":
            return ("publish_at", "id")
        return super().get_ordering(request)

    def get_urls(self):
        view = self.admin_site.admin_view
        return [
            path("preview/", view(self.preview_view), name="publishing_article_preview"),
            path("image/", view(self.image_view), name="publishing_article_image"),
            path(
                "<int:object_id>/requeue/",
                view(self.requeue_view),
                name="publishing_article_requeue",
            ),
            path(
                "<int:object_id>/withdraw/",
                view(self.withdraw_view),
                name="publishing_article_withdraw",
            ),
            *super().get_urls(),
        ]

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        context.update(drafts.desk_context(request))
        return super().render_change_form(request, context, add, change, form_url, obj)

    # --- the article's life -------------------------------------------------------------

    @admin.display(description="state")
    def life(self, obj: Article) -> str:
        life = life_of(obj, now=timezone.now(), max_attempts=settings.PUBLISH_MAX_ATTEMPTS)
        html = format_html(
            '<span class="desk-life" data-kind="{}" style="color:{}">{}</span>',
            life.kind,
            LIFE_COLOURS[life.kind],
            life.text,
        )
        if obj.published_hash and obj.published_slug:
            html += format_html(
                ' · <a class="desk-live-link" href="{}" target="_blank" rel="noopener">'
                "View the live page</a>",
                article_url(obj.published_slug),
            )
            former = sorted(obj.former_addresses.values_list("slug", flat=True))
            if former:  # docs/site.md, "Former addresses"
                html += format_html(
                    ' · <span class="desk-former">Old addresses sending readers here: {}</span>',
                    format_html_join(", ", "<code>{}</code>", ((slug,) for slug in former)),
                )
        if obj.published_hash:
            html += format_html(
                ' <button type="submit" class="button desk-withdraw" form="{}">'
                "Withdraw (back to draft)</button>",
                "desk-withdraw-form",
            )
        if obj.status == ArticleStatus.DEAD:
            # The button of a form of its own, outside the article's form (forms cannot
            # nest; desk/change_form.html): unsaved edits of the article are not sent.
            html += format_html(
                ' <button type="submit" class="button desk-requeue" form="{}">Requeue</button>',
                "desk-requeue-form",
            )
        return html

    @admin.display(description="page")
    def view_link(self, obj: Article) -> str:
        if not (obj.published_hash and obj.published_slug):
            return "–"
        return format_html(
            '<a href="{}" target="_blank" rel="noopener">View</a>', article_url(obj.published_slug)
        )

    # --- views ---------------------------------------------------------------------------

    def _check_writer(self, request: HttpRequest) -> None:
        """The preview and the image upload: the article's form and the story's page (the
        same desk) use them, so a writer of drafts only may too (a review's finding: the
        stories' permissions, which saving drafts needs, got a 403 here)."""
        user = request.user
        if not (
            self.has_change_permission(request)
            or user.has_perm("publishing.add_story")
            or user.has_perm("publishing.change_story")
        ):
            raise PermissionDenied

    @method_post
    def requeue_view(self, request: HttpRequest, object_id: int) -> HttpResponseRedirect:
        if not self.has_change_permission(request):
            raise PermissionDenied
        article = get_object_or_404(Article, pk=object_id)
        if article_requeue(article_id=article.pk):
            self.message_user(request, "Requeued: it will be published again.", messages.SUCCESS)
        else:
            self.message_user(request, "It was not dead; nothing to requeue.", messages.WARNING)
        return HttpResponseRedirect(reverse("admin:publishing_article_change", args=[article.pk]))

    @method_post
    def withdraw_view(self, request: HttpRequest, object_id: int) -> HttpResponseRedirect:
        return drafts.withdraw(self, request, object_id)

    @method_post
    def preview_view(self, request: HttpRequest) -> JsonResponse:
        """The page as the site would render the form's text; reads and writes no row."""
        self._check_writer(request)
        try:
            preview = guarded_preview_of(request)
        except PreviewRefused as exc:
            response = JsonResponse({"error": str(exc)}, status=429)
            response["Retry-After"] = str(exc.retry_after)
        except DatabaseError:  # the limits cannot be counted: closed, not open
            logger.exception("the preview's limits could not be read")
            message = "The preview is unavailable: its limits cannot be read from the database."
            response = JsonResponse({"error": message}, status=503)
            response["Retry-After"] = "5"
        else:
            response = JsonResponse({"html": preview.html, "problems": preview.problems})
        response["Cache-Control"] = "no-store"
        return response

    @method_post
    def image_view(self, request: HttpRequest) -> JsonResponse:
        """Store an uploaded image; the Markdown that shows it, or why it was refused."""
        self._check_writer(request)
        upload = request.FILES.get("image")
        if upload is None:
            return JsonResponse({"error": "Choose an image file to upload."}, status=400)
        size = upload.size or 0  # None only for a file not uploaded; images.check counts too
        if size > images.IMAGE_MAX_BYTES:
            return JsonResponse(
                {
                    "error": f"“{upload.name}” is {size / 2**20:.1f} MiB; "
                    "an image may be at most 10 MiB."
                },
                status=400,
            )
        try:
            stored = images.store(
                upload.read(), name=upload.name or "", content_type=upload.content_type or ""
            )
        except images.ImageRefused as exc:
            return JsonResponse({"error": str(exc)}, status=400)
        except images.ImageBusy as exc:
            busy = JsonResponse({"error": str(exc)}, status=503)
            busy["Retry-After"] = "5"
            return busy
        except Exception:  # a decoder or encoder failing on a file it accepted: a bug
            logger.exception("the image %r could not be stored", upload.name)
            return JsonResponse(
                {
                    "error": f"“{upload.name}” could not be added: the server failed while "
                    "cleaning it or making its copies (in its log). Nothing was stored."
                },
                status=500,
            )
        return JsonResponse(
            {"markdown": stored.markdown, "href": stored.href, "path": stored.path}, status=201
        )


admin.site.unregister(Article)
admin.site.register(Article, DeskArticleAdmin)
admin.site.register(Story, drafts.StoryAdmin)


def _bad_lookups_are_bad_links(model) -> None:
    """Django's own lists (users, groups) answer a filter the database cannot run as the
    project's do (work.admin.BadLookupsAreBadLinks): `?date_joined__year=99999` was a
    500 on the users' list. The admin registered for `model` (django.contrib.auth's,
    or a project's own user admin) is kept, with the mixin put before it."""
    if not admin.site.is_registered(model):
        return
    registered = type(admin.site.get_model_admin(model))
    if issubclass(registered, BadLookupsAreBadLinks):
        return
    admin.site.unregister(model)
    admin.site.register(model, type(registered.__name__, (BadLookupsAreBadLinks, registered), {}))


for _model in (get_user_model(), Group):
    _bad_lookups_are_bad_links(_model)
