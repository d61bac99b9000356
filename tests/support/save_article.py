"""Save one article in a process of its own and say how long the save took.

    python -m tests.support.save_article SLUG [TITLE] [--publish-in SECONDS]

Used where the test needs the saving process to have another broker (an unreachable
one) than the test process; the environment (run id, BLOGPUBLISH_TEST_BROKER) says
which. Prints one JSON line: {"id", "slug", "status", "seconds"}.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from datetime import timedelta


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    import django

    django.setup()
    from django.utils import timezone

    from publishing.models import Article

    parser = argparse.ArgumentParser()
    parser.add_argument("slug")
    parser.add_argument("title", nargs="?")
    parser.add_argument("--publish-in", type=float, default=0.0)
    args = parser.parse_args()
    slug = args.slug
    title = args.title or f"Saved while the broker is away: {slug}"
    article = Article(title=title, slug=slug, body="Written while the broker was unreachable.")
    if args.publish_in:
        article.publish_at = timezone.now() + timedelta(seconds=args.publish_in)
    article.full_clean()
    started = time.monotonic()
    article.save()
    seconds = time.monotonic() - started
    status = Article.objects.values_list("status", flat=True).get(pk=article.pk)
    print(json.dumps({"id": article.pk, "slug": slug, "status": status, "seconds": seconds}))


if __name__ == "__main__":
    main()
