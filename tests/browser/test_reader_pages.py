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
from django.conf import settings
from django.db import connection

from blogpublish.site import StaticSitePublisher
from blogpublish.site.pagination import PAGE_SIZE
from publishing.services import publish_group
from publishing.tasks import publish_article

pytestmark = [
    pytest.mark.django_db(transaction=True),
    # The pages, not the database, are the subject: once, in the SQLite run.
    pytest.mark.skipif(connection.vendor == "postgresql", reason="runs on SQLite"),
]

CHECKERS = Path(__file__).resolve().parents[2] / "tools" / "checkers" / "node_modules"
VNU_JAR = CHECKERS / "vnu-jar" / "build" / "dist" / "vnu.jar"
AXE = CHECKERS / "axe-core" / "axe.min.js"

BODY = """An opening paragraph with *emphasis*, **strong** text, `code` and a
[link](https://example.org/).

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

![A diagram of the pipeline](/media/diagram.png)

[^1]: The footnote's text.
"""


@pytest.fixture
def reader_site(quiet_article):
    """A site of PAGE_SIZE + 3 articles (two archive pages), written by the full check;
    every article tagged, so its page lists related articles and the tag has an archive
    page; half with a byline."""
    quiet_article("页面检查", title="页面检查：中文标题", body=BODY, tags=["检查", "checked"])
    for n in range(PAGE_SIZE + 2):
        byline = {"byline": "Ann Writer"} if n % 2 else {}
        tags = ["checked", f"group {n % 3}"]
        quiet_article(f"checked-{n}", title=f"Checked article {n}", body=BODY, tags=tags, **byline)
    while publish_group(retry_in=publish_article.backoff, limit=100).claimed:
        pass
    assert StaticSitePublisher().reconcile()
    return Path(settings.SITE_ROOT)


def reader_pages(root: Path) -> dict[str, Path]:
    """One page of each type, by name."""
    pages = {
        "front page": root / "index.html",
        "archive page": root / "page" / "1" / "index.html",
        "article": root / "checked-0" / "index.html",
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
def test_every_page_type_has_no_accessibility_violation(reader_site, browser, screenshots, scheme):
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
            page.goto(path.as_uri())
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
