"""SITE_ROOT is an absolute path or s3://BUCKET/PREFIX; anything else stops start-up
with a message saying what is expected (issue 10: `s3://blog/site` once made a local
folder named `s3:`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from config.checks import site_root_problems
from tests.support.processes import ROOT
from work.site_root import parse_site_root

STRONG_KEY = "k3y-" + "0123456789abcdefghijklmnopqrstuvwxyz-ABCDEFGHIJKLMN"


@pytest.mark.parametrize(
    ("value", "kind", "where"),
    [
        ("/srv/blog/site", "local", (Path("/srv/blog/site"), "", "")),
        ("s3://blog", "s3", (None, "blog", "")),
        ("s3://blog/", "s3", (None, "blog", "")),
        ("s3://blog/site", "s3", (None, "blog", "site")),
        ("s3://my.blog-1/a/b/", "s3", (None, "my.blog-1", "a/b")),
        ("s3://blog/中文/站点", "s3", (None, "blog", "中文/站点")),
    ],
)
def test_good_values_are_read(value, kind, where):
    root = parse_site_root(value)

    assert root.kind == kind
    assert (root.path, root.bucket, root.prefix) == where
    assert site_root_problems(value) == []


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ("s3:", "is not an s3:// URL"),
        ("s3:blog/site", "is not an s3:// URL"),
        ("s3:/blog/site", "is not an s3:// URL"),
        ("S3://blog/site", "is not an s3:// URL"),
        ("s3://", "names no bucket"),
        ("s3:///site", "names no bucket"),
        ("s3://Blog/site", "not a valid bucket name"),
        ("s3://b/site", "not a valid bucket name"),
        ("s3://blog_site/x", "not a valid bucket name"),
        ("s3://-blog/x", "not a valid bucket name"),
        ("s3://blog/a/../b", "'..'"),
        ("s3://blog/a//b", "empty"),
        ("s3://blog/site?versionId=1", "s3://BUCKET/PREFIX"),
        ("var/site", "relative path"),
        ("site", "relative path"),
        ("./site", "relative path"),
        ("~/site", "relative path"),
        ("gs://blog/site", "only s3:// URLs"),
        ("file:///srv/site", "only s3:// URLs"),
        ("https://blog.example.com/", "only s3:// URLs"),
    ],
)
def test_bad_values_are_refused_with_what_is_expected(value, named):
    (problem,) = site_root_problems(value)

    assert named in problem
    assert "SITE_ROOT" in problem


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ("s3:", "is not an s3:// URL"),
        ("s3://", "names no bucket"),
        ("var/site", "relative path"),
    ],
)
def test_a_process_with_a_bad_site_root_does_not_start(value, named, tmp_path):
    result = check_with_site_root(value, tmp_path)

    assert result.returncode != 0
    assert "blogpublish does not start" in result.stderr
    assert named in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["db.sqlite3"]


def test_a_site_root_in_a_symlink_loop_does_not_start(tmp_path):
    # a RuntimeError's traceback while the settings loaded (a review's finding)
    (tmp_path / "loopA").symlink_to(tmp_path / "loopB")
    (tmp_path / "loopB").symlink_to(tmp_path / "loopA")

    result = check_with_site_root(str(tmp_path / "loopA"), tmp_path)

    assert result.returncode != 0
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert f"SITE_ROOT='{tmp_path / 'loopA'}' cannot be resolved" in result.stderr


def check_with_site_root(value: str, tmp_path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("DEBUG", "SECRET_KEY")}
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "check"],
        cwd=tmp_path,  # a relative SITE_ROOT would land here: nothing may appear
        env=env
        | {
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "PYTHONPATH": str(ROOT),
            "SECRET_KEY": STRONG_KEY,
            "SITE_ROOT": value,
            "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
