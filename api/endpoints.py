"""The HTTP API: /api/articles and /api/schema (django-ninja).

Every write goes through `publishing.services` (article_create, article_update,
article_requeue, delivery_requeue), the functions the admin calls, so the API takes exactly what the
admin takes and publishes the same way: a pending row, dispatched after the commit.
Every operation declares what it needs (api/permissions.py): the admin's permission
for it, and a write token for a write; its authentication checks both (403 otherwise)
before anything else of the request is looked at.
"""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import re
from functools import partial
from typing import NoReturn

from django.contrib.auth.models import User
from django.core.exceptions import RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import ProhibitNullCharactersValidator
from django.db import OperationalError, transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from ninja import Header, NinjaAPI, Query, Status
from ninja import Path as PathParam
from ninja.errors import AuthenticationError, HttpError
from ninja.errors import ValidationError as NinjaValidationError
from ninja.parser import Parser
from ninja.security import HttpBearer

from api.exceptions import (
    ApiError,
    DeliveryNotRequeueable,
    DraftConflict,
    InsufficientScope,
    NotRequeueable,
    NotWithdrawable,
    PermissionMissing,
)
from api.permissions import (
    ADD_STORY,
    CHANGE,
    CREATE,
    CREATE_DRAFT,
    EDIT,
    EDIT_DRAFT,
    PUBLISH,
    READ,
    REMOVE,
    REMOVE_DRAFT,
    REQUEUE,
    REQUEUE_DELIVERY,
    Need,
    check_access,
    check_permission,
    default_need,
)
from api.schemas import (
    ArticleCreateIn,
    ArticleOut,
    ArticlePage,
    ArticlePatchIn,
    CreateStatus,
    DeliveryOut,
    DraftOut,
    DraftPage,
    ErrorOut,
    StatusFilter,
    TagOut,
    article_out,
    delivery_out,
    draft_out,
    parse_publish_at,
)
from api.services import article_create_once, request_digest
from api.tokens import token_lookup
from publishing import selectors as publishing_selectors
from publishing.exceptions import NotOnTheBlog, StoryConflict
from publishing.models import DRAFT_FIELDS, Article, Story, StoryState, WebhookDelivery
from publishing.services import (
    article_create,
    article_requeue,
    article_update,
    delivery_not_requeued_why,
    delivery_requeue,
    story_of_article,
    story_publish,
    story_save,
    story_trash,
    story_withdraw,
)
from publishing.text_limits import validate_xml_chars

NON_FIELD = "__all__"  # as Django names errors that belong to no one field
MAX_ID = 2**63 - 1  # the largest primary key either database stores
MAX_PAGE = 1_000_000
NUL_MESSAGE = str(ProhibitNullCharactersValidator.message)


class BearerToken(HttpBearer):
    """`Authorization: Bearer <token>`: a valid token (401 otherwise) whose user has the
    operation's permission and whose scope allows it (403 otherwise). The request acts
    as the token's user (`request.auth`)."""

    def __init__(self, need: Need | None = None):
        super().__init__()
        self.need = need  # None: by the method (api.permissions.default_need)

    def __call__(self, request: HttpRequest) -> User | None:
        """The token after `Bearer ` (the scheme in any case, RFC 9110 §11.1), or None:
        a 401. Ninja's own logs the whole header when its scheme is not Bearer, with
        DEBUG on (a review's finding: `Authorization: bp_…`, the token, in the log);
        nothing of it is logged here."""
        scheme, _space, token = (request.headers.get(self.header) or "").partition(" ")
        if scheme.lower() != self.openapi_scheme or not token:
            return None
        return self.authenticate(request, token)

    def authenticate(self, request: HttpRequest, token: str) -> User | None:
        row = token_lookup(token)
        if row is None:
            return None
        need = self.need or default_need(request.method or "")
        check_access(user=row.user, scope=row.scope, need=need)
        return row.user


def token_user(request: HttpRequest) -> User:
    """The user of the request's token: what BearerToken.authenticate returned, which
    django-ninja sets as `request.auth` (an attribute Django's HttpRequest does not declare)."""
    return request.auth  # type: ignore[attr-defined]


class BodyRefused(ValueError):
    """A request body the API does not read, and why (the status it answers with)."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


def _one_value_a_key(pairs: list[tuple[str, object]]) -> dict:
    seen: dict = {}
    for key, value in pairs:
        if key in seen:  # json.loads keeps the last; the writer meant one of them
            raise BodyRefused(f"The key {key!r} is given twice in one object.")
        seen[key] = value
    return seen


class JsonBody(Parser):
    """A body is JSON, said so by its Content-Type (`application/json`, or a `+json`
    type): a form or text sent by mistake is a 415 naming the type, not a parse of
    whatever it held. A key given twice in one object is refused (JSON leaves it
    undefined; Python keeps the last, so one of the writer's values would vanish)."""

    def parse_body(self, request: HttpRequest) -> dict:
        kind = request.content_type or ""
        if kind != "application/json" and not kind.endswith("+json"):
            raise BodyRefused(
                f"Content-Type {kind or '(none)'}: send the body as application/json.", 415
            )
        try:
            return json.loads(request.body, object_pairs_hook=_one_value_a_key)
        except BodyRefused:  # a ValueError too, with its own words
            raise
        except ValueError as exc:
            # UnicodeDecodeError, JSONDecodeError, and an integer of more than 4,300
            # digits (sys.get_int_max_str_digits: a plain ValueError, which ninja
            # answered as "Cannot parse request body", a review's finding).
            raise BodyRefused(f"The request body is not valid JSON: {exc}.") from exc
        except RecursionError:
            raise BodyRefused("The request body is not valid JSON: nested too deeply.") from None


api = NinjaAPI(
    title="blogpublish API",
    version="1",
    description=(
        "Write articles from programs. Authenticate with `Authorization: Bearer <token>` "
        "(a staff user's token: `python manage.py api_token USERNAME [--scope write]`, or "
        "the admin). Each operation needs its user's permission, as in the admin, and a "
        "write token for a write (403 otherwise). docs/api.md has examples."
    ),
    # An operation that declares no need of its own (none here): read for GET, change
    # for the rest; tests/security/test_api_permissions.py lists each operation's need.
    auth=BearerToken(),
    urls_namespace="api",
    openapi_url="/schema",
    # No docs page: the schema is the reference, and ninja's Swagger UI page would load
    # its scripts from a CDN.
    docs_url=None,
    parser=JsonBody(),
)

# Every operation may answer these.
COMMON = {400: ErrorOut, 401: ErrorOut, 403: ErrorOut}
ONE = {**COMMON, 404: ErrorOut}
ArticleId = PathParam(..., ge=1, le=MAX_ID, description="The article's id.")
DeliveryId = PathParam(..., ge=1, le=MAX_ID, description="The webhook delivery's id.")
# A draft's version the request was made against (_version reads it).
IfMatch = Header(
    None,
    alias="If-Match",
    max_length=80,
    description=(
        'A draft\'s version: 3, or as an entity tag, "3" or W/"3"; an article\'s ETag '
        "(its content's hash, quoted as GET gives it)."
    ),
)
# An article's entity tag: the hash of its content (`content_hash`), as GET sends it.
CONTENT_TAG = re.compile(r"[0-9a-f]{64}", re.IGNORECASE)
# A weak tag of an article: If-Match compares strongly, so it never matches (RFC 9110
# §13.1.1; a review's finding: W/"<hash>" was taken as the hash).
WEAK = "W/"


# --- errors: one shape, {"detail": …, "errors": {field: [messages]}} ---------------------


def error(request: HttpRequest, status: int, detail: str, errors: dict | None = None):
    return api.create_response(request, {"detail": detail, "errors": errors or {}}, status=status)


@api.exception_handler(AuthenticationError)
def unauthorized(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    given = bool(request.headers.get("Authorization"))
    response = error(
        request,
        401,
        "The token is not valid (unknown, revoked, or its user is not an active staff user)."
        if given
        else "Authentication required: send Authorization: Bearer <token>.",
    )
    # RFC 6750 §3: a 401 says which scheme; `invalid_token` when one was sent.
    response["WWW-Authenticate"] = (
        'Bearer realm="blogpublish", error="invalid_token"'
        if given
        else 'Bearer realm="blogpublish"'
    )
    return response


@api.exception_handler(NinjaValidationError)
def invalid_request(request: HttpRequest, exc: NinjaValidationError) -> HttpResponse:
    """The request's shape (ninja/pydantic): each field and its problem."""
    errors: dict[str, list[str]] = {}
    for problem in exc.errors:
        errors.setdefault(_field_name(problem), []).append(_message(problem))
    return error(request, 400, "The request is not valid.", errors)


@api.exception_handler(DjangoValidationError)
def invalid_content(request: HttpRequest, exc: DjangoValidationError) -> HttpResponse:
    """The content, as the admin validates it: the model's messages, per field."""
    return error(request, 400, "The article is not valid; nothing was stored.", _messages(exc))


@api.exception_handler(ApiError)
def refused(request: HttpRequest, exc: ApiError) -> HttpResponse:
    response = error(request, exc.status, str(exc))
    if isinstance(exc, InsufficientScope):  # RFC 6750 §3.1
        response["WWW-Authenticate"] = (
            'Bearer realm="blogpublish", error="insufficient_scope", scope="write"'
        )
    return response


@api.exception_handler(HttpError)
def http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    if isinstance(exc.__cause__, BodyRefused):  # ninja's parse of the body (JsonBody)
        return error(request, exc.__cause__.status, str(exc.__cause__))
    return error(request, exc.status_code, str(exc))


logger = logging.getLogger(__name__)


@api.exception_handler(OperationalError)
def database_unavailable(request: HttpRequest, exc: OperationalError) -> HttpResponse:
    """The database down or unreachable (the token's lookup is the first to meet it): a
    503 in the API's shape, not an HTML 500 (a review's finding)."""
    logger.warning("%s: the database failed: %s", request.path, exc)
    return error(request, 503, "The database is unavailable; try again later.")


@api.exception_handler(Http404)
def not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    return error(request, 404, "No article with this id.")


@api.exception_handler(RequestDataTooBig)
def too_big(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
    return error(
        request, 413, "The request body is too large (an article's body is at most 1 MiB)."
    )


def _field_name(problem: dict) -> str:
    # loc is ("body", "payload", "title"), ("query", "status"), ("path", "id"),
    # ("header", "Idempotency-Key"); ("body", "payload") alone is the whole body.
    loc = [str(part) for part in problem.get("loc", ())]
    if loc[:2] == ["body", "payload"]:
        loc = loc[2:]
    elif loc[:1] in (["query"], ["path"], ["header"]):
        loc = loc[1:]
    return ".".join(loc) or NON_FIELD


def _message(problem: dict) -> str:
    kind = problem.get("type", "")
    if kind == "extra_forbidden":
        return (
            "Not a field of an article here: an article has title, body, slug, "
            "publish_at, description, language, byline and tags (and status when it is "
            "made)."
        )
    if kind == "missing":
        return "This field is required."
    if kind in {"dict_type", "model_attributes_type"}:
        return "The request body must be a JSON object."
    return str(problem.get("msg", "Not valid."))


UNKNOWN_QUERY = "Not a query parameter of this operation."
REPEATED_QUERY = "Given more than once; give it once."


def _known_query(request: HttpRequest, *allowed: str) -> None:
    """Refuse query parameters the operation does not have: a typo (`?stauts=dead`)
    would otherwise answer as if no filter had been asked for. And one given twice
    (`?status=dead&status=pending`): ninja takes one of them, and the list would answer
    as if the other had not been asked for (a review's finding)."""
    problems = [
        (name, UNKNOWN_QUERY if name not in allowed else REPEATED_QUERY)
        for name in sorted(request.GET)
        if name not in allowed or len(request.GET.getlist(name)) > 1
    ]
    if problems:
        # The request's shape, not the article's content: "The request is not valid",
        # on a read or a delete too (a review's finding: "The article is not valid;
        # nothing was stored").
        raise NinjaValidationError(
            [{"loc": ("query", name or "(empty name)"), "msg": msg} for name, msg in problems]
        )


def _content(payload, *, base: Article | Story | None = None, draft: bool = False) -> dict:
    """The content fields given (all of them for a new article or draft; never
    `status`), publish_at parsed. `base` is the article or draft edited (None: a new
    one, a draft when `draft`). When publish_at does not parse, a 400 names it together
    with whatever the validation of `base`'s kind (an article's, or a draft's, whose
    body may be empty) says of the other fields, as one response."""
    fields = payload.model_dump(exclude_unset=base is not None, exclude={"status"})
    # As the admin's form fields refuse them (ProhibitNullCharactersValidator), before
    # any query: PostgreSQL cannot even compare a string holding one.
    nul = {name: [NUL_MESSAGE] for name, value in fields.items() if "\x00" in (value or "")}
    if nul:
        raise DjangoValidationError(nul)
    if base is None and fields.get("publish_at") is None:
        fields.pop("publish_at", None)
    if "publish_at" not in fields:
        return fields
    try:
        fields["publish_at"] = parse_publish_at(fields["publish_at"])
    except ValueError as exc:
        errors = {"publish_at": [str(exc)]}
        del fields["publish_at"]
        if base is None:
            base = Story() if draft else Article()
        try:
            _check_without_saving(fields, base)
        except DjangoValidationError as others:
            errors = {**_messages(others), **errors}
        raise DjangoValidationError(errors) from None
    return fields


def _check_without_saving(fields: dict, base: Article | Story) -> None:
    """The validation the service would run, of `fields` on a copy of `base` (an
    article, or a draft: story_save's), for the messages only."""
    candidate = copy.copy(base)
    for name, value in fields.items():
        setattr(candidate, name, value)
    if isinstance(candidate, Story):
        with contextlib.suppress(DjangoValidationError):  # full_clean runs it again
            candidate.clean()  # normalised first, as story_save does
        # A new draft has no id yet; its address is checked as it is saved.
        candidate.full_clean(exclude=["id", "slug_key"], validate_unique=False)
    else:
        candidate.full_clean()


def _messages(exc: DjangoValidationError) -> dict[str, list[str]]:
    return exc.message_dict if hasattr(exc, "error_dict") else {NON_FIELD: exc.messages}


# --- the operations ---------------------------------------------------------------------


@api.post(
    "/articles",
    auth=BearerToken(CREATE | CREATE_DRAFT),
    response={
        200: ArticleOut,
        201: ArticleOut | DraftOut,
        409: ErrorOut,
        413: ErrorOut,
        **COMMON,
    },
    summary="Create an article (pending, published as soon as a worker takes it), or a draft",
    description=(
        "201 with the new article. With an `Idempotency-Key`, the same key and the same "
        "body again answer 200 with the article the first request created (as it is "
        "now); the same key with another body answers 409. With `status: draft`, 201 "
        "with the draft, which nothing publishes until `POST /api/articles/<id>/publish`."
    ),
)
def create_article(
    request: HttpRequest,
    payload: ArticleCreateIn,
    idempotency_key: str = Header(
        None,
        alias="Idempotency-Key",
        min_length=1,
        max_length=255,
        pattern=r"^[\x21-\x7e]+$",
        description="Any 1-255 visible ASCII characters, e.g. a UUID; kept per user.",
    ),
):
    _known_query(request)
    draft = payload.status == CreateStatus.draft
    user = token_user(request)
    # A draft is a story: the stories' permission, as the desk's (a review's finding:
    # add_article was taken for it).
    check_permission(user=user, need=CREATE_DRAFT if draft else CREATE)
    if not draft and not user.has_perm(CHANGE):
        # It goes out as soon as a worker takes it: publishing, which needs the permission
        # to change articles, as Article → Add in the admin does (a review's finding: the
        # API published with `add_article` alone once the admin refused it). Before the
        # content is looked at (another's: a 400 said whether another's slug was taken).
        raise PermissionMissing(
            f"{user.get_username()} may not publish articles: one created without "
            f'"status": "draft" goes out at once, which needs the permission {CHANGE}, as '
            'in the admin. Send "status": "draft" to save it as a draft (which needs '
            f"{ADD_STORY}, as on the desk)."
        )
    fields = _content(payload, draft=draft)  # a draft's rules for a draft: its body may be empty
    if draft:
        if idempotency_key is not None:
            raise ApiError(
                "An Idempotency-Key is not taken with status=draft: save the draft without "
                "it (a repeated draft is harmless to readers; DELETE the spare one)."
            )
        story = story_save(saved_by=user.get_username(), **fields)
        return Status(201, draft_out(story))
    if idempotency_key is None:
        return Status(201, article_out(article_create(**fields)))
    article, created = article_create_once(
        user=user,
        key=idempotency_key,
        # The request with every field, a default left out or spelled out alike (a
        # review's finding: a retry that sent `"tags": []` was "another request body").
        digest=request_digest(payload.model_dump(mode="json")),
        # A key spent before this release holds the digest of the fields sent only.
        former_digest=request_digest(payload.model_dump(mode="json", exclude_unset=True)),
        fields=fields,
    )
    return Status(201 if created else 200, article_out(article))


@api.get(
    "/articles",
    auth=BearerToken(READ),
    response={200: ArticlePage, **COMMON},
    summary="List articles, newest first (filter by status)",
)
def list_articles(
    request: HttpRequest,
    status: StatusFilter = Query(None, description="Only articles with this status."),
    page: int = Query(1, ge=1, le=MAX_PAGE),
    page_size: int = Query(50, ge=1, le=200),
):
    _known_query(request, "status", "page", "page_size")
    articles = Article.objects.order_by("-id")
    if status is not None:
        articles = articles.filter(status=status.value)
    articles = articles.defer("body", "published_body")
    return _page(articles, page, page_size, partial(article_out, with_body=False))


@api.get(
    "/drafts",
    auth=BearerToken(READ),
    response={200: DraftPage, **COMMON},
    summary="List drafts (on no page: never published, or withdrawn), last saved first",
)
def list_drafts(
    request: HttpRequest,
    page: int = Query(1, ge=1, le=MAX_PAGE),
    page_size: int = Query(50, ge=1, le=200),
):
    _known_query(request, "page", "page_size")
    drafts = Story.objects.filter(state=StoryState.DRAFT, trashed_at__isnull=True)
    drafts = drafts.order_by("-updated_at", "-id").defer("body")
    return _page(drafts, page, page_size, partial(draft_out, with_body=False))


@api.get(
    "/tags",
    auth=BearerToken(READ),
    response={200: list[TagOut], **COMMON},
    summary="The tags live articles carry, most used first (what the desk completes from)",
)
def list_tags(
    request: HttpRequest,
    prefix: str = Query("", max_length=100, description="Only tags that begin with this."),
    limit: int = Query(100, ge=1, le=1000),
):
    _known_query(request, "prefix", "limit")
    try:  # no tag has such a character, and PostgreSQL refuses NUL in a query
        validate_xml_chars(prefix)
    except DjangoValidationError as exc:
        raise DjangoValidationError({"prefix": exc.messages}) from None
    return [
        {"name": name, "articles": count}
        for name, count in publishing_selectors.tags_in_use(prefix=prefix, limit=limit)
    ]


def _page(rows, page: int, page_size: int, out) -> dict:
    start = (page - 1) * page_size
    return {
        "count": rows.count(),
        "page": page,
        "page_size": page_size,
        "items": [out(row) for row in rows[start : start + page_size]],
    }


@api.get(
    "/articles/{id}",
    auth=BearerToken(READ),
    response={200: ArticleOut | DraftOut, **ONE},
    summary="One article, or a draft (status draft) of that id",
)
def get_article(request: HttpRequest, response: HttpResponse, id: int = ArticleId):
    _known_query(request)
    article = Article.objects.filter(pk=id).first()
    if article is not None:
        return _tagged(response, article_out(article), article.content_hash)
    story = _draft(id)
    return _tagged(response, draft_out(story), story.version)


@api.get(
    "/articles/{id}/draft",
    auth=BearerToken(READ),
    response={200: DraftOut, **ONE},
    summary="The draft of an article: its text as last saved in the desk, with its version",
    description=(
        "What `…/publish` would put live, and the version its If-Match names (a live "
        "article's draft may have changes not published yet, which `GET /articles/{id}` "
        "does not show). 404 when there is none (an article made by the API or an "
        "import and never opened in the desk)."
    ),
)
def get_article_draft(request: HttpRequest, response: HttpResponse, id: int = ArticleId):
    _known_query(request)
    story = _draft(id)
    return _tagged(response, draft_out(story), story.version)


def _tagged(response: HttpResponse, out: dict, tag: str | int) -> dict:
    """`out`, its ETag on the response: an article's content hash, a draft's version;
    what a PATCH's or a publish's If-Match names to be refused (412) if it changed."""
    response["ETag"] = f'"{tag}"'
    return out


def _draft(story_id: int, *, lock: bool = False) -> Story:
    """The story of this id that is not in the trash (locked, with `lock`), or 404."""
    stories = Story.objects.select_for_update() if lock else Story.objects.all()
    return get_object_or_404(stories, pk=story_id, trashed_at__isnull=True)


def _draft_of(
    request: HttpRequest, story_id: int, *, need: Need, other: Need, lock: bool = False
) -> Story:
    """The draft of this id (as `_draft`), for a token whose user has `need`, the
    stories' permission for it (403 otherwise: a review's finding, the articles' was
    taken for a draft's edit and delete). No such draft is a 404 only for a user who has
    `other` too, the article's: who may do it to one kind only is not told which ids
    exist (docs/api.md, "401 and 403")."""
    user = token_user(request)
    check_permission(user=user, need=need)
    try:
        return _draft(story_id, lock=lock)
    except Http404:
        check_permission(user=user, need=other)
        raise


@api.patch(
    "/articles/{id}",
    auth=BearerToken(EDIT | EDIT_DRAFT),
    response={200: ArticleOut | DraftOut, 412: ErrorOut, 413: ErrorOut, **ONE},
    summary="Edit an article (only the fields given); changed content is published again",
    description=(
        "A draft's edit stays a draft. `If-Match: <version>` (the draft's `version`) "
        "refuses the edit with 412 when the draft was saved since. An article has no "
        "version: an If-Match other than `*` is a 412 there."
    ),
)
def patch_article(
    request: HttpRequest,
    response: HttpResponse,
    payload: ArticlePatchIn,
    id: int = ArticleId,
    if_match: str = IfMatch,
):
    _known_query(request)
    version = _version(if_match)  # refused when it is neither, as for a draft
    # Read under the row's lock, so that concurrent PATCHes of one article each change
    # only their own fields: a save writes every content field from the copy it holds,
    # and two PATCHes that read before either wrote lost one's change (a review's
    # finding). A delete or withdraw meanwhile: the draft's path, or 404, not a 500.
    # (The row's lock, then in the save the address's: the order every save takes.)
    with transaction.atomic():
        article = Article.objects.select_for_update().filter(pk=id).first()
        if article is None:
            # A draft, read under its story's lock for the same reason: story_save
            # writes every field of the copy it is given (a review's finding: three
            # PATCHes at once kept one's change). No article's row is held here, so this
            # keeps the order of story_publish and story_withdraw: the story's, then
            # the article's (docs/design.md, "Drafts").
            story = _draft_of(request, id, need=EDIT_DRAFT, other=EDIT, lock=True)
            story = _patch_draft(request, payload, story, version)
            return _tagged(response, draft_out(story), story.version)
        check_permission(user=token_user(request), need=EDIT)
        fields = _content(payload, base=article)
        if version is not None and version != article.content_hash:
            # Invalid content is a 400 first, as for a draft (story_save validates
            # before it compares).
            _check_without_saving(fields, article)
            _refuse_version(if_match, version, article, retry="GET it, merge, and PATCH")
        if fields:
            article_update(article=article, **fields)
            article.refresh_from_db()
    return _tagged(response, article_out(article), article.content_hash)


def _refuse_version(
    if_match: str | None,
    version: int | str,
    article: Article,
    *,
    retry: str,
    undone: str = "changed",
) -> NoReturn:
    """An If-Match that is not the article's ETag: RFC 9110 §13.1.1's 412, not ignored (a
    review's finding: an If-Match naming a draft that was published meanwhile edited the
    live article; another's: two clients' PATCHes, the second undoing the first's; and
    DELETE and withdraw ignored it). `retry`: what to do ("GET it, merge, and PATCH");
    `undone`: what nothing was."""
    now = f'"{article.content_hash}"'
    if isinstance(version, str) and version.startswith(WEAK):
        raise DraftConflict(
            f"If-Match: {if_match} is a weak entity tag, which If-Match never matches (RFC "
            f"9110 §13.1.1): send the ETag as GET gives it, {now}; nothing was {undone}."
        )
    if isinstance(version, str):
        raise DraftConflict(
            f"The article was changed since If-Match: {if_match}: its ETag is now {now}. "
            f"{retry} again with If-Match: {now}; nothing was {undone}."
        )
    raise DraftConflict(
        f"If-Match: {if_match} names a draft's version, but this is an article "
        f"(published, or on its way), whose ETag is {now}. GET it again to see it as it "
        f"is now; nothing was {undone}."
    )


def _locked_article(article_id: int) -> Article | None:
    """The article of this id read under its row's lock, its story's taken first (the
    order of story_publish, story_withdraw and story_trash), inside the caller's
    transaction: no save, publish or withdraw comes between a check of it and what the
    request does to it."""
    Story.objects.select_for_update().filter(pk=article_id).first()
    return Article.objects.select_for_update().filter(pk=article_id).first()


def _unquoted(if_match: str) -> str:
    text = if_match.strip()
    if text.startswith('W/"'):  # a weak tag is a quoted one
        text = text[2:]
    if len(text) >= 2 and text[0] == text[-1] == '"':
        text = text[1:-1]
    return text


def _version(if_match: str | None) -> int | str | None:
    """If-Match's version: a draft's number, or an article's ETag (its content hash),
    bare as docs/api.md shows it or as the entity tag HTTP clients send (`"3"`,
    `W/"3"`); `*` (any version) checks none."""
    if if_match is None or if_match.strip() == "*":
        return None
    text = _unquoted(if_match)
    if CONTENT_TAG.fullmatch(text):
        # Compared as sent: one in capitals or weak matches no article (a 412, not 400).
        return WEAK + text if if_match.strip().startswith(WEAK) else text
    if not (text.isascii() and text.isdigit()):
        raise NinjaValidationError(
            [
                {
                    "loc": ("header", "If-Match"),
                    "msg": (
                        f"{if_match!r} is neither a draft's version (a number, or "
                        '"3") nor an article\'s ETag (as GET gives it).'
                    ),
                }
            ]
        )
    return int(text)


def _patch_draft(request: HttpRequest, payload, story: Story, if_match: int | str | None) -> Story:
    """The draft `story` (read under its lock) with the fields given changed."""
    current = {name: getattr(story, name) for name in DRAFT_FIELDS}
    fields = _content(payload, base=story)
    if isinstance(if_match, str):  # an article's ETag: it was withdrawn since
        _check_version(story, if_match, then=MERGE_AGAIN)
    try:
        return story_save(
            story_id=story.pk,
            saved_by=token_user(request).get_username(),
            if_version=if_match if isinstance(if_match, int) else None,
            **{**current, **fields},
        )
    except StoryConflict as exc:
        raise DraftConflict(
            f"The draft was saved since version {exc.given}: it is at version "
            f"{exc.current}. GET it, merge, and PATCH again with If-Match: {exc.current}."
        ) from exc


@api.delete(
    "/articles/{id}",
    auth=BearerToken(REMOVE | REMOVE_DRAFT),
    response={204: None, 412: ErrorOut, **ONE},
    summary="Delete an article (its page leaves the site; its text waits in the trash)",
    description=(
        "`If-Match` (the article's ETag, or a draft's version) refuses the delete with "
        "412 when what the id holds changed since."
    ),
)
def delete_article(request: HttpRequest, id: int = ArticleId, if_match: str = IfMatch):
    _known_query(request)
    version = _version(if_match)
    if version is not None:
        _delete_if_unchanged(request, id, if_match, version)
        return Status(204, None)
    article = Article.objects.filter(pk=id).first()
    if article is not None:
        check_permission(user=token_user(request), need=REMOVE)
    # The trash keeps a deleted article's story (publishing.signals). A delete that
    # finds the row gone (a withdraw took it meanwhile, leaving the draft) deletes
    # nothing: the draft goes to the trash then, or this is a 404 (another delete took
    # it). A review's finding: 204, and the draft kept for a later publish.
    if article is None or not article.delete()[0]:
        story_trash(story_id=_draft_of(request, id, need=REMOVE_DRAFT, other=REMOVE).pk)
    return Status(204, None)


def _delete_if_unchanged(
    request: HttpRequest, article_id: int, if_match: str | None, version: int | str
) -> None:
    """The DELETE with If-Match (a review's finding: a stale one deleted all the same):
    checked and done under the rows' locks, so nothing saved between is deleted unseen.
    An article's ETag never matches a draft, nor a draft's version an article."""
    with transaction.atomic():
        article = _locked_article(article_id)
        if article is not None:
            check_permission(user=token_user(request), need=REMOVE)
            if version != article.content_hash:
                _refuse_version(
                    if_match, version, article, retry="GET it, and DELETE", undone="deleted"
                )
            article.delete()
            return
        story = _draft_of(request, article_id, need=REMOVE_DRAFT, other=REMOVE, lock=True)
        _check_version(story, version, then=DELETE_AGAIN)
        story_trash(story_id=story.pk)


@api.post(
    "/articles/{id}/publish",
    auth=BearerToken(PUBLISH),
    response={200: ArticleOut, 412: ErrorOut, **ONE},
    summary="Publish the draft of this id (its article is made, or updated, and published)",
    description=(
        "`If-Match: <version>` (the draft's `version`) refuses the publish with 412 when "
        "the draft was saved since: what was reviewed is what goes live."
    ),
)
def publish_article(
    request: HttpRequest,
    response: HttpResponse,
    id: int = ArticleId,
    if_match: str = IfMatch,
):
    _known_query(request)
    version = _version(if_match)
    article = Article.objects.filter(pk=id).first()
    if article is not None:
        story_of_article(article)  # an article without a story: publishing changes nothing
    with transaction.atomic():
        # Under the story's lock, which story_publish takes again: no save can come
        # between the check and the publish (a review's finding: If-Match was ignored,
        # and a writer's later text went live instead of the reviewed one), and a delete
        # that came first is a 404 here, as it is after it (another review's: a 400
        # saying the story "is not valid", in the trash).
        story = _draft(id, lock=True)
        if version is not None:
            _check_version(story, version)
        article = story_publish(story_id=id)
    article.refresh_from_db()
    return _tagged(response, article_out(article), article.content_hash)


# What a 412 of a draft tells the client to do, with the version it is at now.
MERGE_AGAIN = "GET it, merge, and PATCH again with If-Match: {now}"
REVIEW_AGAIN = (
    "GET /api/articles/{id}/draft, review it, and publish with If-Match: {now}; nothing "
    "was published"
)
DELETE_AGAIN = "GET it, and DELETE again with If-Match: {now}; nothing was deleted"


def _check_version(story: Story, version: int | str, *, then: str = REVIEW_AGAIN) -> None:
    """DraftConflict (412) unless the draft is at `version` (an article's ETag never
    matches a draft: a publish checks what is to go live, the draft's version). `then`:
    what to do, with `{id}` and `{now}`, the draft's version."""
    if story.version != version:
        named = f"version {version}" if isinstance(version, int) else f'ETag "{version}"'
        then = then.format(id=story.pk, now=story.version)
        raise DraftConflict(
            f"The draft was saved since {named}: it is at version {story.version}. {then}."
        )


@api.post(
    "/articles/{id}/withdraw",
    auth=BearerToken(PUBLISH),
    response={200: DraftOut, 409: ErrorOut, 412: ErrorOut, **ONE},
    summary="Withdraw an article: off the blog as a delete takes it, back to draft",
    description=(
        "`If-Match` (the article's ETag) refuses the withdraw with 412 when the article "
        "was changed since."
    ),
)
def withdraw_article(request: HttpRequest, id: int = ArticleId, if_match: str = IfMatch):
    _known_query(request)
    version = _version(if_match)
    if not Article.objects.filter(pk=id).exists():
        _draft(id)  # 404 when there is no draft either
    try:
        with transaction.atomic():
            # Checked under the rows' locks story_withdraw takes again (a review's
            # finding: a stale If-Match withdrew all the same, a garbage one too).
            article = _locked_article(id) if version is not None else None
            if article is not None and version is not None and version != article.content_hash:
                _refuse_version(
                    if_match, version, article, retry="GET it, and withdraw", undone="withdrawn"
                )
            story = story_withdraw(article_id=id, saved_by=token_user(request).get_username())
    except NotOnTheBlog as exc:  # a draft, or withdrawn (or deleted) while this one waited
        raise NotWithdrawable("This is a draft already: it is on no page.") from exc
    return draft_out(story)


@api.post(
    "/articles/{id}/requeue",
    auth=BearerToken(REQUEUE),
    response={200: ArticleOut, 409: ErrorOut, **ONE},
    summary="Requeue a dead article (pending again, attempts reset), as the admin's action",
)
def requeue_article(request: HttpRequest, id: int = ArticleId):
    _known_query(request)
    # The answer is the row as the requeue left it, read before its message goes (on
    # commit): read after, a quick worker had often published it already. None: there
    # is none, or it was deleted meanwhile (a review's finding: a 500).
    with transaction.atomic():
        requeued = article_requeue(article_id=id)
        article = Article.objects.filter(pk=id).first()
    if article is None:
        raise Http404
    if not requeued:
        raise NotRequeueable(f"Only a dead article can be requeued; this one is {article.status}.")
    return article_out(article)


@api.post(
    "/webhook-deliveries/{id}/requeue",
    auth=BearerToken(REQUEUE_DELIVERY),
    response={200: DeliveryOut, 409: ErrorOut, **ONE},
    summary=("Requeue a dead webhook delivery (pending again, tries reset), as the admin's action"),
)
def requeue_delivery(request: HttpRequest, id: int = DeliveryId):
    _known_query(request)
    with transaction.atomic():  # as requeue_article: the row as the requeue left it
        requeued = delivery_requeue(delivery_id=id)
        delivery = WebhookDelivery.objects.filter(pk=id).first()
    if delivery is None:  # none, or deleted meanwhile
        return Status(404, {"detail": "No webhook delivery with this id.", "errors": {}})
    if not requeued:  # not dead, or superseded by a later event of its article
        raise DeliveryNotRequeueable(delivery_not_requeued_why(delivery_id=id))
    return delivery_out(delivery)
