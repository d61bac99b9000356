"""Imported posts render as Hugo renders them (issue 20): a small corpus of posts
(tests/hugo_corpus/, CC0, see its LICENSE) is built by Debian's `hugo` (Goldmark, set up
for GitHub Flavored Markdown: tests/hugo_corpus/config.toml) and rendered by the site's
renderer; the two HTML documents, normalised, are equal.

Normalised: both through the site's sanitiser (what Hugo keeps that nh3 would remove
is no difference a reader sees), then compared as a sequence of tags (attributes
sorted), and text (entities decoded, white space collapsed). What still differs is
listed, each difference once, in docs/writing.md ("Posts imported from Hugo") under
the names of KNOWN_DIFFERENCES; the test fails if a listed difference is no longer
needed, so the list stays honest.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from html import unescape
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.db import connection

from blogpublish.rendering import render_markdown, sanitise
from publishing.markdown_files import parse

# Pure rendering, no database: run once, in the SQLite run.
pytestmark = pytest.mark.skipif(
    connection.vendor == "postgresql", reason="no database involved: runs on SQLite"
)

CORPUS = Path(__file__).resolve().parents[1] / "hugo_corpus"
WRITING = Path(__file__).resolve().parents[2] / "docs" / "writing.md"
POSTS = sorted((CORPUS / "content" / "posts").glob("*.md"))


class Tokens(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tokens: list[str] = []

    def handle_starttag(self, tag, attrs):
        attributes = " ".join(f'{name}="{value or ""}"' for name, value in sorted(attrs))
        self.tokens.append(f"<{tag} {attributes}>" if attributes else f"<{tag}>")

    def handle_endtag(self, tag):
        self.tokens.append(f"</{tag}>")

    def handle_data(self, data):
        text = " ".join(data.split())
        if text:
            self.tokens.append(text)


def tokens(html: str) -> list[str]:
    parser = Tokens()
    parser.feed(html)
    parser.close()
    return parser.tokens


def footnotes(html: str) -> str:
    """Goldmark writes footnotes as PHP Markdown Extra does (`fn:1`, a <div> with an
    <hr>, a non-breaking space and a text-style arrow before the back link), cmark-gfm as
    GitHub does (`fn-source`, a <section>, the label as written): kept as the ids and
    link targets only, numbered in order of appearance."""
    labels: dict[str, str] = {}

    def number(match: re.Match) -> str:
        label = labels.setdefault(match["label"], str(len(labels) + 1))
        return f"{match['kind']}-{label}"

    html = re.sub(r"(?P<kind>fnref|fn)[-:](?P<label>[^\"]+)", number, html)
    html = re.sub(r'<(?:div|section) class="footnotes"[^>]*>\s*(?:<hr>)?', "<notes>", html)
    html = re.sub(r"</(?:div|section)>\s*$", "</notes>", html.rstrip())
    html = re.sub(r'\s*(?:&#160;|\xa0)?(<a href="#fnref-[^"]+")', r" \1", html)
    html = html.replace("\u21a9\ufe0e", "\u21a9").replace("&#x21a9;&#xfe0e;", "\u21a9")
    # The reference's id and class sit on the <sup> in one, on the <a> in the other.
    html = re.sub(r'<sup(?: class="footnote-ref"| id="fnref-\d+")>', "<sup>", html)
    return re.sub(r' (?:id="fnref-\d+"|class="footnote-ref")', "", html)


# name in docs/writing.md → normalisation that removes the difference
KNOWN_DIFFERENCES = {"footnotes": footnotes}


def normalised(html: str) -> list[str]:
    html = sanitise(html)
    for normalise in KNOWN_DIFFERENCES.values():
        html = normalise(html)
    return tokens(html)


@pytest.fixture(scope="module")
def hugo_site(tmp_path_factory) -> Path:
    hugo = shutil.which("hugo")
    if hugo is None:
        pytest.fail("hugo is missing: run scripts/install-tools.sh (Debian's hugo)")
    site = tmp_path_factory.mktemp("hugo") / "site"
    shutil.copytree(CORPUS, site)
    public, cache = site / "public", site / "cache"
    subprocess.run(
        [hugo, "--quiet", "--source", site, "--destination", public, "--cacheDir", cache],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return public


def ours(post: Path) -> str:
    return render_markdown(parse(post.read_text(encoding="utf-8")).body)


def hugos(public: Path, post: Path) -> str:
    return (public / "posts" / post.stem / "index.html").read_text(encoding="utf-8")


@pytest.mark.parametrize("post", POSTS, ids=lambda post: post.stem)
def test_post_renders_as_hugo_renders_it(hugo_site, post):
    assert normalised(ours(post)) == normalised(hugos(hugo_site, post))


def test_each_known_difference_is_listed_in_the_writers_doc_and_still_needed(hugo_site):
    section = WRITING.read_text(encoding="utf-8").split("## Posts imported from Hugo", 1)[1]
    for name, normalise in KNOWN_DIFFERENCES.items():
        assert f"**{name}**" in section.split("\n## ", 1)[0], f"{name} is not in docs/writing.md"
        needed = any(
            tokens(normalise(sanitise(ours(post)))) != tokens(sanitise(ours(post)))
            or tokens(normalise(sanitise(hugos(hugo_site, post))))
            != tokens(sanitise(hugos(hugo_site, post)))
            for post in POSTS
        )
        assert needed, f"{name}: no post of the corpus differs by it any more"


def test_corpus_is_licensed():
    assert "CC0" in (CORPUS / "LICENSE").read_text(encoding="utf-8")
    assert len(POSTS) >= 5
    assert all(unescape(post.read_text(encoding="utf-8")) for post in POSTS)
