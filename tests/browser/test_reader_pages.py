"""Every page type readers get, checked as readers' tools check them (issue 21, item 8):
the Nu HTML Checker (vnu.jar, the W3C validator's engine) finds no error, and axe-core
in Chromium finds no accessibility violation, in the light and the dark scheme.

The site is written by the real publisher and full check in this process (no worker:
the pages, not the pipeline, are the subject) from articles with what writers use:
headings, a table, code, a quote, footnotes, a task list, an image, a Chinese title;
enough of them for a second archive page. The checkers come from the npm registry,
pinned in tools/checkers/package-lock.json (scripts/install-tools.sh installs them).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from blogpublish.desk import images
from blogpublish.site import StaticSitePublisher
from blogpublish.site.pagination import PAGE_SIZE
from publishing.models import Article
from publishing.services import article_update, publish_group
from publishing.tasks import publish_article
from tests.support.site import run_full_check

# The pages, not the database, are the subject: once, in the SQLite run, as every
# browser test (tests/support/runs.py).
pytestmark = pytest.mark.django_db(transaction=True)

CHECKERS = Path(__file__).resolve().parents[2] / "tools" / "checkers" / "node_modules"
VNU_JAR = CHECKERS / "vnu-jar" / "build" / "dist" / "vnu.jar"
AXE = CHECKERS / "axe-core" / "axe.min.js"

BODY = """An opening paragraph with *emphasis*, **strong** text, `code` and a
[link](https://example.org/).

<h2 id="content">A heading with the id of the page's main</h2>

## A table

| Language | Greeting |
|----------|----------|
| English  | Hello    |
| 中文     | 你好     |

## Code and a quote

```python
def greet(name: str) -> str:
    return f"Hello, {name}"
```

> A quotation, with a footnote.[^1]

- [x] a task done
- [ ] a task to do

{diagram}

[^1]: The footnote's text.
"""


def diagram_image() -> bytes:
    """The body's image: save -> pending -> worker -> live, drawn here (uploaded as a
    writer would, so the page shows its srcset, width and height)."""
    import io

    import PIL.Image
    import PIL.ImageDraw
    import PIL.ImageFont

    image = PIL.Image.new("RGB", (1200, 300), "#ffffff")
    draw = PIL.ImageDraw.Draw(image)
    font = PIL.ImageFont.load_default(size=40)
    for n, label in enumerate(("save", "pending", "worker", "live")):
        x = 40 + n * 290
        draw.rounded_rectangle((x, 100, x + 220, 200), radius=18, outline="#1f4e79", width=6)
        draw.text((x + 110, 150), label, fill="#1f4e79", font=font, anchor="mm")
        if n:
            draw.line((x - 70, 150, x - 4, 150), fill="#1f4e79", width=6)
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def card_image() -> bytes:
    """A cover image of a link card's proportions (1.91:1), drawn here."""
    import io

    import PIL.Image
    import PIL.ImageDraw

    image = PIL.Image.new("RGB", (1200, 630), "#cfe8d8")
    draw = PIL.ImageDraw.Draw(image)
    draw.rectangle((0, 420, 1200, 630), fill="#6b8f4e")  # the lawn
    draw.ellipse((900, 60, 1060, 220), fill="#f4c542")  # the sun
    for x in range(80, 820, 120):  # a row of tulips
        draw.line((x, 420, x, 330), fill="#3d6b2a", width=8)
        draw.ellipse((x - 28, 280, x + 28, 350), fill="#d9534f")
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


@pytest.fixture
def reader_site(quiet_article, settings, monkeypatch):
    """A site of PAGE_SIZE + 3 articles (two archive pages), written by the full check;
    every article tagged, so its page lists related articles and the tag has an archive
    page; half with a byline; one moved to another slug, so its old address sends
    readers on. Addresses as a real blog's (a link card shows its host)."""
    settings.SITE_URL = "https://blog.example.com"
    diagram = images.store(diagram_image(), name="pipeline.png")
    body = BODY.replace("{diagram}", f"![A diagram of the pipeline]({diagram.href})")
    quiet_article("页面检查", title="页面检查：中文标题", body=body, tags=["检查", "checked"])
    cover = images.store(card_image(), name="spring-garden.png")
    quiet_article(
        "shared-link",
        title="Spring came early to the garden",
        body=f"{cover.markdown}\n\nThe apple tree is still asleep; the rest of the garden is not.",
        description="What woke up first, what is still asleep, and what the frost took.",
        byline="Ann Writer",
        tags=["checked", "garden"],
    )
    for n in range(PAGE_SIZE + 2):
        byline = {"byline": "Ann Writer"} if n % 2 else {}
        tags = ["checked", f"group {n % 3}"]
        quiet_article(f"checked-{n}", title=f"Checked article {n}", body=body, tags=tags, **byline)
    while publish_group(retry_in=publish_article.backoff, limit=100).claimed:
        pass
    # The move published here, not by a worker of the session.
    monkeypatch.setattr("publishing.signals.dispatch_when_due", lambda **kwargs: False)
    article_update(article=Article.objects.get(slug="checked-0"), slug="checked-0-moved")
    while publish_group(retry_in=publish_article.backoff, limit=100).claimed:
        pass
    assert run_full_check(StaticSitePublisher())
    return Path(settings.SITE_ROOT)


def reader_pages(root: Path) -> dict[str, Path]:
    """One page of each type, by name."""
    pages = {
        "front page": root / "index.html",
        "archive page": root / "page" / "1" / "index.html",
        "article": root / "checked-1" / "index.html",  # tags, a byline, related articles
        "article with a Chinese title": root / "页面检查" / "index.html",
        "tag page": root / "tag" / "checked" / "index.html",
        "tag archive page": root / "tag" / "checked" / "page" / "1" / "index.html",
        "author page": root / "author" / "ann-writer" / "index.html",
    }
    for extra in ("404.html",):  # the not-found page, where the site has one
        if (root / extra).exists():
            pages["not found"] = root / extra
    missing = [name for name, path in pages.items() if not path.exists()]
    assert not missing, f"pages missing: {missing}"
    assert '<aside class="related"' in pages["article"].read_text(encoding="utf-8")
    return pages


@pytest.fixture
def served(reader_site):
    """The site over HTTP, as a reader's browser gets it (root-relative addresses, such
    as an image's /media/…, resolve; under file:// they would not): its base URL."""
    import functools
    import threading
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, format, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=reader_site))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_every_page_type_passes_the_nu_html_checker(reader_site):
    java = shutil.which("java")
    if java is None or not VNU_JAR.exists():
        pytest.fail("java or vnu.jar missing: run scripts/install-tools.sh (make install does)")
    every_page = sorted(str(path) for path in reader_site.rglob("*.html"))
    assert len(every_page) > PAGE_SIZE  # the articles' pages, and the shared ones

    checked = subprocess.run(
        [java, "-jar", str(VNU_JAR), "--format", "json", "--exit-zero-always", *every_page],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )

    messages = json.loads(checked.stderr or checked.stdout)["messages"]
    errors = [
        f"{m.get('url', '').removeprefix(f'file:{reader_site}/')}:{m.get('lastLine')}: "
        f"{m['message']}"
        for m in messages
        if m["type"] == "error" or m.get("subType") == "fatal"
    ]
    assert not errors, "\n".join(errors[:40])


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_page_type_has_no_accessibility_violation(
    reader_site, served, browser, screenshots, scheme
):
    from urllib.parse import quote

    if not AXE.exists():
        pytest.fail("axe-core missing: run scripts/install-tools.sh (make install does)")
    # The pages forbid scripts (Content-Security-Policy); axe is the test's, not theirs.
    context = browser.new_context(
        bypass_csp=True, color_scheme=scheme, viewport={"width": 900, "height": 1000}
    )
    try:
        problems = {}
        for name, path in reader_pages(reader_site).items():
            page = context.new_page()
            page.goto(f"{served}/{quote(path.relative_to(reader_site).as_posix())}")
            page.wait_for_load_state("load")
            # Each image brought into view (they load lazily) and decoded, or named.
            broken = page.evaluate(
                """async () => {
                  const broken = [];
                  for (const img of document.images) {
                    img.scrollIntoView();
                    await img.decode().catch(() => broken.push(img.currentSrc || img.src));
                  }
                  window.scrollTo(0, 0);
                  return broken;
                }"""
            )
            if broken:
                problems[f"{name}: images that do not load"] = broken
            page.add_script_tag(path=str(AXE))
            result = page.evaluate(
                "() => axe.run(document, {resultTypes: ['violations']})"
                ".then(r => r.violations.map(v => ({id: v.id, impact: v.impact,"
                " help: v.help, nodes: v.nodes.slice(0, 3).map(n => n.target.join(' '))})))"
            )
            if result:
                problems[name] = result
            if name == "article":  # docs/img/article-light.png, article-dark.png
                for folder in screenshots:
                    page.screenshot(path=str(folder / f"article-{scheme}.png"), full_page=True)
            page.close()
    finally:
        context.close()
    assert not problems, json.dumps(problems, indent=1, ensure_ascii=False)


def test_a_former_address_takes_the_reader_to_the_article(reader_site, served, browser):
    """The page at a moved article's old slug (checked by the Nu checker above with
    every page) sends a reader's browser on to the article."""
    page = browser.new_page()
    try:
        page.goto(f"{served}/checked-0/")
        page.wait_for_url(f"{served}/checked-0-moved/", timeout=10_000)
        assert page.title().startswith("Checked article 0")
    finally:
        page.close()


CARD = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Link card</title>
<style>
  body {{ margin: 0; padding: 24px; background: #f0f2f5; font-family: system-ui, sans-serif; }}
  .card {{ width: 506px; border: 1px solid #cfd9de; border-radius: 16px; overflow: hidden;
          background: #fff; color: #0f1419; }}
  .card img {{ display: block; width: 100%; aspect-ratio: 1.91; object-fit: cover; }}
  .text {{ padding: 12px 16px; }}
  .site {{ color: #536471; font-size: 14px; }}
  .title {{ font-size: 16px; font-weight: 600; margin: 2px 0; }}
  .description {{ color: #536471; font-size: 15px; line-height: 1.35; }}
</style></head><body><div class="card" id="card">{image}<div class="text">
<div class="site">{site}</div><div class="title">{title}</div>
<div class="description">{description}</div></div></div></body></html>"""


def test_a_shared_link_shows_a_card_from_the_pages_own_tags(reader_site, browser, screenshots):
    """What a social network shows of a shared article: read from the generated page's
    OpenGraph and Twitter tags (as their crawlers read them), drawn as a card, saved as
    link-card.png (docs/img/ with BLOGPUBLISH_SCREENSHOTS_DIR)."""
    from html import escape
    from html.parser import HTMLParser
    from urllib.parse import urlsplit

    page_file = reader_site / "shared-link" / "index.html"
    tags: dict[str, str] = {}

    class Meta(HTMLParser):
        def handle_starttag(self, tag, attrs):
            found = dict(attrs)
            key = found.get("property") or found.get("name")
            if tag == "meta" and key and key not in tags:
                tags[key] = found.get("content") or ""

    Meta().feed(page_file.read_text(encoding="utf-8"))
    assert tags["og:type"] == "article"
    assert tags["twitter:card"] == "summary_large_image"
    assert tags["og:title"] == "Spring came early to the garden"
    assert tags["og:description"].startswith("What woke up first")
    image_path = urlsplit(tags["og:image"]).path  # the site's own copy, on disk here
    assert (reader_site / image_path.lstrip("/")).exists(), tags["og:image"]

    card = reader_site / ".card.html"
    card.write_text(
        CARD.format(
            image=f'<img alt="" src="{(reader_site / image_path.lstrip("/")).as_uri()}">',
            site=escape(urlsplit(tags["og:url"]).netloc),
            title=escape(tags["og:title"]),
            description=escape(tags["og:description"]),
        ),
        encoding="utf-8",
    )
    page = browser.new_page(viewport={"width": 560, "height": 520}, device_scale_factor=2)
    page.goto(card.as_uri())
    page.wait_for_function("() => document.querySelector('#card img').naturalWidth > 0")
    for folder in screenshots:
        page.locator("#card").screenshot(path=str(folder / "link-card.png"))
    page.close()
