"""What each file of the site contains: pure functions from data to text.

One listed article must never cost a whole shared document (issue 8). Every text that
comes from an article goes through `strip_xml_illegal`: what XML 1.0 cannot carry (a
control character, U+FFFE) is refused at validation, but rows written past validation
exist, and such a character would make the whole feed unserialisable or not
well-formed, so the documents show the text without it and `report` says so. And each
entry is built on its own: an entry that still fails (its excerpt cannot be rendered,
the feed cannot serialise it) is left out of that document and reported, and the
others are written. `report` defaults to a log line; the refresher passes
`blogpublish.site.problems.report`, which also alerts, once a day per article.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from html import escape, unescape
from typing import TypeVar

from django.conf import settings
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.dates import MONTHS
from django.utils.feedgenerator import Atom1Feed
from django.utils.safestring import SafeString

from blogpublish.desk.images import IMAGE_REF_RE
from blogpublish.rendering import (
    plain_excerpt,
    render_markdown,
    render_markdown_absolute,
    render_markdown_and_excerpt,
)
from blogpublish.site import figures, look, paths, selectors
from blogpublish.site.selectors import Entry
from publishing.models import content_hash_of
from publishing.reader_fields import LANGUAGE_RE, distinct_tags, tag_slug
from publishing.text_limits import first_xml_illegal, strip_page_illegal, strip_xml_illegal

logger = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class EntryProblem:
    """An entry a shared document could not show as stored."""

    entry: Entry
    document: str  # "the front page", "archive page 3", "the feed", "a sitemap chunk"
    reason: str
    # True: not in this document at all. False: shown without what XML cannot carry.
    left_out: bool


Report = Callable[[EntryProblem], None]


def log_problem(problem: EntryProblem) -> None:
    what = "left out of" if problem.left_out else "repaired in"
    logger.warning("article %s %s %s: %s", problem.entry.id, what, problem.document, problem.reason)


def _clean(text: str, *, field: str, entry: Entry, document: str, report: Report) -> str:
    found = first_xml_illegal(text)
    if found is None:
        return text
    position, char = found
    reason = (
        f"its {field} has characters XML 1.0 cannot carry (the first: U+{ord(char):04X} "
        f"at position {position}); shown without them. It was saved past validation: "
        "edit the article to fix it."
    )
    report(EntryProblem(entry, document, reason, left_out=False))
    return strip_xml_illegal(text)


def _each(
    entries: Iterable[Entry], build: Callable[[Entry], T], *, document: str, report: Report
) -> Iterator[tuple[Entry, T]]:
    """(entry, build(entry)) for every entry whose build succeeds; the others reported."""
    for entry in entries:
        try:
            yield entry, build(entry)
        except Exception as exc:  # RecursionError, a bug: this entry only
            reason = f"{type(exc).__name__}: {exc}"[:500]
            report(EntryProblem(entry, document, reason, left_out=True))
            logger.debug("entry %s of %s", entry.id, document, exc_info=True)


def site_context() -> dict:
    return {
        "site_title": settings.SITE_TITLE,
        "site_language": settings.SITE_LANGUAGE,
        "page_dir": text_direction(settings.SITE_LANGUAGE),
        "home_href": paths.archive_href(None),
        "feed_href": f"{paths.site_path()}/{paths.FEED}",
        "json_feed_href": f"{paths.site_path()}/{paths.JSON_FEED}",
        "favicon_href": f"{paths.site_path()}/{paths.FAVICON}",
    }


def shown_language(value: str) -> str:
    """A stored language tag as a page or a feed carries it: a value that is not one
    (written past validation: a control character in it made feed.xml unreadable, a
    review's finding) is none, and the site's language is said instead."""
    return value if value and LANGUAGE_RE.fullmatch(value) else ""


def reader_fields(article) -> dict:
    """An article's (or a live version's, or a draft's) description, language, byline
    and tags; empty for an object that has none."""
    return {
        "description": getattr(article, "description", "") or "",
        "language": shown_language(getattr(article, "language", "") or ""),
        "byline": getattr(article, "byline", "") or "",
        "tags": [tag for tag in getattr(article, "tags", None) or () if isinstance(tag, str)],
    }


def json_ld(data: dict) -> str:
    """JSON for a <script type="application/ld+json"> block: `<`, `>` and `&` escaped
    as JSON escapes, so no text of an article can close the block (`</script>`)."""
    text = json.dumps(data, ensure_ascii=False, sort_keys=True)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


# An <img>'s address in rendered HTML (the sanitiser writes attributes in double quotes).
IMG_SRC_RE = re.compile(r"<img\s[^>]*?\bsrc=\"([^\"]*)\"")


def first_image_url(html: str | None, body: str = "") -> str:
    """The absolute address of the first uploaded image the rendered `html` shows (an
    <img> of this site's media/<sha256>.<ext>: not a code span's text nor a link's
    address, nor another site's file of that name, which the Markdown's text also names:
    a review's finding), or ''; without the HTML (a feed of summaries), the first the
    Markdown `body` names."""
    media = f"{paths.site_path()}/"
    if html is None:
        plain = IMAGE_REF_RE.search(body)
        return paths.absolute(f"{media}{plain[0]}") if plain else ""
    origin = paths.absolute("/").rstrip("/")
    for match in IMG_SRC_RE.finditer(html):
        src = match[1].removeprefix(origin)
        if src.startswith(media) and IMAGE_REF_RE.fullmatch(src[len(media) :]):
            return paths.absolute(src)
    return ""


def tag_links(tags: Iterable[str]) -> list[dict]:
    """Each tag's name (stripped of what XML cannot carry) and its page's address."""
    names = distinct_tags(strip_xml_illegal(tag) for tag in tags)
    return [{"name": name, "href": paths.tag_href(tag_slug(name))} for name in names if name]


def robots_txt() -> str:
    """Every crawler welcome; the sitemap announced (sitemaps.org, "Submitting")."""
    sitemap = paths.absolute(f"{paths.site_path()}/{paths.SITEMAP}")
    return f"User-agent: *\nAllow: /\n\nSitemap: {sitemap}\n"


def not_found_page() -> str:
    """The page for an address the site does not have: the site view answers 404 with
    it, and a bucket serving the site names it as its error document (docs/site.md)."""
    return render_to_string(
        "blogpublish/404.html", {**site_context(), "description": settings.SITE_TITLE}
    )


def moved_page(slug: str) -> str:
    """The page at a former address of an article (FormerAddress): sends the reader on
    to its live page at `slug` at once, as Hugo's alias pages do (a refresh of 0
    seconds, the live page as canonical, kept out of search results). It names the
    address alone, so an edit of the article changes nothing here, and carries a mark
    (`MOVED_MARK`) by which the full check knows it, where a live page should be. Not a
    page of the site's look, never in the sitemap (docs/site.md, "Former addresses")."""
    return render_to_string(
        "blogpublish/moved.html",
        {**site_context(), "href": paths.article_href(slug), "url": paths.article_url(slug)},
    )


# What `moved_page` writes near its top (within CONTENT_MARK_WITHIN).
MOVED_MARK = re.compile(rb'<meta name="blogpublish-moved" content="')
_MOVED_HREF = re.compile(rb'<meta name="blogpublish-moved" content="([^"<>]*)">')


def moved_href(head: bytes) -> str | None:
    """Where a page `moved_page` wrote sends readers (its root-relative address), from
    its first CONTENT_MARK_WITHIN bytes; None for any other page. An address that is not
    a path of this site (`//host`, a scheme) is None too: the page's meta refresh
    still works, and no redirect names another site."""
    found = _MOVED_HREF.search(head[:CONTENT_MARK_WITHIN])
    if found is None:
        return None
    href = unescape(found.group(1).decode("utf-8", "replace"))
    if not href.startswith("/") or href.startswith("//") or "\\" in href:
        return None
    return href


# The site's icon: a letter on the accent colour, as SVG (every current browser takes
# an SVG favicon; the CSP's img-src 'self' allows it).
FAVICON_SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64">'
    '<rect width="64" height="64" rx="12" fill="#0b5cad"/>'
    '<text x="32" y="46" font-family="Georgia, serif" font-size="40" '
    'text-anchor="middle" fill="#fffefb">{letter}</text></svg>\n'
)


def favicon() -> str:
    title = settings.SITE_TITLE.strip() or "b"
    return FAVICON_SVG.format(letter=escape(title[0].upper()))


def rfc3339(moment: datetime) -> str:
    """UTC, to the second: 2025-03-01T12:00:00Z."""
    return moment.astimezone(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def display_date(moment: datetime) -> str:
    """'1 March 2025' in the site's time zone. Formatted here rather than with the
    template's `date` filter, which costs most of a 50-entry page's rendering; and
    without `dateformat` too: the same text ("j F Y") at a tenth of the cost."""
    local = timezone.localtime(moment)
    return f"{local.day} {MONTHS[local.month]} {local.year}"


# What `article_page` writes near the top of a page: the content hash it shows.
CONTENT_MARK = re.compile(rb'<meta name="blogpublish-content" content="([0-9a-f]{64})">')
# The mark is within the first bytes of a page (after `<meta charset>`).
CONTENT_MARK_WITHIN = 512


def page_content_hash(head: bytes | None) -> str | None:
    """The content hash a page's first bytes carry; None when it has none (missing,
    or written before pages carried it)."""
    found = CONTENT_MARK.search(head or b"")
    return found[1].decode() if found else None


# Every page the site writes at the top of SITE_ROOT (an article's, a former address's)
# carries one of its marks within CONTENT_MARK_WITHIN bytes: how the full check tells the
# site's folders from anything else in SITE_ROOT, which it must never remove.
SITE_MARK = re.compile(rb'<meta name="blogpublish-(?:content|moved)" content="')


def is_site_page(head: bytes | None) -> bool:
    """Did this site write the page whose first bytes are `head`?"""
    return bool(SITE_MARK.search((head or b"")[:CONTENT_MARK_WITHIN]))


# What `article_page` writes after the content mark: which neighbours its previous and
# next links name (neighbours_mark). Not part of the content hash: a publish of another
# article changes it, and the refresher's pass writes such a page again (docs/site.md,
# "Previous and next").
NEIGHBOURS_MARK = re.compile(rb'<meta name="blogpublish-neighbours" content="([0-9a-f]{32})">')


def neighbours_mark(around: selectors.Neighbours) -> str:
    """A short hash of what a page's previous and next links show: each neighbour's id,
    slug and title."""
    shown = [[e.id, e.slug, e.title] if e else None for e in (around.older, around.newer)]
    text = json.dumps(shown, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def page_neighbours_mark(head: bytes | None) -> str | None:
    """The neighbours mark a page's first bytes carry; None when it has none (written
    before pages had previous and next links)."""
    found = NEIGHBOURS_MARK.search(head or b"")
    return found[1].decode() if found else None


# Reading speeds: words a minute for text written with spaces, characters a minute for
# Chinese, Japanese and Korean (which have no spaces between words).
def sanitised_text(html: str) -> str:
    """The text of the sanitiser's output (blogpublish.rendering, then figures.fit): its
    tags taken out. The sanitiser escapes every "<" of text and quotes every attribute
    value, so `figures.TAG` reads each tag whole, and what is left is the text that
    nh3 with no tag allowed keeps, without parsing the HTML a third time (a third of
    a re-rendered page's sanitising; docs/performance.md)."""
    return unescape(figures.TAG.sub("", html))


WORDS_PER_MINUTE = 230
CJK_PER_MINUTE = 500
CJK = re.compile(r"[\u1100-\u11ff\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f]")


def reading_minutes(html: str) -> int:
    """Minutes to read the text of `html` (the rendered body), at least one."""
    text = sanitised_text(html)
    cjk = len(CJK.findall(text))
    words = len(CJK.sub(" ", text).split())
    return max(1, math.ceil(words / WORDS_PER_MINUTE + cjk / CJK_PER_MINUTE))


# The tags' and the related articles' parts of an article page, escaped as the
# template's autoescape would (html.escape, quotes too: Django's `escape`), in plain
# Python: Django's loops over them, and format_html_join, cost a tagged page about a
# fifth more than an untagged one (docs/performance.md, "Tags in use").


def _tag_meta(tags: list[str]) -> SafeString:
    """The article's tags for link cards (`article:tag`), a line each."""
    return SafeString(
        "".join(f'\n<meta property="article:tag" content="{escape(tag)}">' for tag in tags)
    )


# Written right to left: languages whose script is, unless a script subtag says
# otherwise (BCP 47: "az-Arab" is, "ku" is not, "ckb" is), and those scripts. With the
# individual languages of the macrolanguages among them (BCP 47 prefers `arz` to
# `ar-arz`; a review found Egyptian Arabic laid out left to right): Arabic's, Persian's
# (pes), Pashto's, Yiddish's, Baluchi's and Southern Uzbek's (Arabic script).
_RTL_LANGUAGES = frozenset(
    """
    ar arc azb bal ckb dv fa glk he iw ji khw ks lrc mzn nqo ota pnb prs ps sd sdh skr syr
    ug ur yi
    aao abh abv acm acq acw acx acy adf aeb aec afb ajp apc apd arb arq ars ary arz auz
    avl ayh ayl ayn ayp bbz pga shu ssh
    pes pbt pbu pst ydd yih bcc bgn bgp uzs syc
    """.split()  # noqa: SIM905 (a table, as one block of words)
)
_RTL_SCRIPTS = frozenset(
    ["Adlm", "Arab", "Hebr", "Mand", "Nkoo", "Rohg", "Samr", "Syrc", "Thaa", "Yezi"]
)


def text_direction(language: str) -> str:
    """ "rtl" for a language tag written right to left, else "ltr". A script subtag is
    read before the extensions (`ar-EG-u-nu-latn` is Arabic, `en-u-nu-arab` English)."""
    parts = language.replace("_", "-").split("-")
    head = []
    for part in parts[1:]:
        if len(part) == 1:  # a singleton: extensions and private use follow
            break
        head.append(part)
    script = next((p for p in head if len(p) == 4 and p.isalpha()), "")
    if script:
        return "rtl" if script.title() in _RTL_SCRIPTS else "ltr"
    return "rtl" if parts[0].lower() in _RTL_LANGUAGES else "ltr"


def chrome_attributes(page_language: str) -> SafeString:
    """The attributes of the site's own words on a page in another language (its links'
    labels, "Tags:", the dates' month names, which are the site's): its `lang`, and its
    `dir` when it is written the other way (WCAG's "language of parts"); "" when the
    page is in the site's language."""
    site = settings.SITE_LANGUAGE
    if page_language.casefold() == site.casefold():
        return SafeString("")
    direction = text_direction(site)
    turned = f' dir="{direction}"' if direction != text_direction(page_language) else ""
    return SafeString(f' lang="{escape(site)}"{turned}')


def _tag_list(links: list[dict], chrome: str = "") -> SafeString:
    """The "Tags:" line under the article, each tag linked to its page; "" without."""
    if not links:
        return SafeString("")
    each = ", ".join(
        f'<a class="tag" rel="tag" href="{escape(t["href"])}">{escape(t["name"])}</a>'
        for t in links
    )
    label = f"<span{chrome}>Tags:</span>" if chrome else "Tags:"
    return SafeString(f'<p class="meta">{label} {each}</p>')


def _related_section(links: list[dict], chrome: str = "") -> SafeString:
    """The related articles' section (RELATED_SECTION finds it); "" without."""
    if not links:
        return SafeString("")
    items = "".join(
        f'\n    <li dir="auto"><a href="{escape(e["href"])}">{escape(e["title"])}</a></li>'
        for e in links
    )
    return SafeString(
        '<aside class="related" aria-labelledby="related-heading">\n'
        f'  <h2 id="related-heading"{chrome}>Related articles</h2>\n'
        f"  <ul>{items}\n  </ul>\n</aside>\n"
    )


def _link(entry: Entry | None) -> dict | None:
    if entry is None:
        return None
    return {"title": strip_xml_illegal(entry.title), "href": paths.article_href(entry.slug)}


# The related articles' section of a page (`article_page`): what `without_related` takes
# out (a related article's later retitle shows at the page's next render, so a page is
# compared with the site's rendering without it; docs/site.md, "Related articles").
RELATED_SECTION = re.compile(r'<aside class="related".*?</aside>\n?', re.DOTALL)


def without_related(html: str) -> str:
    """A page without its related articles' section."""
    return RELATED_SECTION.sub("", html)


def article_page(
    article,
    *,
    around: selectors.Neighbours | None = None,
    related: list[Entry] | None = None,
) -> str:
    """The article's own page. HTML5 reads most characters, but a control character is
    a parse error there too: stripped with the rest of what XML 1.0 cannot carry, and
    what HTML forbids besides (DEL, C1 controls, noncharacters: PAGE_ILLEGAL_RE).
    `around`: its neighbours, `related`: its related articles (selectors.related), each
    read from the database when not given."""
    body = strip_xml_illegal(article.body)
    article_id = getattr(article, "id", None)
    if around is None:
        around = selectors.neighbours(article.publish_at, article_id)
    reader = reader_fields(article)
    shown = {name: strip_xml_illegal(reader[name]) for name in ("description", "byline")}
    if shown["description"]:
        rendered, description = render_markdown(body), shown["description"]
    else:  # the excerpt from the same parse as the page
        rendered, description = render_markdown_and_excerpt(body)
    body_html = figures.fit(rendered, selectors.image_renditions)
    url = paths.article_url(article.slug)
    # Formatted here, not with the template's `date` filter (its cost is most of the
    # template's; display_date): the same text.
    date_iso = timezone.localtime(article.publish_at).isoformat()  # the "c" format's text
    tags = distinct_tags(strip_xml_illegal(tag) for tag in reader["tags"])
    links = tag_links(tags)
    if related is None:
        related = selectors.related(reader["tags"], article_id)
    image = first_image_url(rendered)
    lang = reader["language"] or settings.SITE_LANGUAGE
    chrome = chrome_attributes(lang)
    page = render_to_string(
        "blogpublish/article.html",
        {
            **site_context(),
            "article": article,
            # The content it shows, near the top: the full check reads a page's first
            # bytes to find a stale page (page_content_hash; docs/design.md). The same
            # hash as the article's content_hash (an attempt's) or published_hash (the
            # live version's), computed from what the page shows.
            "content_hash": content_hash_of(
                title=article.title,
                slug=article.slug,
                body=article.body,
                publish_at=article.publish_at,
                # The language as stored, as the article's hash has it: one stored before
                # LANGUAGE_RE was narrowed is shown as none, and its page, marked with
                # what it shows, was written again by every full check (a review's finding).
                **{**reader, "language": getattr(article, "language", "") or ""},
            ),
            # The look it is written in (blogpublish.site.look), beside the content mark:
            # the re-render reads it to find a page of another look.
            "look": look.look(),
            "lang": lang,
            "chrome": chrome,
            "page_dir": text_direction(lang),
            "byline": shown["byline"],
            "byline_href": paths.tag_href(tag_slug(shown["byline"]), "author")
            if shown["byline"]
            else "",
            # Made here, not by loops in the template (`_tag_meta`, above).
            "tag_meta": _tag_meta(tags),
            "tag_list": _tag_list(links, chrome),
            "date_iso": date_iso,
            "date_display": display_date(article.publish_at),
            # Stripped first too: the HTML sanitiser refuses a lone surrogate outright.
            "body_html": body_html,
            "reading_minutes": reading_minutes(body_html),
            "older": _link(around.older),
            "newer": _link(around.newer),
            "neighbours_mark": neighbours_mark(around),
            "related_section": _related_section(
                [link for e in related if (link := _link(e))], chrome
            ),
            "canonical_url": url,
            "description": description,
            "og_type": "article",
            "og_image": image,
            "json_ld": json_ld(
                {
                    "@context": "https://schema.org",
                    "@type": "BlogPosting",
                    "headline": article.title,
                    "description": description,
                    "datePublished": date_iso,
                    "url": url,
                    "mainEntityOfPage": url,
                    "publisher": {"@type": "Organization", "name": settings.SITE_TITLE},
                    "inLanguage": lang,
                    **({"image": image} if image else {}),
                    **(
                        {"author": {"@type": "Person", "name": shown["byline"]}}
                        if shown["byline"]
                        else {}
                    ),
                    **({"keywords": tags} if tags else {}),
                }
            ),
        },
    )
    return strip_page_illegal(page)


def listing_page(
    entries: Iterable[Entry],
    *,
    page: int | None,
    newer_href: str,
    older_href: str,
    report: Report = log_problem,
) -> str:
    """The front page (`page` None: with excerpts) or archive page `page` (titles only)."""
    document = "the front page" if page is None else f"archive page {page}"

    def item(entry: Entry) -> dict:
        clean = _cleaner(entry, document, report)
        excerpt = plain_excerpt(clean(entry.head, "body")) if page is None and entry.head else ""
        # Rendered from a clean body, the excerpt may still hold one: "&#1;" is valid
        # Markdown, and decodes to U+0001. Derived text, so stripped without a word.
        return {
            "title": clean(entry.title, "title"),
            "href": paths.article_href(entry.slug),
            "datetime": rfc3339(entry.publish_at),
            "date": display_date(entry.publish_at),
            "excerpt": strip_xml_illegal(excerpt),
            "tags": tag_links(entry.tags) if page is None else [],
        }

    items = [built for _entry, built in _each(entries, item, document=document, report=report)]
    return strip_page_illegal(
        render_to_string(
            "blogpublish/listing.html",
            {
                **site_context(),
                "page": page,
                "entries": items,
                "newer_href": newer_href,
                "older_href": older_href,
                "canonical_url": paths.absolute(paths.archive_href(page)),
                "og_type": "website",
                "description": (
                    f"{settings.SITE_TITLE}: archive, page {page}" if page else settings.SITE_TITLE
                ),
            },
        )
    )


def _cleaner(entry: Entry, document: str, report: Report) -> Callable[[str, str], str]:
    def clean(text: str, field: str) -> str:
        return _clean(text, field=field, entry=entry, document=document, report=report)

    return clean


class FullAtom1Feed(Atom1Feed):
    """Django's Atom writer, with what it lacks: an entry's `<content type="html">`
    (RFC 4287 4.1.3) and its own `xml:lang` when it differs from the feed's."""

    def item_attributes(self, item: dict) -> dict:
        attrs = super().item_attributes(item)
        if item.get("lang"):
            attrs["xml:lang"] = item["lang"]
        return attrs

    def add_item_elements(self, handler, item: dict) -> None:
        super().add_item_elements(handler, item)
        if item.get("content") is not None:
            handler.addQuickElement("content", item["content"], {"type": "html"})

    def latest_post_date(self) -> datetime:
        """Django's is now when there is no entry: an empty feed (a site with no live
        article, a tag's whose last went) changed every second, every pass wrote it
        again and restore_check never called the site whole (a review's finding). The
        epoch then: RFC 4287 needs an `updated`, any fixed one."""
        if not self.items:
            return datetime(1970, 1, 1, tzinfo=UTC)
        return super().latest_post_date()


# The rendered contents the feeds keep, with their Markdown, in characters (about 1,300
# articles of 8 KB of Markdown and 10 KB of HTML, 24 MB to 96 MB a process): the site's
# feed reads the same 50 entries every pass, and a burst's tags' feeds hold each of its
# articles (and their older ones) once a tag (docs/performance.md, "Tags in use").
CONTENT_CACHE_CHARS = 24_000_000
# None: longer than CONTENT_MAX_CHARS (its HTML not kept).
_contents: OrderedDict[tuple[str, str, str], str | None] = OrderedDict()
_contents_chars = 0
_contents_lock = threading.Lock()  # a web process renders in threads


# An entry whose article's HTML is longer than this carries its summary alone, as with
# FEED_FULL_CONTENT off: a valid 1 MiB body can render to megabytes of HTML (7.5 MB for
# `[a](b)` repeated, 3 s for `>` repeated), and fifty of them made a 31 MB feed that
# every pass rendered again (past the cache), holding SQLite's write lock for 20 s (a
# review's). About 50 times an 8 KB post's; feed readers fetch the whole feed each time.
CONTENT_MAX_CHARS = 400_000


def _content_html(published_hash: str, url: str, body: str) -> str | None:
    """An entry's whole article as HTML: the page's sanitised rendering, its relative
    addresses made absolute against `url`, the page's own address (a footnote's `#fn-1`
    is `<url>#fn-1`); None past CONTENT_MAX_CHARS. Cached by the content and that
    address (which the slug and SITE_URL make, so the same in the site's, a tag's and a
    byline's feed), `published_hash` first so two versions never share a line; the
    least recently used go past CONTENT_CACHE_CHARS."""
    global _contents_chars
    key = (published_hash, url, body)
    with _contents_lock:
        if key in _contents:
            _contents.move_to_end(key)
            return _contents[key]
    html = strip_xml_illegal(render_markdown_absolute(body, base_url=url))
    kept = html if len(html) <= CONTENT_MAX_CHARS else None
    with _contents_lock:
        # Its key holds the body: counted too (an article past the limit keeps no HTML,
        # and uncounted its bodies were never dropped; a review's finding).
        if key not in _contents:
            _contents[key] = kept
            _contents_chars += len(body) + len(kept or "")
        while _contents_chars > CONTENT_CACHE_CHARS and len(_contents) > 1:
            (_hash, _url, dropped_body), dropped = _contents.popitem(last=False)
            _contents_chars -= len(dropped_body) + len(dropped or "")
    return kept


@dataclass(frozen=True)
class FeedItem:
    """One entry as both feeds carry it, its text cleaned (`_clean`)."""

    entry: Entry
    title: str
    url: str
    summary: str
    content_html: str | None
    byline: str
    tags: list[str]
    language: str
    image: str


def feed_item(entry: Entry, *, document: str, report: Report) -> FeedItem:
    """What the feeds say of `entry`: the whole article as HTML (FEED_FULL_CONTENT), a
    summary (its description, else the excerpt), the byline, the tags, the language."""
    clean = _cleaner(entry, document, report)
    # The title first, as every listing reports it: an entry's alert (one a day) names
    # the same problem whichever document met it first.
    title = clean(entry.title, "title")
    body = clean(entry.body or entry.head, "body")
    description = clean(entry.description, "description")
    summary = description or strip_xml_illegal(
        plain_excerpt(selectors.excerpt_source(entry.published_hash, body))
    )
    full = settings.FEED_FULL_CONTENT and entry.body
    url = paths.article_url(entry.slug)
    language = shown_language(entry.language)
    content_html = _content_html(entry.published_hash, url, body) if full else None
    return FeedItem(
        entry=entry,
        title=title,
        url=url,
        summary=summary,
        content_html=content_html,
        byline=clean(entry.byline, "byline"),
        tags=distinct_tags(clean(tag, "tags") for tag in entry.tags),
        language=language if language != settings.SITE_LANGUAGE else "",
        image=first_image_url(content_html, body),
    )


def atom_feed(
    entries: Iterable[Entry], *, report: Report = log_problem, tag: Term | None = None
) -> bytes:
    """Atom (RFC 4287). Entry ids are `urn:uuid:<article uid>`, stable across edits;
    `updated` is when the entry's current version went live, `published` its date; the
    whole article as `<content type="html">` (unless FEED_FULL_CONTENT is off), the
    byline as the entry's author (the feed's author, the site, otherwise), the tags as
    categories. `tag`: the feed of that tag's (byline's) page (tag_feed)."""

    def item(entry: Entry) -> dict:
        built = feed_item(entry, document="the feed", report=report)
        return {
            "title": built.title,
            "link": built.url,
            # type="html": the plain summary is escaped once for HTML, once for XML.
            "description": escape(built.summary),
            "content": built.content_html,
            "unique_id": f"urn:uuid:{entry.uid}",
            "pubdate": entry.publish_at.replace(microsecond=0),
            "updateddate": entry.published_at.replace(microsecond=0),
            "author_name": built.byline or None,
            "categories": built.tags,
            "lang": built.language,
        }

    items = list(_each(entries, item, document="the feed", report=report))
    try:
        return _atom([built for _entry, built in items], tag=tag)
    except Exception:
        # Not expected once the text is clean; but whatever it is, it costs its entry
        # only: each is tried alone, and the feed is written without those that fail.
        built_for = {entry.id: built for entry, built in items}

        def serialisable(entry: Entry) -> dict:
            _atom([built_for[entry.id]], tag=tag)
            return built_for[entry.id]

        kept = _each(
            [entry for entry, _built in items], serialisable, document="the feed", report=report
        )
        return _atom([built for _entry, built in kept], tag=tag)


def _atom(items: list[dict], *, tag: Term | None = None) -> bytes:
    home = paths.absolute(paths.archive_href(None))
    title, feed_path = settings.SITE_TITLE, f"{paths.site_path()}/{paths.FEED}"
    if tag is not None:
        home = paths.absolute(tag.href)
        name = strip_xml_illegal(tag.name)  # a spelling saved past validation
        title, feed_path = f"{settings.SITE_TITLE}: {name}", f"{tag.href}{paths.FEED}"
    feed = FullAtom1Feed(
        title=title,
        link=home,
        description="",
        language=settings.SITE_LANGUAGE,
        feed_url=paths.absolute(feed_path),
        feed_guid=home,
        author_name=settings.SITE_TITLE,
    )
    for item in items:
        feed.add_item(**item)
    return feed.writeString("utf-8").encode("utf-8")


@dataclass(frozen=True)
class Term:
    """A tag, or a byline, that has a page: tag/<slug>/ or author/<slug>/."""

    kind: str  # publishing.models.TagKind: "tag" or "author"
    name: str
    slug: str

    @property
    def href(self) -> str:
        return paths.tag_href(self.slug, self.kind)

    def page_href(self, number: int | None) -> str:
        """Its archive page `number`; its own page for None."""
        return paths.tag_href(self.slug, self.kind, number)

    @property
    def heading(self) -> str:
        return "Articles by" if self.kind == "author" else "Tagged"


def tag_feed(term: Term, entries: Iterable[Entry], *, report: Report = log_problem) -> bytes:
    """The Atom feed of a tag's (a byline's) page, feed.xml beside it: its entries,
    whole, as in the site's feed."""
    return atom_feed(entries, report=report, tag=term)


def tag_page(
    term: Term,
    entries: Iterable[Entry],
    *,
    number: int | None = None,
    newer_href: str = "",
    older_href: str = "",
    report: Report = log_problem,
) -> str:
    """A tag's (a byline's) page, index.html in its folder: the newest articles that
    carry it; or its archive page `number` (page/<n>/ in its folder, numbered from the
    oldest as the site's archive is). `newer_href`, `older_href`: the pages around it."""
    name = strip_xml_illegal(term.name)
    document = f"the page of the {term.kind} {name}"
    if number is not None:
        document += f", page {number}"

    def item(entry: Entry) -> dict:
        clean = _cleaner(entry, document, report)
        return {
            "title": clean(entry.title, "title"),
            "href": paths.article_href(entry.slug),
            "datetime": rfc3339(entry.publish_at),
            "date": display_date(entry.publish_at),
        }

    items = [built for _entry, built in _each(entries, item, document=document, report=report)]
    described = f"{settings.SITE_TITLE}: {term.heading.lower()} {name}"
    return strip_page_illegal(
        render_to_string(
            "blogpublish/tag.html",
            {
                **site_context(),
                "tag": name,
                "heading": term.heading,
                "page": number,
                "entries": items,
                "newer_href": newer_href,
                "older_href": older_href,
                "canonical_url": paths.absolute(term.page_href(number)),
                "og_type": "website",
                "description": f"{described}, page {number}" if number else described,
                "tag_feed_href": f"{term.href}{paths.FEED}",
            },
        )
    )


JSON_FEED_VERSION = "https://jsonfeed.org/version/1.1"


def json_feed(entries: Iterable[Entry], *, report: Report = log_problem) -> bytes:
    """JSON Feed 1.1 (https://jsonfeed.org/version/1.1): the Atom feed's entries, with
    the same ids, content, authors and tags."""

    def item(entry: Entry) -> dict:
        built = feed_item(entry, document="the JSON feed", report=report)
        data: dict[str, object] = {
            "id": f"urn:uuid:{entry.uid}",
            "url": built.url,
            "title": built.title,
            "summary": built.summary,
            "date_published": rfc3339(entry.publish_at),
            "date_modified": rfc3339(entry.published_at),
        }
        if built.content_html is not None:
            data["content_html"] = built.content_html
        else:
            data["content_text"] = built.summary
        if built.byline:
            data["authors"] = [{"name": built.byline}]
        if built.tags:
            data["tags"] = built.tags
        if built.language:
            data["language"] = built.language
        if built.image:
            data["image"] = built.image
        return data

    items = [
        built for _entry, built in _each(entries, item, document="the JSON feed", report=report)
    ]
    home = paths.absolute(paths.archive_href(None))
    feed = {
        "version": JSON_FEED_VERSION,
        "title": settings.SITE_TITLE,
        "home_page_url": home,
        "feed_url": paths.absolute(f"{paths.site_path()}/{paths.JSON_FEED}"),
        "language": settings.SITE_LANGUAGE,
        "authors": [{"name": settings.SITE_TITLE}],
        "items": items,
    }
    return json.dumps(feed, ensure_ascii=False, indent=1).encode("utf-8")


def sitemap(entries: Iterable[Entry], *, report: Report = log_problem) -> str:
    def item(entry: Entry) -> dict:
        # iri_to_uri percent-encodes any character of the slug; stripped all the same.
        url = strip_xml_illegal(paths.article_url(entry.slug))
        return {"url": url, "lastmod": rfc3339(entry.published_at)}

    items = [built for _e, built in _each(entries, item, document="a sitemap chunk", report=report)]
    if not items:  # an empty site's one chunk: a urlset needs a url (sitemaps.org's schema)
        items = [{"url": paths.absolute(paths.archive_href(None)), "lastmod": ""}]
    return render_to_string("blogpublish/sitemap.xml", {"entries": items})


def sitemap_index(chunks: int) -> str:
    """The sitemap index: a line per chunk (20,000 at 1 M articles, 0.26 s to render).
    Every pass of a rebuild writes it (unchanged, it is not rewritten), so the last
    rendered is kept, by its count and the site's address (docs/performance.md)."""
    return _sitemap_index(chunks, paths.absolute(paths.site_path()))


@lru_cache(maxsize=2)
def _sitemap_index(chunks: int, site: str) -> str:
    urls = [f"{site}/{paths.sitemap_chunk_name(n)}" for n in range(1, chunks + 1)]
    return render_to_string("blogpublish/sitemap_index.xml", {"chunks": urls})
