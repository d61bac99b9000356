"""What a token may do: what the admin lets its user do with articles (Django's model
permissions, through `user.has_perm`, so groups and superusers count as in the admin),
and no more than the token's scope allows.

Each operation of the API declares its `Need`; `check_access` is called for every
request before anything else of it runs (its body is not even parsed), so a refusal
says nothing about whether an article exists or the input is valid. An operation on an
article or a draft (POST, PATCH, DELETE) declares either's need, and checks the one of
what it found with `check_permission` before it reads the content."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import User

from api.exceptions import InsufficientScope, PermissionMissing, TokenRefused
from api.models import TokenScope

ADD = "publishing.add_article"
CHANGE = "publishing.change_article"
DELETE = "publishing.delete_article"
VIEW = "publishing.view_article"
# A draft is a story: saving one and trashing one on no page need the stories'
# permissions, as on the desk (StoryAdmin; docs/writing.md). Publishing and withdrawing
# need CHANGE, as there.
ADD_STORY = "publishing.add_story"
CHANGE_STORY = "publishing.change_story"
DELETE_STORY = "publishing.delete_story"
# A webhook delivery is requeued under its own permission, as in the admin's Webhook
# deliveries and on the dashboard (a review's finding: it was the articles' CHANGE).
CHANGE_DELIVERY = "publishing.change_webhookdelivery"
# The permissions the API checks; a user with none of them can do nothing with a token.
ARTICLE_PERMISSIONS = (
    ADD,
    CHANGE,
    DELETE,
    VIEW,
    ADD_STORY,
    CHANGE_STORY,
    DELETE_STORY,
    CHANGE_DELIVERY,
)


@dataclass(frozen=True)
class Need:
    """What an operation needs: any one of `permissions`, and a write token if `writes`."""

    action: str  # for the messages: "create articles"
    permissions: tuple[str, ...]
    writes: bool

    def __or__(self, other: Need) -> Need:
        """What an operation on an article or a draft, by its id or body, needs before
        it knows which: either's (the endpoint checks the one it found)."""
        return Need(
            f"{self.action} or {other.action}",
            self.permissions + other.permissions,
            self.writes or other.writes,
        )


# An article created without `status: draft` is published, which needs CHANGE too (the
# endpoint checks it, as the admin's Article → Add).
CREATE = Need("create articles", (ADD,), writes=True)
CREATE_DRAFT = Need("create drafts", (ADD_STORY,), writes=True)
# As in the admin, the permission to change implies the permission to view.
READ = Need("view articles", (VIEW, CHANGE), writes=False)
EDIT = Need("change articles", (CHANGE,), writes=True)
EDIT_DRAFT = Need("change drafts", (CHANGE_STORY,), writes=True)
REMOVE = Need("delete articles", (DELETE,), writes=True)
REMOVE_DRAFT = Need("delete drafts", (DELETE_STORY,), writes=True)
# The admin's Requeue action and the dashboard's need the permission to change.
REQUEUE = Need("requeue articles", (CHANGE,), writes=True)
REQUEUE_DELIVERY = Need("requeue webhook deliveries", (CHANGE_DELIVERY,), writes=True)
# Publishing a draft and withdrawing change what readers see (issue 22).
PUBLISH = Need("publish or withdraw articles", (CHANGE,), writes=True)


def default_need(method: str) -> Need:
    """An operation that declares nothing: reading for GET/HEAD, changing otherwise."""
    return READ if method in ("GET", "HEAD") else EDIT


def _may(user: User, need: Need) -> bool:
    return any(user.has_perm(permission) for permission in need.permissions)


def _none_of_them(user: User) -> bool:
    return not any(user.has_perm(permission) for permission in ARTICLE_PERMISSIONS)


def check_access(*, user: User, scope: str, need: Need) -> None:
    """Raise PermissionMissing or InsufficientScope (both 403) unless the token of
    `user` with `scope` may do what `need` says."""
    name = user.get_username()
    if _none_of_them(user):
        raise PermissionMissing(
            f"The token's user {name} has no permission on articles any more "
            f"({', '.join(ARTICLE_PERMISSIONS)}); the token can do nothing. "
            "An administrator can give a permission in the admin (Users or Groups)."
        )
    if need.writes and scope != TokenScope.WRITE:
        raise InsufficientScope(
            f"This token is read-only (scope {scope}): it may not {need.action}. "
            "Make a write token: python manage.py api_token USERNAME --scope write."
        )
    check_permission(user=user, need=need)


def check_permission(*, user: User, need: Need) -> None:
    """PermissionMissing (403) unless `user` has one of `need`'s permissions: what
    check_access checks last, and an endpoint once it knows whether an id (or a body)
    is an article's or a draft's."""
    if not _may(user, need):
        raise PermissionMissing(
            f"{user.get_username()} may not {need.action}: that needs the permission "
            f"{' or '.join(need.permissions)}, as in the admin."
        )


def check_token_allowed(*, user: User, scope: str) -> None:
    """Raise TokenRefused unless `user` may have a token of `scope`: an active staff
    user, with a permission the token can use."""
    name = user.get_username()
    if not user.is_active:
        raise TokenRefused(f"{name} is not an active user.")
    if not user.is_staff:
        raise TokenRefused(
            f"{name} is not a staff user; only staff users get API tokens "
            "(tick “Staff status” in the admin first)."
        )
    if scope not in TokenScope.values:
        raise TokenRefused(f"The scope is read or write, not {scope!r}.")
    if _none_of_them(user):
        raise TokenRefused(
            f"{name} has no permission on articles ({', '.join(ARTICLE_PERMISSIONS)}): "
            "a token could do nothing. Give them one in the admin (Users or Groups) first."
        )
    if scope == TokenScope.READ and not _may(user, READ):
        raise TokenRefused(
            f"A read token of {name} could do nothing: {name} may not view articles "
            f"({' or '.join(READ.permissions)}). Give that permission, or make a write token."
        )
