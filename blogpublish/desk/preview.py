"""The preview: the article as the site would render it, from the form's unsaved text.

The page is built by the very function that writes the published page
(`blogpublish.site.documents.article_page`: the same Markdown renderer, sanitiser and
templates), from an `Article` that is never saved. The desk shows it in a sandboxed
frame (no scripts), with the site's own Content-Security-Policy in a `<meta>` element
(blogpublish.csp), so what the browser allows in the preview is what it allows on the
site.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError
from django.http import HttpRequest, QueryDict
from django.utils import timezone
from django.utils.html import escape

from blogpublish.csp import meta_policy
from blogpublish.desk import limits
from blogpublish.site import documents
from publishing.forms import TagsField
from publishing.models import (
    READER_FIELDS,
    TITLE_MAX_LENGTH,
    Article,
    normalize_body,
    normalize_reader_fields,
    normalize_slug,
    slug_from_title,
)
from publishing.services import story_undated_date
from publishing.text_limits import validate_xml_chars
from publishing.validators import BODY_MAX_BYTES, validate_body_size, validate_publish_at

UNTITLED = "(no title yet)"


@dataclass
class Preview:
    html: str  # the whole page, "" when the body cannot be rendered
    problems: list[str] = field(default_factory=list)  # what publishing would refuse


# The date's errors the preview says as the form does (Django's code for a time that
# does not exist, or exists twice, in the current time zone; ours for the years).
PASSED_ON = frozenset({"publish_at_range", "ambiguous_timezone"})


def publish_at_from(data, *, article_id: int | None = None) -> tuple:
    """The form's date and time (the admin's split widget), or now while they are not
    a valid date yet. A draft's empty date means "when published": the date publishing
    would give it (the one it has kept since its first publish, or now), no problem."""
    if data.get("draft") and not (data.get("publish_at_0") or data.get("publish_at_1")):
        return story_undated_date(story_id=article_id), []
    try:
        value = forms.SplitDateTimeField().clean(
            [data.get("publish_at_0", ""), data.get("publish_at_1", "")]
        )
        validate_publish_at(value)  # one past the years readers' pages can show
    except ValidationError as exc:
        # What the form would say: a date past the calendar (0001-01-01 in Berlin was a
        # 500 here), and a time the clocks skip or pass twice in the site's zone (a
        # daylight-saving change: the form's "couldn't be interpreted in time zone…").
        if exc.code in PASSED_ON:
            return timezone.now(), list(exc.messages)
        return timezone.now(), ["The publication date is not a valid date and time yet."]
    return value, []


def body_problems(body: str) -> list[str]:
    problems = []
    for validate in (validate_body_size, validate_xml_chars):
        try:
            validate(body)
        except ValidationError as exc:
            problems += list(exc.messages)
    return problems


def preview_of(data) -> Preview:
    """The page for the form data `data` (a QueryDict or dict). Writes no row. The form's
    `article_id` (the article's or the story's: they share it) is the article the page
    is of: the page's neighbours and related articles leave it out, as its published
    page does, and an undated draft shows the date it would be published with."""
    title = " ".join((data.get("title") or "").split())[:TITLE_MAX_LENGTH] or UNTITLED
    body = normalize_body(data.get("body") or "")
    slug = normalize_slug(data.get("slug") or "") or slug_from_title(title)
    article_id = object_id(data.get("article_id"))
    publish_at, problems = publish_at_from(data, article_id=article_id)
    problems += body_problems(body)
    if len(body.encode("utf-8", "surrogatepass")) > BODY_MAX_BYTES:
        return Preview(html="", problems=problems)  # over 1 MiB: not worth rendering
    shown = _shown(data)
    try:  # what the form's field refuses before the article's validators see a list
        TagsField().clean(data.get("tags") or "")
    except ValidationError as exc:
        problems += exc.messages
        shown.pop("tags", None)
    article = Article(
        id=article_id, title=title, slug=slug, body=body, publish_at=publish_at, **shown
    )
    page = documents.article_page(article)  # under the size limit, any Markdown renders
    return Preview(html=with_policy_meta(page), problems=problems)


# The largest id a bigint column holds: a larger one would be an error of the query.
ID_MAX = 2**63 - 1


def object_id(value) -> int | None:
    """A positive id as the form sent it (digits 0-9 only), or None for anything else
    (empty on a new article's page; a page's id is only ever left out of listings)."""
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 19:
        number = int(value)
        return number if 0 < number <= ID_MAX else None
    return None


def _shown(data) -> dict:
    """The reader fields as the form has them (a description, the language, a byline,
    tags), normalised as a save normalises them, so the preview shows them as readers
    will; a value the article's own validators refuse is left out here (the form says
    why on save)."""
    article = Article(**{name: data.get(name) or "" for name in READER_FIELDS})
    normalize_reader_fields(article)
    others = [f.name for f in Article._meta.fields if f.name not in READER_FIELDS]
    try:
        article.clean_fields(exclude=others)
        refused = set()
    except ValidationError as exc:
        refused = set(exc.message_dict)
    return {name: getattr(article, name) for name in READER_FIELDS if name not in refused}


def guarded_preview_of(request: HttpRequest) -> Preview:
    """preview_of(request.POST) within the preview's limits (blogpublish.desk.limits):
    counted against the writer's budget, in one of the site's render slots, in a child
    process stopped after PREVIEW_TIME_LIMIT. The form is parsed only once the limits
    let it through. PreviewRefused when a limit says not now; a render stopped for time
    is a Preview without a page that says so."""
    # The admin's views have a signed-in user, whose pk is not None.
    limits.take_from_budget(request.user.pk)  # type: ignore[arg-type]
    with limits.render_slot():
        data: QueryDict = request.POST
        if data.get("article_id") and data.get("draft") and not _may_see_stories(request):
            # A draft's id names a story whose kept date the preview would show: only
            # for a writer who may see stories (one with add_story alone learned which
            # ids exist and when they were first published: a review of the mend). An
            # article's only leaves it out of its listings, for anyone the preview serves.
            data = data.copy()
            data.pop("article_id")
        try:
            return limits.run_with_time_limit(preview_of, data, seconds=settings.PREVIEW_TIME_LIMIT)
        except limits.PreviewTooSlow as exc:
            return Preview(html="", problems=[str(exc)])


def _may_see_stories(request: HttpRequest) -> bool:
    user = request.user
    return user.has_perm("publishing.view_story") or user.has_perm("publishing.change_story")


def with_policy_meta(page: str) -> str:
    """The page with the site's policy as its first element in <head>."""
    meta = f'<meta http-equiv="Content-Security-Policy" content="{escape(meta_policy())}">'
    return page.replace("<head>", "<head>\n" + meta, 1)


def shared_page(story) -> str:
    """The story's draft as its published page will look, for a shared preview link
    (blogpublish.views.story_preview): the site's own page, marked noindex."""
    article = Article(
        id=story.pk,  # the story's article has its id: its listings leave it out
        title=story.title,
        slug=story.slug,
        body=story.body,
        publish_at=story.publish_at or story_undated_date(story_id=story.pk),
        description=story.description,
        language=story.language,
        byline=story.byline,
        tags=story.tags,
    )
    page = documents.article_page(article)
    return page.replace("<head>", '<head>\n<meta name="robots" content="noindex, nofollow">', 1)
