"""The writer's and operator's screen. Actions call services, as the worker does."""

from __future__ import annotations

from typing import ClassVar

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers, widgets
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.text import Truncator

from publishing import dates
from publishing.forms import TagsField
from publishing.models import (
    CONTENT_FIELDS,
    Article,
    ArticleStatus,
    DeliveryStatus,
    PublishAttempt,
    Story,
    WebhookDelivery,
)
from publishing.services import (
    article_create,
    article_publish_now,
    article_update,
    articles_requeue,
    delivery_not_requeued_why,
    delivery_requeue,
    story_trash,
)
from work.admin import BadLookupsAreBadLinks, ListsWithout

# How many refusals of a Requeue the admin names with their reasons.
REASONS_SHOWN = 10

# The admin's home page links the publishing dashboard (publishing/dashboard.py).
admin.site.index_template = "admin/publishing/index.html"


class PublishAttemptInline(admin.TabularInline):
    model = PublishAttempt
    fields = ("number", "outcome", "started_at", "duration", "worker", "task_id", "error")
    readonly_fields = fields
    ordering = ("-started_at", "-id")
    extra = 0
    can_delete = False
    show_change_link = False
    verbose_name_plural = "Publish attempts (newest first)"

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


class StateFilter(admin.SimpleListFilter):
    """Status, with scheduled articles (pending, not yet due) told apart."""

    title = "status"
    parameter_name = "state"

    def lookups(self, request, model_admin):
        return [
            ("pending", "Pending (due)"),
            ("scheduled", "Scheduled"),
            ("published", "Published"),
            ("dead", "Dead"),
        ]

    def queryset(self, request, queryset):
        now = timezone.now()
        value = self.value()
        if value == "pending":
            return queryset.filter(status=ArticleStatus.PENDING, publish_at__lte=now)
        if value == "scheduled":
            return queryset.filter(status=ArticleStatus.PENDING, publish_at__gt=now)
        if value in {ArticleStatus.PUBLISHED, ArticleStatus.DEAD}:
            return queryset.filter(status=value)
        return queryset


class _AnyStoredDate(forms.SplitDateTimeWidget):
    """A split date and time widget for any stored date: one the current zone cannot
    show is shown as its UTC wall time (it is outside the years validation allows, so
    saving it unchanged is refused with the reason)."""

    def decompress(self, value):
        if value and timezone.is_aware(value):
            moment, _in_utc = dates.localtime_or_utc(value)
            return [moment.date(), moment.time()]
        return super().decompress(value)


class DateTimeWidget(_AnyStoredDate, widgets.AdminSplitDateTime):
    pass


class HiddenDateTimeWidget(_AnyStoredDate, forms.SplitHiddenDateTimeWidget):
    """The form's hidden copy of the initial value (a field with a callable default)."""


class DateTimeField(forms.SplitDateTimeField):
    widget = DateTimeWidget
    hidden_widget = HiddenDateTimeWidget


STATUS_COLOURS = {
    "pending": "#b26b00",
    "scheduled": "#3465a4",
    "published": "#2e7d32",
    "dead": "#c62828",
}


def moved_address(article_id: int) -> tuple[str, str] | None:
    """(live slug, new slug) when the article is live under another slug than its
    content's: once the new version is live, the old address sends readers on to the
    new one (FormerAddress, docs/site.md "Former addresses")."""
    row = Article.objects.filter(pk=article_id).values("slug", "published_slug").first()
    if row and row["published_slug"] and row["published_slug"] != row["slug"]:
        return row["published_slug"], row["slug"]
    return None


def warn_of_a_moved_address(model_admin, request: HttpRequest, article_id: int) -> None:
    """Tell the writer that a live article's new slug moves its address: the old one
    sends readers on, until another article takes it."""
    moved = moved_address(article_id)
    if moved:
        old, new = moved
        model_admin.message_user(
            request,
            f"The address “{old}” becomes “{new}” once this version is live. Links to the "
            f"old one (shared, bookmarked, in search results) are sent on to the new one, "
            f"until another article takes “{old}”.",
            messages.WARNING,
        )


SAVED_ELSEWHERE = (
    "This article was saved elsewhere (another tab, another writer, or the API) since "
    "you opened it; saving this form would undo that. Nothing was saved: copy your text, "
    "reload the page, and merge."
)


NO_BASE = (
    "This form does not say which version it was opened at, so saving "
    "it could undo an edit made since. Copy your text, reload the page, and save again."
)


class ArticleForm(forms.ModelForm):
    """The article's content, with the content hash it was opened at: a save over
    content changed since (another tab, the API) is refused, with the writer's text
    still in the form, as the story form refuses a stale version (desk/drafts.py)."""

    base_hash = forms.CharField(widget=forms.HiddenInput, required=False)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if not self.instance._state.adding:
            self.fields["base_hash"].initial = self.instance.content_hash

    def clean(self):
        cleaned = super().clean()
        base = (cleaned or {}).get("base_hash")
        if not self.instance._state.adding:
            if not base:
                # Without it no save could be checked: a tab opened before the field, a
                # script's post (a review's finding: either undid another writer's edit).
                raise ValidationError(NO_BASE, code="stale")
            # Locked until the save in the admin's transaction (changeform_view): no
            # other save can come between this check and ours.
            rows = Article.objects.select_for_update().filter(pk=self.instance.pk)
            current = rows.values_list("content_hash", flat=True).first()
            if current is None:
                raise ValidationError(withdrawn_meanwhile(self.instance.pk), code="gone")
            if current != base:
                raise ValidationError(SAVED_ELSEWHERE, code="conflict")
        return cleaned


def withdrawn_meanwhile(article_id: int) -> str:  # HTML: a link to the story
    """Why a form's save of an article gone since it was opened stored nothing."""
    story = Story.objects.filter(pk=article_id).values("trashed_at").first()
    if story is None:
        return "This article was deleted since you opened it. Nothing was saved: copy your text."
    return format_html(
        'This article was taken off the blog since you opened it: it is {}, <a href="{}">'
        "story {}</a>. Nothing was saved: copy your text into that draft.",
        "in the trash" if story["trashed_at"] else "a draft again",
        reverse("admin:publishing_story_change", args=[article_id]),
        article_id,
    )


@admin.register(Article)
class ArticleAdmin(ListsWithout, BadLookupsAreBadLinks):
    form = ArticleForm
    list_deferred = ("body", "published_body")  # the text and its live copy, 1 MiB each
    # tuple[str, ...]: the writer's desk (blogpublish.admin) shows more of each.
    list_display: tuple[str, ...] = (
        "title",
        "state",
        "attempts",
        "publish_at_shown",
        "published_at_shown",
        "error_start",
    )
    list_filter = (StateFilter,)
    search_fields = ("title", "slug")
    date_hierarchy = "publish_at"
    actions = ("publish_now", "requeue")
    inlines = (PublishAttemptInline,)
    readonly_fields: ClassVar[tuple[str, ...]] = (
        "state",
        "attempts",
        "last_error",
        "next_attempt_at",
        "lease_expires_at",
        "published_at",
        "created_at",
        "updated_at",
    )
    fieldsets = (
        (None, {"fields": ("title", "slug", "body", "publish_at", "base_hash")}),
        ("For readers", {"fields": ("description", "byline", "tags", "language")}),
        ("Publishing", {"fields": readonly_fields}),
    )

    def formfield_for_dbfield(self, db_field, request, **kwargs):
        if db_field.name == "publish_at":
            kwargs.update(form_class=DateTimeField, widget=DateTimeWidget)
        if db_field.name == "tags":
            kwargs["form_class"] = TagsField
        if db_field.name == "body":
            # Keep the body as typed: the form's strip would take the first line's
            # indentation (an indented code block); the model drops only what it may
            # (normalize_body), as every other way in does.
            kwargs["strip"] = False
        return super().formfield_for_dbfield(db_field, request, **kwargs)

    def has_add_permission(self, request: HttpRequest) -> bool:
        """Adding an article is publishing it (it goes out when due), which needs the
        permission to change articles (docs/writing.md): with `add_article` alone, a
        writer refused Save and publish on a draft published it from Article → Add (a
        review's finding)."""
        return super().has_add_permission(request) and self.has_change_permission(request)

    def get_object(self, request: HttpRequest, object_id: str, from_field=None):
        """The article; for a Save of one taken off the blog (withdrawn, deleted) since
        its form was opened, a stand-in of it, so the form is shown again with the
        writer's text and where the article went (ArticleForm.clean) rather than a
        redirect that throws the text away. Only its change page's POST gets one."""
        obj = super().get_object(request, object_id, from_field)
        change_page = f"{self.opts.app_label}_{self.opts.model_name}_change"
        match = request.resolver_match
        saving = request.method == "POST" and match is not None and match.url_name == change_page
        number = str(object_id)
        stand_in = obj is None and saving and from_field is None
        if stand_in and number.isascii() and number.isdigit() and _has_story(int(number)):
            obj = Article(pk=int(number))
            obj._state.adding = False
        return obj

    def delete_model(self, request: HttpRequest, obj: Article) -> None:
        """The article and, as any delete, its story into the trash; also when a
        withdraw took the article between the confirmation and this delete: the draft
        it left goes to the trash, as the writer asked, instead of "deleted" said of
        nothing."""
        deleted, _rows = obj.delete()
        if not deleted:
            _trash_what_was_withdrawn([obj.pk])

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Article]) -> None:
        """The same for "Delete selected": the articles its confirmation listed (and
        posted back) that a withdraw took since, their drafts to the trash."""
        ids = set(queryset.values_list("pk", flat=True))
        # A posted id is a draft's only when withdrawn: trashing a draft is the
        # story's delete, its permission's (StoryAdmin).
        if request.user.has_perm("publishing.delete_story"):
            confirmed = request.POST.getlist(helpers.ACTION_CHECKBOX_NAME)
            ids |= {int(pk) for pk in confirmed if pk.isascii() and pk.isdigit()}
        queryset.delete()
        _trash_what_was_withdrawn(sorted(ids))

    def save_model(self, request: HttpRequest, obj: Article, form, change: bool) -> None:
        """Through the services, as every way in (the form has validated already)."""
        fields = {name: form.cleaned_data[name] for name in CONTENT_FIELDS}
        if change:
            article_update(article=obj, **fields)
            warn_of_a_moved_address(self, request, obj.pk)
            return
        created = article_create(**fields)
        # The admin goes on with `obj` (the inlines, the log entry, the redirect).
        for field in Article._meta.concrete_fields:
            setattr(obj, field.attname, getattr(created, field.attname))
        obj._state.adding, obj._state.db = False, created._state.db

    def get_changelist_instance(self, request: HttpRequest):
        changelist = super().get_changelist_instance(request)
        # The date hierarchy shows the list's first and last dates in the current zone
        # and groups by year there: impossible for a date stored past validation at the
        # calendar's edge (dates.py). Until it is corrected, the list goes without it.
        if changelist.date_hierarchy and changelist.queryset.filter(dates.outside_range()).exists():
            changelist.date_hierarchy = None
        return changelist

    @admin.display(description="publish at", ordering="publish_at")
    def publish_at_shown(self, obj: Article) -> str:
        return dates.shown(obj.publish_at)

    @admin.display(description="published at", ordering="published_at")
    def published_at_shown(self, obj: Article) -> str:
        return dates.shown(obj.published_at)

    @admin.display(description="status", ordering="status")
    def state(self, obj: Article) -> str:
        label = "scheduled" if obj.is_scheduled else obj.status
        return format_html('<b style="color:{}">{}</b>', STATUS_COLOURS[label], label)

    @admin.display(description="last error")
    def error_start(self, obj: Article) -> str:
        return Truncator(obj.last_error).chars(80)

    @admin.action(description="Publish now", permissions=["change"])
    def publish_now(self, request: HttpRequest, queryset: QuerySet[Article]) -> None:
        ids = list(queryset.values_list("pk", flat=True))
        sent = refused = 0
        for pk in ids:
            try:
                sent += article_publish_now(article_id=pk)
            except ValidationError as exc:
                # Its date moves to now, a save: content stored before a newer rule
                # (a title that shows nothing) is refused as the form refuses it.
                refused += 1
                self.message_user(
                    request,
                    f"Article {pk} not sent: {'; '.join(exc.messages)} Edit it first.",
                    messages.ERROR,
                )
        self.message_user(
            request,
            f"{sent} article(s) will be published now (as soon as a worker takes them).",
            messages.SUCCESS,
        )
        if sent + refused < len(ids):
            self.message_user(
                request,
                f"{len(ids) - sent - refused} not pending (already published, or dead: use "
                "Requeue).",
                messages.WARNING,
            )

    @admin.action(description="Requeue (dead → pending, attempts reset)", permissions=["change"])
    def requeue(self, request: HttpRequest, queryset: QuerySet[Article]) -> None:
        ids = list(queryset.values_list("pk", flat=True))
        done = articles_requeue(ids)
        self.message_user(request, f"{done} dead article(s) requeued.", messages.SUCCESS)
        if done < len(ids):
            self.message_user(request, f"{len(ids) - done} were not dead.", messages.WARNING)


def _has_story(article_id: int) -> bool:
    return Story.objects.filter(pk=article_id).exists()


def _trash_what_was_withdrawn(article_ids: list[int]) -> None:
    """The drafts a withdraw left of articles a delete was asked for: to the trash."""
    withdrawn = Story.objects.filter(pk__in=article_ids, trashed_at__isnull=True).exclude(
        pk__in=Article.objects.filter(pk__in=article_ids).values("pk")
    )
    for pk in withdrawn.values_list("pk", flat=True):
        story_trash(story_id=pk)


DELIVERY_COLOURS: dict[str, str] = {
    DeliveryStatus.PENDING: "#b26b00",
    DeliveryStatus.DELIVERED: "#2e7d32",
    DeliveryStatus.DEAD: "#c62828",
}


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(BadLookupsAreBadLinks):
    """The webhook outbox: what was sent to PUBLISH_WEBHOOK_URL, what waits, what died.
    Read-only but for the Requeue action (a dead delivery never changes its article)."""

    list_display = (
        "id",
        "event",
        "article_id",
        "state",
        "attempts",
        "next_attempt_at",
        "delivered_at",
        "error_start",
    )
    list_filter = ("status", "event")
    search_fields = ("=article_id", "=key")
    actions = ("requeue",)
    readonly_fields = (
        "article_id",
        "event",
        "key",
        "body",
        "status",
        "attempts",
        "last_error",
        "next_attempt_at",
        "lease_expires_at",
        "dispatched_at",
        "alerted_at",
        "delivered_at",
        "created_at",
        "updated_at",
    )
    fields = readonly_fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    @admin.display(description="status", ordering="status")
    def state(self, obj: WebhookDelivery) -> str:
        return format_html('<b style="color:{}">{}</b>', DELIVERY_COLOURS[obj.status], obj.status)

    @admin.display(description="last error")
    def error_start(self, obj: WebhookDelivery) -> str:
        return Truncator(obj.last_error).chars(80)

    @admin.action(description="Requeue (dead → pending, tries reset)", permissions=["change"])
    def requeue(self, request: HttpRequest, queryset: QuerySet[WebhookDelivery]) -> None:
        ids = list(queryset.values_list("pk", flat=True))
        refused = [pk for pk in ids if not delivery_requeue(delivery_id=pk)]
        done = len(ids) - len(refused)
        self.message_user(request, f"{done} dead webhook delivery(s) requeued.", messages.SUCCESS)
        # Each refusal with its reason (not dead, or superseded by a later event of its
        # article), the first few only: a selection may be hundreds.
        for pk in refused[:REASONS_SHOWN]:
            self.message_user(request, delivery_not_requeued_why(delivery_id=pk), messages.WARNING)
        if len(refused) > REASONS_SHOWN:
            self.message_user(
                request,
                f"{len(refused) - REASONS_SHOWN} more were not requeued either.",
                messages.WARNING,
            )
