"""The site's Content-Security-Policy (blogpublish.csp) and the copy of it that
docs/site.md gives a production web server."""

from __future__ import annotations

import re
from pathlib import Path

from blogpublish.csp import site_policy, style_hashes

DOCS = Path(__file__).resolve().parents[2] / "docs" / "site.md"


def test_the_base_template_has_one_style_block_and_the_policy_allows_it_by_hash():
    [source] = style_hashes()
    policy = site_policy(images_self_only=False)
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
    assert directives["style-src"] == source
    assert directives["script-src"] == "'none'"
    assert directives["img-src"] == "'self' https:"


def test_images_self_only():
    assert "img-src 'self';" in site_policy(images_self_only=True)


def test_the_nginx_lines_in_the_docs_send_the_same_policy():
    [documented] = re.findall(r'add_header Content-Security-Policy "([^"]*)"', DOCS.read_text())
    assert documented == site_policy(images_self_only=False)
