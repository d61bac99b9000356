"""Drafts on the desk (issue 22): the story's admin page and its views.

"Save" keeps the draft and publishes nothing; "Save and publish" makes the draft the
article's content (publishing.services.stories), which the pipeline publishes as any
save. The page shows the story's history: any two versions diffed, an old one
restored as the draft. Publishing and withdrawing need `change_article`, the
permission that changes what readers see.
"""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import NON_FIELD_ERRORS, PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.decorators import method_decorator
from django.utils.html import format_html, format_html_join
from django.views.decorators.http import require_POST

from blogpublish.desk import cheatsheet, images
from blogpublish.site.paths import article_url
from publishing.exceptions import StoryConflict
from publishing.models import Article, Revision, Story, StoryState
from publishing.services import (
    revision_diff,
    story_publish,
    story_restore,
    story_save,
    story_withdraw,
)

method_post = method_decorator(require_POST)
PUBLISH_PERMISSION = "publishing.change_article"


def can_publish(request: HttpRequest) -> bool:
    return request.user.has_perm(PUBLISH_PERMISSION)


def desk_context(request: HttpRequest) -> dict:
    """What the desk's template needs, on the article's page and a story's."""
    return {
        "desk_preview_url": reverse("admin:publishing_article_preview"),
        "desk_image_url": reverse("admin:publishing_article_image"),
        "desk_supported": cheatsheet.SUPPORTED,
        "desk_removed": cheatsheet.REMOVED,
        "desk_image_max_mib": images.IMAGE_MAX_BYTES // 2**20,
        "desk_images_self_only": settings.SITE_IMAGES_SELF_ONLY,
        "desk_can_publish": can_publish(request),
    }


class StoryForm(forms.ModelForm):
    """The draft's fields; its clean() saves through `story_save` (and publishes when
    asked), so that a refusal, or a newer version saved in another tab, is an error
    on this form with the writer's text still in it."""

    # The version this form was opened at: a save over a newer one is refused.
    base_version = forms.IntegerField(widget=forms.HiddenInput, required=False)
    saved_by = ""
    publish = False

    class Meta:
        model = Story
        fields = ("title", "slug", "body", "publish_at")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["base_version"].initial = self.instance.version
        self.saved: Story | None = None

    def clean(self):
        cleaned = super().clean()
        if self.errors:
            return cleaned
        existing = self.instance.pk is not None and not self.instance._state.adding
        try:
            self.saved = story_save(
                story_id=self.instance.pk if existing else None,
                title=cleaned["title"],
                body=cleaned.get("body") or "",
                slug=cleaned.get("slug") or "",
                publish_at=cleaned.get("publish_at"),
                saved_by=self.saved_by,
                if_version=cleaned.get("base_version") if existing else None,
            )
            if self.publish:
                story_publish(story_id=self.saved.pk)
        except StoryConflict as exc:
            raise ValidationError(
                f"This draft was saved elsewhere (another tab or writer) since you opened "
                f"it: it is at version {exc.current}, this form at {exc.given}. Copy your "
                "text, reload the page, and merge."
            ) from exc
        except ValidationError as exc:
            self._add_errors(exc)
        return cleaned

    def _add_errors(self, exc: ValidationError) -> None:
        if not hasattr(exc, "error_dict"):
            self.add_error(None, exc)
            return
        for field, errors in exc.message_dict.items():
            self.add_error(field if field in self.fields else NON_FIELD_ERRORS, errors)


class StoryAdmin(admin.ModelAdmin):
    form = StoryForm
    change_form_template = "blogpublish/desk/story_change_form.html"
    list_display = ("title", "state", "changes", "slug", "version", "updated_at")
    list_filter = ("state",)
    search_fields = ("title", "slug")
    readonly_fields = ("life", "history")

    class Media:
        css = {"all": ["blogpublish/desk/desk.css"]}
        js = ["blogpublish/desk/desk.js"]

    def get_fieldsets(self, request: HttpRequest, obj: Story | None = None):
        fields = (None, {"fields": ("title", "slug", "body", "publish_at", "base_version")})
        if obj is None:
            return (fields,)
        return (
            ("At a glance", {"fields": ("life",)}),
            fields,
            ("History", {"fields": ("history",)}),
        )

    def get_form(self, request: HttpRequest, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        publish = request.method == "POST" and "_publish" in request.POST
        attrs = {"saved_by": request.user.get_username(), "publish": publish}
        return type(form.__name__, (form,), attrs)

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        if request.method == "POST" and "_publish" in request.POST and not can_publish(request):
            raise PermissionDenied
        return super().changeform_view(request, object_id, form_url, extra_context)

    def save_model(self, request: HttpRequest, obj: Story, form, change: bool) -> None:
        """Saved already, by the form's clean() (in this request's transaction)."""
        saved = Story.objects.get(pk=form.saved.pk)
        for field in Story._meta.concrete_fields:
            setattr(obj, field.attname, getattr(saved, field.attname))
        obj._state.adding, obj._state.db = False, saved._state.db
        if form.publish:
            self.message_user(
                request,
                "Published: it goes live as soon as a worker takes it.",
                messages.SUCCESS,
            )

    def get_urls(self):
        view = self.admin_site.admin_view
        return [
            path("<int:object_id>/diff/", view(self.diff_view), name="publishing_story_diff"),
            path(
                "<int:object_id>/restore/<int:number>/",
                view(self.restore_view),
                name="publishing_story_restore",
            ),
            path(
                "<int:object_id>/withdraw/",
                view(self.withdraw_view),
                name="publishing_story_withdraw",
            ),
            *super().get_urls(),
        ]

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        context.update(
            desk_context(request),
            desk_live=obj is not None and Article.objects.filter(pk=obj.pk).exists(),
        )
        return super().render_change_form(request, context, add, change, form_url, obj)

    # --- what the page shows -------------------------------------------------------------

    @admin.display(description="unpublished changes", boolean=True)
    def changes(self, obj: Story) -> bool:
        return obj.state == StoryState.PUBLISHED and obj.has_unpublished_changes

    @admin.display(description="state")
    def life(self, obj: Story) -> str:
        article = Article.objects.filter(pk=obj.pk).only("published_slug", "status").first()
        if article is None:
            text = "Draft: on no page." if obj.state == StoryState.DRAFT else "Not on the site."
            return format_html('<span class="desk-story-state">{}</span>', text)
        html = format_html(
            '<span class="desk-story-state">Published ({}){}</span>',
            article.status,
            "; this draft has changes not published yet" if obj.has_unpublished_changes else "",
        )
        if article.published_slug:
            html += format_html(
                ' · <a class="desk-live-link" href="{}" target="_blank" rel="noopener">'
                "View the live page</a>",
                article_url(article.published_slug),
            )
        return html

    @admin.display(description="versions")
    def history(self, obj: Story) -> str:
        revisions = list(obj.revisions.all()[:50])
        if not revisions:
            return "–"
        diff = reverse("admin:publishing_story_diff", args=[obj.pk])
        rows = format_html_join(
            "",
            "<tr><td>v{}</td><td>{}</td><td>{}</td><td>{}</td>"
            '<td><a href="{}?old={}">compare with the draft</a></td>'
            '<td><button type="submit" class="button desk-restore" form="desk-story-actions" '
            'formaction="{}">Restore</button></td></tr>',
            (
                (
                    r.number,
                    r.saved_at.strftime("%Y-%m-%d %H:%M:%S"),
                    r.saved_by or "–",
                    r.note,
                    diff,
                    r.number,
                    reverse("admin:publishing_story_restore", args=[obj.pk, r.number]),
                )
                for r in revisions
            ),
        )
        return format_html(
            '<table class="desk-history"><thead><tr><th>version</th><th>saved</th>'
            "<th>by</th><th>note</th><th></th><th></th></tr></thead><tbody>{}</tbody></table>",
            rows,
        )

    # --- views -----------------------------------------------------------------------------

    def diff_view(self, request: HttpRequest, object_id: int) -> TemplateResponse:
        story = get_object_or_404(Story, pk=object_id)
        if not self.has_view_or_change_permission(request, story):
            raise PermissionDenied
        numbers = list(story.revisions.values_list("number", flat=True))
        old, new = _version(story, request.GET.get("old")), _version(story, request.GET.get("new"))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "story": story,
            "title": f"Changes of “{story.title}”",
            "numbers": numbers,
            "old": old,
            "new": new,
            "lines": revision_diff(old, new),
        }
        return TemplateResponse(request, "blogpublish/desk/story_diff.html", context)

    @method_post
    def restore_view(self, request: HttpRequest, object_id: int, number: int):
        if not self.has_change_permission(request):
            raise PermissionDenied
        story = get_object_or_404(Story, pk=object_id)
        try:
            story_restore(story_id=story.pk, number=number, saved_by=request.user.get_username())
        except (Revision.DoesNotExist, ValidationError) as exc:
            self.message_user(request, f"Not restored: {_text(exc)}", messages.ERROR)
        else:
            self.message_user(
                request,
                f"Version {number} is the draft again; publish it to make it live.",
                messages.SUCCESS,
            )
        return HttpResponseRedirect(reverse("admin:publishing_story_change", args=[story.pk]))

    @method_post
    def withdraw_view(self, request: HttpRequest, object_id: int):
        return withdraw(self, request, object_id)


def withdraw(model_admin: admin.ModelAdmin, request: HttpRequest, article_id: int):
    """Take the article off the blog; the story's page afterwards (both admins' button)."""
    if not can_publish(request):
        raise PermissionDenied
    if not Article.objects.filter(pk=article_id).exists():
        model_admin.message_user(request, "It is not on the blog; nothing to withdraw.")
    else:
        story_withdraw(article_id=article_id, saved_by=request.user.get_username())
        model_admin.message_user(
            request,
            "Withdrawn: its page and listings are going; it is a draft again, at the same address.",
            messages.SUCCESS,
        )
    return HttpResponseRedirect(reverse("admin:publishing_story_change", args=[article_id]))


def _version(story: Story, number: str | None) -> Revision | Story:
    """Revision `number`, or the current draft when none (or no such) is asked for."""
    if number and number.isdigit():
        revision = story.revisions.filter(number=int(number)).first()
        if revision is not None:
            return revision
    return story


def _text(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(exc.messages)
    return "no such version"
