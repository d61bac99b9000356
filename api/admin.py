"""API tokens in the admin: make one (shown once, with its scope), revoke, see when each
was last used."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse

from api.exceptions import TokenRefused
from api.models import ApiToken
from api.permissions import check_token_allowed
from api.tokens import token_create, tokens_revoke
from work.admin import BadLookupsAreBadLinks


class ApiTokenAddForm(forms.ModelForm):
    """Whose token, what for, and its scope; a user the token could do nothing for (no
    permission on articles, or none a read token can use) is refused here, with why."""

    class Meta:
        model = ApiToken
        fields = ("user", "name", "scope")

    def clean(self):
        super().clean()
        data = self.cleaned_data
        user, scope = data.get("user"), data.get("scope")
        if user is not None and scope:
            try:
                check_token_allowed(user=user, scope=scope)
            except TokenRefused as exc:
                raise forms.ValidationError(str(exc)) from None
        return data


class StateFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request, model_admin):
        return [("active", "Active"), ("revoked", "Revoked")]

    def queryset(self, request, queryset):
        if self.value() == "active":
            return queryset.filter(revoked_at__isnull=True)
        if self.value() == "revoked":
            return queryset.filter(revoked_at__isnull=False)
        return queryset


@admin.register(ApiToken)
class ApiTokenAdmin(BadLookupsAreBadLinks):
    list_display = ("token", "user", "name", "scope", "created_at", "last_used_at", "revoked_at")
    list_filter = (StateFilter, "scope")
    search_fields = ("user__username", "name", "prefix")
    actions = ("revoke",)
    readonly_fields = ("prefix", "created_at", "last_used_at", "revoked_at")

    def get_queryset(self, request: HttpRequest) -> QuerySet[ApiToken]:
        """A superuser's list has every user's tokens; anyone else's, their own only: the
        list, a token's page, Revoke and Delete reach no further (a review's finding:
        whoever might change tokens could revoke a superuser's, and see every user's).
        As the form lets them make tokens for themselves only."""
        tokens = super().get_queryset(request)
        if request.user.is_superuser:
            return tokens
        return tokens.filter(user_id=request.user.pk)

    def formfield_for_foreignkey(self, db_field, request: HttpRequest, **kwargs):
        # A token acts as its user: only a superuser may make one for someone else, or
        # whoever may add tokens could act as any user, a superuser included (found by
        # the issue 19 review).
        if db_field.name == "user" and not request.user.is_superuser:
            # A signed-in user (the admin lets no one else in): its pk is not None.
            kwargs["queryset"] = get_user_model().objects.filter(pk=request.user.pk)  # type: ignore[misc]
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def get_form(
        self, request: HttpRequest, obj: ApiToken | None = None, change: bool = False, **kwargs
    ):
        if obj is None:
            kwargs["form"] = ApiTokenAddForm
        return super().get_form(request, obj, change, **kwargs)

    def get_fields(self, request: HttpRequest, obj: ApiToken | None = None):
        if obj is None:  # adding: whose token, what for, its scope; the token is made here
            return ("user", "name", "scope")
        return ("user", "name", "scope", *self.readonly_fields)

    def get_readonly_fields(self, request: HttpRequest, obj: ApiToken | None = None):
        # A token's user and scope are fixed: for more rights, make another token.
        return self.readonly_fields if obj is None else ("user", "scope", *self.readonly_fields)

    def save_model(self, request: HttpRequest, obj: ApiToken, form, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        row, token = token_create(user=obj.user, name=obj.name, scope=obj.scope)
        for field in ApiToken._meta.concrete_fields:
            setattr(obj, field.attname, getattr(row, field.attname))
        obj._state.adding, obj._state.db = False, row._state.db
        # For response_add of the same request: shown once, stored nowhere.
        request._api_token_made = token  # type: ignore[attr-defined]

    def response_add(self, request: HttpRequest, obj: ApiToken, post_url_continue=None):
        token = getattr(request, "_api_token_made", None)
        if token is None:
            return super().response_add(request, obj, post_url_continue)
        context = {
            **self.admin_site.each_context(request),
            "title": "API token created",
            "opts": self.opts,
            "token_row": obj,
            "token": token,
        }
        response = TemplateResponse(request, "admin/api/apitoken/created.html", context)
        response["Cache-Control"] = "no-store"  # the token must not stay in any cache
        return response

    @admin.display(description="token", ordering="prefix")
    def token(self, obj: ApiToken) -> str:
        return f"{obj.prefix}…"

    @admin.action(description="Revoke (the token stops working at once)", permissions=["change"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        ids = list(queryset.values_list("pk", flat=True))
        done = tokens_revoke(token_ids=ids)
        self.message_user(request, f"{done} token(s) revoked.", messages.SUCCESS)
        if done < len(ids):
            self.message_user(request, f"{len(ids) - done} were revoked already.", messages.WARNING)
