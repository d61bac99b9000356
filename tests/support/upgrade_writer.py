"""A writer of the previous release, for tests/system/test_upgrade.py, which copies this
file into that release's checkout and runs it there, so it runs that release's code:

    python upgrade_writer.py seed N             N scheduled articles (a year ahead), in bulk
    python upgrade_writer.py write STOP REPORT  save until the file STOP exists

`write` alternates a new article (published by the release's worker) and an edit of a
seeded one (which stays scheduled), about 20 saves a second, and after every save
replaces REPORT (JSON): saves, errors, the longest save, the ids created and edited.
It uses only the names that stay from release to release (DESIGN.md): Article, its
fields, full_clean() and save()."""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import timedelta

sys.path.insert(0, os.getcwd())  # the release's code, not the one this file came from

import django

django.setup()

from django.utils import timezone  # noqa: E402

from publishing.models import Article  # noqa: E402


def seed(count: int) -> None:
    later = timezone.now() + timedelta(days=365)
    for start in range(0, count, 1000):
        Article.objects.bulk_create(
            Article(
                title=f"Seeded {i}", slug=f"seeded-{i}", body=f"Seeded *{i}*.", publish_at=later
            )
            for i in range(start, min(count, start + 1000))
        )


def save_one(i: int) -> tuple[str, int]:
    if i % 2:
        article = Article(
            title=f"升级 {i}", slug=f"upgrade-{i}", body=f"Written during the upgrade, {i}."
        )
        kind = "created"
    else:
        article = Article.objects.get(slug=f"seeded-{i}")
        article.title = f"Seeded {i}, edited during the upgrade"
        kind = "edited"
    article.full_clean()
    article.save()
    return kind, article.pk


def write(stop: str, report: str) -> None:
    state = {"saves": 0, "errors": [], "longest": 0.0, "created": [], "edited": []}
    i = 0
    while not os.path.exists(stop):
        i += 1
        started = time.monotonic()
        try:
            kind, pk = save_one(i)
            state[kind].append(pk)
        except Exception as exc:  # reported, the test fails on it
            state["errors"].append(f"save {i}: {type(exc).__name__}: {exc}")
        state["longest"] = max(state["longest"], time.monotonic() - started)
        state["saves"] += 1
        with open(f"{report}.tmp", "w") as out:
            json.dump(state, out)
        os.replace(f"{report}.tmp", report)
        time.sleep(0.05)  # the writer's pace, not a wait for anything


if __name__ == "__main__":
    if sys.argv[1] == "seed":
        seed(int(sys.argv[2]))
    else:
        write(sys.argv[2], sys.argv[3])
