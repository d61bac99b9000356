"""Save one article in a process of its own and say how long the save took.

    python -m tests.support.save_article SLUG [TITLE]

Used where the test needs the saving process to have another broker (an unreachable
one) than the test process; the environment (run id, BLOGPUBLISH_TEST_BROKER) says
which. Prints one JSON line: {"id", "slug", "status", "seconds"}.
"""

from __future__ import annotations

import json
import os
import sys
import time


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    import django

    django.setup()
    from publishing.models import Article

    slug = sys.argv[1]
    title = sys.argv[2] if len(sys.argv) > 2 else f"Saved while the broker is away: {slug}"
    article = Article(title=title, slug=slug, body="Written while the broker was unreachable.")
    article.full_clean()
    started = time.monotonic()
    article.save()
    seconds = time.monotonic() - started
    status = Article.objects.values_list("status", flat=True).get(pk=article.pk)
    print(json.dumps({"id": article.pk, "slug": slug, "status": status, "seconds": seconds}))


if __name__ == "__main__":
    main()
