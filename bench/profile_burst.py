"""Profile the attempts of a burst, in-process, with pyinstrument: where an attempt's
time goes (claim, render, page, complete, the refresher's passes).

    .venv/bin/python bench/profile_burst.py [N] [sqlite|postgres]

Runs N attempts (default 1,000) through `article_publish` on a fresh database, as a
worker child does, with the shared views' refresher at its default interval, and
prints pyinstrument's summary. A measurement, not a test.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    from bench.support import profiled

    count = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    database = sys.argv[2] if len(sys.argv) > 2 else "sqlite"
    with profiled(database, prefix="blogpublish-profile-"):
        run(count)


def run(count: int) -> None:
    import logging

    import django
    from django.core.management import call_command

    django.setup()
    logging.disable(logging.WARNING)
    call_command("migrate", verbosity=0)
    from django.db.models.signals import post_save
    from pyinstrument import Profiler

    from bench.run import create_articles
    from publishing.models import Article
    from publishing.services import article_publish

    post_save.disconnect(sender=Article, dispatch_uid="publishing.article_saved")
    ids = create_articles(count, start=0)
    profiler = Profiler(interval=0.0005)
    started = time.perf_counter()
    with profiler:
        for article_id in ids:
            article_publish(article_id=article_id, retry_in=lambda n: 0)
    elapsed = time.perf_counter() - started
    print(f"{count} attempts in {elapsed:.2f} s: {elapsed / count * 1000:.2f} ms each\n")
    print(profiler.output_text(unicode=False, color=False, show_all=False))


if __name__ == "__main__":
    main()
