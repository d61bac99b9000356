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
from django.db import transaction
from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    HttpResponseRedirect,
    JsonResponse,
)
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.decorators import method_decorator
from django.utils.html import format_html, format_html_join
from django.views.decorators.http import require_POST

from blogpublish.desk import cheatsheet, images
from blogpublish.desk.life import Life, life_of
from blogpublish.site.paths import absolute, article_url
from publishing import selectors as publishing_selectors
from publishing.admin import NO_BASE, warn_of_a_moved_address
from publishing.exceptions import NotOnTheBlog, StoryConflict
from publishing.forms import TagsField
from publishing.models import DRAFT_FIELDS, Article, Revision, Story, StoryState
from publishing.services import (
    DIFF_MAX_LINES,
    body_lines,
    diff_too_large,
    revision_diff,
    stories_purge,
    story_delete,
    story_preview_token,
    story_publish,
    story_restore,
    story_save,
    story_share,
    story_unshare,
    story_untrash,
    story_withdraw,
)
from work.admin import BadLookupsAreBadLinks, ListsWithout

method_post = method_decorator(require_POST)
PUBLISH_PERMISSION = "publishing.change_article"
# Tags the tags field completes from (the most used; GET /api/tags has the rest).
DESK_TAGS = 500
DELETE_PERMISSION = "publishing.delete_article"


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
        # The Article add page's "Save as draft" posts to the story's add page.
        # Adding a draft, and then its own page (the save's redirect, the autosave's):
        # with add_story alone the draft was saved and the writer met a 403 (a review's).
        "desk_can_draft": request.user.has_perms(
            ["publishing.add_story", "publishing.change_story"]
        ),
        # The tags in use, most used first: the tags field completes from them (desk.js).
        "desk_tags": [name for name, _count in publishing_selectors.tags_in_use(limit=DESK_TAGS)],
    }


class StoryForm(forms.ModelForm):
    """The draft's fields; once they are valid, the form saves through `story_save` (and
    publishes when asked), so that a refusal, or a newer version saved in another tab,
    is an error on this form with the writer's text still in it."""

    # The version this form was opened at: a save over a newer one is refused.
    base_version = forms.IntegerField(widget=forms.HiddenInput, required=False)
    saved_by = ""
    publish = False
    autosave = False  # the desk's, as the writer types: folded (stories.AUTOSAVE_FOLD_SECONDS)

    class Meta:
        model = Story
        fields = DRAFT_FIELDS
        field_classes = {"tags": TagsField}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["base_version"].initial = self.instance.version
        body = self.fields.get("body")
        if isinstance(body, forms.CharField):
            # As typed: the form's strip would take the first line's indentation (an
            # indented code block); the model drops only what it may (normalize_body).
            body.strip = False
        self.saved: Story | None = None

    def clean(self):
        super().clean()
        cleaned = self.cleaned_data
        if self.errors:
            return cleaned
        existing = self.instance.pk is not None and not self.instance._state.adding
        if existing and cleaned.get("base_version") is None:
            # Without it no save could be checked against a newer version (a review's
            # finding: a post without it undid another writer's edit).
            raise ValidationError(NO_BASE, code="stale")
        return cleaned

    def full_clean(self):
        """The checks, then the save (and the publish) once all have passed: the model's
        own too, which ModelForm runs after clean(). Saved in clean(), a draft the model
        then refused was stored and published under the refusal's error (a review's
        finding: a byline with a tab)."""
        super().full_clean()
        if not self.is_bound or self.errors:
            return
        existing = self.instance.pk is not None and not self.instance._state.adding
        try:
            # One savepoint: a publish refused (an empty body, which a draft may have)
            # takes its save back with it, so the form shows the refusal over the text
            # as it was posted, its version unchanged. Saved first, a refused "Save and
            # publish" on the add page left a draft holding the address and the retry
            # went live at `<slug>-2`; on a draft's page the next save was "saved
            # elsewhere" (a review's finding).
            with transaction.atomic():
                self.saved = self._save_and_publish(self.cleaned_data, existing=existing)
        except StoryConflict as exc:
            self.add_error(
                None,
                ValidationError(
                    f"This draft was saved elsewhere (another tab or writer) since you "
                    f"opened it: it is at version {exc.current}, this form at {exc.given}. "
                    "Copy your text, reload the page, and merge.",
                    code="conflict",
                ),
            )
        except ValidationError as exc:
            self._add_errors(exc)

    def _save_and_publish(self, cleaned: dict, *, existing: bool) -> Story:
        saved = story_save(
            story_id=self.instance.pk if existing else None,
            title=cleaned["title"],
            body=cleaned.get("body") or "",
            slug=cleaned.get("slug") or "",
            publish_at=cleaned.get("publish_at"),
            description=cleaned.get("description") or "",
            language=cleaned.get("language") or "",
            byline=cleaned.get("byline") or "",
            tags=cleaned.get("tags") or [],
            saved_by=self.saved_by,
            if_version=cleaned.get("base_version") if existing else None,
            autosave=self.autosave,
        )
        if self.publish:
            story_publish(story_id=saved.pk)
        return saved

    def _add_errors(self, exc: ValidationError) -> None:
        if not hasattr(exc, "error_dict"):
            self.add_error(None, exc)
            return
        for field, errors in exc.message_dict.items():
            self.add_error(field if field in self.fields else NON_FIELD_ERRORS, errors)


class ShelfFilter(admin.SimpleListFilter):
    """Drafts, published stories, or the trash; without a choice, all but the trash."""

    title = "state"
    parameter_name = "state"

    def lookups(self, request, model_admin):
        return [("draft", "Drafts"), ("published", "Published"), ("trash", "Trash")]

    def queryset(self, request, queryset):
        value = self.value()
        if value == "trash":
            return queryset.filter(trashed_at__isnull=False)
        queryset = queryset.filter(trashed_at__isnull=True)
        if value in {StoryState.DRAFT, StoryState.PUBLISHED}:
            return queryset.filter(state=value)
        return queryset


class StoryAdmin(ListsWithout, BadLookupsAreBadLinks):
    form = StoryForm
    list_deferred = ("body", "publish_log")  # the text, 1 MiB, and earlier attempts
    change_form_template = "blogpublish/desk/story_change_form.html"
    list_display = ("title", "state", "changes", "slug", "version", "updated_at")
    list_filter = (ShelfFilter,)
    actions = ("untrash", "purge")
    search_fields = ("title", "slug")
    readonly_fields = ("life", "sharing", "history", "publications")

    class Media:
        css = {"all": ["blogpublish/desk/desk.css"]}
        js = ["blogpublish/desk/desk.js"]

    def get_fieldsets(self, request: HttpRequest, obj: Story | None = None):
        fields = (None, {"fields": ("title", "slug", "body", "publish_at", "base_version")})
        readers = ("For readers", {"fields": ("description", "byline", "tags", "language")})
        if obj is None:
            return (fields, readers)
        return (
            ("At a glance", {"fields": ("life", "sharing")}),
            fields,
            readers,
            ("History", {"fields": ("history", "publications")}),
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
            self.message_user(request, _published(saved.pk), messages.SUCCESS)
            warn_of_a_moved_address(self, request, saved.pk)

    def has_delete_permission(self, request: HttpRequest, obj: Story | None = None) -> bool:
        """A story on the blog goes to the trash with its article, a delete of what
        readers see: that needs `delete_article` too, as the Article list's delete does.
        (Per story: the admin's bulk delete asks for each one it would delete.)"""
        if not super().has_delete_permission(request, obj):
            return False
        if obj is None or request.user.has_perm(DELETE_PERMISSION):
            return True
        return not Article.objects.filter(pk=obj.pk).exists()

    def delete_model(self, request: HttpRequest, obj: Story) -> None:
        """A delete moves the story to the trash (docs/writing.md); one of a story in the
        trash deletes it for good, as "Delete forever" does (it did nothing, and said
        "deleted successfully": a review's finding)."""
        story_delete(story_id=obj.pk)

    def delete_queryset(self, request: HttpRequest, queryset) -> None:
        for pk in queryset.values_list("pk", flat=True):
            story_delete(story_id=pk)

    @admin.action(description="Restore from the trash (as drafts)", permissions=["change"])
    def untrash(self, request: HttpRequest, queryset) -> None:
        """Says how many it restored: "Restored as drafts." was said of none too (a
        selection with none in the trash, or restored by someone else meanwhile)."""
        restored = not_in_trash = 0
        for pk in queryset.values_list("pk", flat=True):
            try:
                done = story_untrash(story_id=pk)
            except Story.DoesNotExist:  # deleted for good meanwhile (a 500: a review's finding)
                self.message_user(
                    request, f"Story {pk} was deleted for good meanwhile.", messages.WARNING
                )
                continue
            if done is None:
                not_in_trash += 1
                continue
            restored += 1
            story, renamed = done
            if renamed:
                self.message_user(
                    request,
                    f"“{story.title}” is back at /{story.slug}/: its old address was taken.",
                    messages.WARNING,
                )
        if not_in_trash:
            self.message_user(
                request,
                f"{not_in_trash} story(ies) not in the trash (restored meanwhile, or never "
                "in it): nothing to restore.",
                messages.WARNING,
            )
        if restored:
            self.message_user(
                request, f"{restored} story(ies) restored as drafts.", messages.SUCCESS
            )
        else:
            self.message_user(request, "No story was restored.", messages.WARNING)

    @admin.action(description="Delete forever (only what is in the trash)", permissions=["delete"])
    def purge(self, request: HttpRequest, queryset) -> None:
        count = stories_purge(story_ids=queryset.values_list("pk", flat=True))
        self.message_user(request, f"{count} story(ies) deleted for good.", messages.SUCCESS)

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
            path("autosave/", view(self.autosave_view), name="publishing_story_autosave"),
            path("<int:object_id>/share/", view(self.share_view), name="publishing_story_share"),
            path(
                "<int:object_id>/unshare/",
                view(self.unshare_view),
                name="publishing_story_unshare",
            ),
            *super().get_urls(),
        ]

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        context.update(
            desk_context(request),
            desk_live=obj is not None and Article.objects.filter(pk=obj.pk).exists(),
            desk_autosave_url=reverse("admin:publishing_story_autosave"),
        )
        return super().render_change_form(request, context, add, change, form_url, obj)

    # --- what the page shows -------------------------------------------------------------

    @admin.display(description="unpublished changes", boolean=True)
    def changes(self, obj: Story) -> bool:
        return obj.state == StoryState.PUBLISHED and obj.has_unpublished_changes

    @admin.display(description="state")
    def life(self, obj: Story) -> str:
        if obj.trashed_at is not None:
            return format_html(
                '<span class="desk-story-state">In the trash since {} UTC; purged {} days '
                "after. Restore it from the trash's list.</span>",
                obj.trashed_at.strftime("%Y-%m-%d %H:%M"),
                f"{settings.STORY_TRASH_DAYS:g}",
            )
        article = Article.objects.filter(pk=obj.pk).defer("body", "published_body").first()
        if article is None:
            text = "Draft: on no page." if obj.state == StoryState.DRAFT else "Not on the site."
            return format_html('<span class="desk-story-state">{}</span>', text)
        html = format_html(
            '<span class="desk-story-state">{}{}</span>',
            _on_the_blog(article, obj),
            "; this draft has changes not published yet" if obj.has_unpublished_changes else "",
        )
        if article.published_hash and article.published_slug:
            html += format_html(
                ' · <a class="desk-live-link" href="{}" target="_blank" rel="noopener">'
                "View the live page</a>",
                article_url(article.published_slug),
            )
        return html

    @admin.display(description="shared preview")
    def sharing(self, obj: Story) -> str:
        if obj.trashed_at is not None:  # its link showed "not published yet" (a review's)
            return "In the trash: restore it to share a preview."
        token = story_preview_token(obj)
        share = reverse("admin:publishing_story_share", args=[obj.pk])
        expires_at = obj.preview_expires_at
        if token is None or expires_at is None:
            return format_html(
                '<button type="submit" class="button" id="desk-share" form="desk-story-actions" '
                'formaction="{}">Share preview</button> <span class="help">A link that shows '
                "this draft as its page will look, to anyone who has it, for {}.</span>",
                share,
                _duration(settings.STORY_PREVIEW_SECONDS),
            )
        # At the app's own address, the host's root, whatever SITE_URL's path (the app
        # serves the site under it, and its own addresses beside it).
        url = absolute(reverse("story-preview", args=[token]))
        return format_html(
            '<a id="desk-share-link" href="{}" target="_blank" rel="noopener noreferrer">{}</a> '
            '<span class="help">until {} UTC</span> '
            '<button type="submit" class="button" id="desk-unshare" form="desk-story-actions" '
            'formaction="{}">Revoke</button> '
            '<button type="submit" class="button" form="desk-story-actions" formaction="{}">'
            "New link</button>",
            url,
            url,
            expires_at.strftime("%Y-%m-%d %H:%M"),
            reverse("admin:publishing_story_unshare", args=[obj.pk]),
            share,
        )

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

    @admin.display(description="attempts of earlier publications")
    def publications(self, obj: Story) -> str:
        """The publish attempts of the articles this story was, kept when withdrawn (the
        live article's own are on its page in the Articles list)."""
        if not obj.publish_log:
            return "–"
        rows = format_html_join(
            "",
            "<tr><td>#{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    a["number"],
                    a["started_at"][:19].replace("T", " "),
                    a["outcome"] or "never finished",
                    a["worker"] or "–",
                    a["error"] or "",
                )
                for a in reversed(obj.publish_log)
            ),
        )
        return format_html(
            '<table class="desk-history"><thead><tr><th>attempt</th><th>started (UTC)</th>'
            "<th>outcome</th><th>worker</th><th>error</th></tr></thead><tbody>{}</tbody></table>",
            rows,
        )

    # --- views -----------------------------------------------------------------------------

    def diff_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        story = get_object_or_404(Story, pk=object_id)
        if not self.has_view_or_change_permission(request, story):
            raise PermissionDenied
        numbers = list(story.revisions.values_list("number", flat=True))
        asked = {name: request.GET.get(name) or "" for name in ("old", "new")}
        bad = [
            f"{name}={value!r}" for name, value in asked.items() if value and _number(value) is None
        ]
        if bad:
            return HttpResponseBadRequest(
                f"Not a version number: {', '.join(bad)}.", content_type="text/plain"
            )
        old, new = _version(story, asked["old"]), _version(story, asked["new"])
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "story": story,
            "title": f"Changes of “{story.title}”",
            "numbers": numbers,
            "old": old,
            "new": new,
            "lines": revision_diff(old, new),
            "too_large": _too_large_to_compare(old, new),
        }
        return TemplateResponse(request, "blogpublish/desk/story_diff.html", context)

    @method_post
    def restore_view(self, request: HttpRequest, object_id: int, number: int):
        story = self._changeable(request, object_id)
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
    def autosave_view(self, request: HttpRequest) -> JsonResponse:
        """The desk's autosave (desk.js): the form's fields, saved as a draft as "Save
        draft" saves them (never published), with the version the tab last saw; 409
        when another tab or writer saved since, 400 while the text is not a valid
        draft yet. A new story is made by its first autosave."""
        story_id = request.POST.get("story_id", "")
        number = _number(story_id)
        if story_id and number is None:
            return JsonResponse({"error": f"story_id {story_id!r} is not a number."}, status=400)
        obj = get_object_or_404(Story, pk=number) if number is not None else None
        allowed = (
            self.has_add_permission(request)
            if obj is None
            else self.has_change_permission(request, obj)
        )
        if not allowed:
            raise PermissionDenied
        form = self.get_form(request, obj, change=obj is not None)(request.POST, instance=obj)
        form.publish = False
        form.autosave = True
        if form.is_valid():
            story = form.saved
            return JsonResponse(
                {
                    "id": story.pk,
                    "version": story.version,
                    "change_url": reverse("admin:publishing_story_change", args=[story.pk]),
                }
            )
        messages_ = [
            f"{form.fields[name].label}: {m}" if name in form.fields else m
            for name, errors in form.errors.items()
            for m in errors
        ]
        status = 409 if form.has_error(NON_FIELD_ERRORS, code="conflict") else 400
        return JsonResponse({"error": " ".join(messages_)}, status=status)

    @method_post
    def share_view(self, request: HttpRequest, object_id: int):
        story = self._changeable(request, object_id)
        if story.trashed_at is not None:
            self.message_user(
                request, "Not shared: it is in the trash; restore it first.", messages.ERROR
            )
            return HttpResponseRedirect(reverse("admin:publishing_story_change", args=[story.pk]))
        story_share(story_id=story.pk)
        self.message_user(
            request,
            "Anyone with the preview link can read this draft as its page will look; "
            "earlier links stop working.",
            messages.SUCCESS,
        )
        return HttpResponseRedirect(reverse("admin:publishing_story_change", args=[story.pk]))

    @method_post
    def unshare_view(self, request: HttpRequest, object_id: int):
        story = self._changeable(request, object_id)
        if story_unshare(story_id=story.pk):
            self.message_user(request, "Revoked: the link shows “not published yet”.")
        return HttpResponseRedirect(reverse("admin:publishing_story_change", args=[story.pk]))

    def _changeable(self, request: HttpRequest, object_id: int) -> Story:
        if not self.has_change_permission(request):
            raise PermissionDenied
        return get_object_or_404(Story, pk=object_id)

    @method_post
    def withdraw_view(self, request: HttpRequest, object_id: int):
        return withdraw(self, request, object_id)


def withdraw(model_admin: admin.ModelAdmin, request: HttpRequest, article_id: int):
    """Take the article off the blog; the story's page afterwards (both admins' button),
    or the article list for a user who may not see stories (the story's page was a 403
    after a withdraw that succeeded: a review's finding)."""
    if not can_publish(request):
        raise PermissionDenied
    try:
        story_withdraw(article_id=article_id, saved_by=request.user.get_username())
    except NotOnTheBlog:
        model_admin.message_user(request, "It is not on the blog; nothing to withdraw.")
    else:
        model_admin.message_user(
            request,
            "Withdrawn: its page and listings are going; it is a draft again, at the same address.",
            messages.SUCCESS,
        )
    user = request.user
    if user.has_perm("publishing.view_story") or user.has_perm("publishing.change_story"):
        return HttpResponseRedirect(reverse("admin:publishing_story_change", args=[article_id]))
    return HttpResponseRedirect(reverse("admin:publishing_article_changelist"))


def _life(article: Article) -> Life:
    return life_of(article, now=timezone.now(), max_attempts=settings.PUBLISH_MAX_ATTEMPTS)


def _published(article_id: int) -> str:
    """What "Save and publish" says: when it goes live, in the words of the article's
    page (life_of). "As soon as a worker takes it" was said of a scheduled one too."""
    article = Article.objects.defer("body", "published_body").get(pk=article_id)
    life = _life(article)
    if life.kind == "scheduled":
        return f"Saved and {life.text}."
    if life.kind == "live":  # unchanged: nothing was sent (a review's: "goes live")
        return f"Saved; this version is on the blog already, {life.text}."
    return "Published: it goes live as soon as a worker takes it."


def _on_the_blog(article: Article, story: Story) -> str:
    """The story's state once it has an article: live, or what keeps it from being so
    ("On the blog (status: pending)" was said of one never live: a review's finding).
    A story live once, then withdrawn, is not "never" on it (its new article row has no
    live version; the story keeps its first publish)."""
    life = _life(article)
    if article.published_hash:
        return f"On the blog: {life.text}"
    if story.first_publish_at is not None:
        return f"Not on the blog: {life.text}"
    if life.kind == "dead":
        return f"Never on the blog: {life.text}"
    return f"Not on the blog yet: {life.text}"


def _number(value: str) -> int | None:
    """A number sent in a request (0-9 only: `"²".isdigit()` is true, and int() of it
    raises), or None."""
    if value.isascii() and value.isdigit():
        return int(value)
    return None


def _version(story: Story, number: str) -> Revision | Story:
    """Revision `number`, or the current draft when none (or no such) is asked for."""
    wanted = _number(number)
    if wanted is not None:
        revision = story.revisions.filter(number=wanted).first()
        if revision is not None:
            return revision
    return story


def _too_large_to_compare(old: Revision | Story, new: Revision | Story) -> str:
    """What the diff says of bodies it does not compare line by line (diff_too_large:
    the cost grows with the product of their lines), or ""."""
    if not diff_too_large(old, new):
        return ""
    sizes = "; ".join(
        f"{_name(version)}: {body_lines(version.body):,} lines, "
        f"{len(version.body.encode('utf-8', 'surrogatepass')):,} bytes"
        for version in (old, new)
    )
    same = "the same" if old.body == new.body else "different"
    return (
        f"These versions are too large to compare line by line (a body of more than "
        f"{DIFF_MAX_LINES:,} lines). Their bodies are {same} ({sizes}); only what is "
        "besides the body is compared here."
    )


def _name(version: Revision | Story) -> str:
    return f"version {version.number}" if isinstance(version, Revision) else "the draft"


def _text(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(exc.messages)
    return "no such version"


def _duration(seconds: float) -> str:
    if seconds >= 86400:
        return f"{seconds / 86400:.3g} days"
    return f"{seconds / 3600:.3g} hours"
