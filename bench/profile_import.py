"""Profile `import_articles` (files → pending rows) and the batches that publish them,
in-process, with pyinstrument.

    .venv/bin/python bench/profile_import.py [N] [sqlite|postgres] [--publish]

Writes N Markdown files (default 10,000; bench/importing.py's), imports them into a
fresh database with the broker unreachable (the batch messages are not sent), prints
the rate and pyinstrument's summary; with --publish, then publishes them in this
process through `publish_group`, as a worker child does, and profiles that.
A measurement, not a test.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SHOW_ALL = bool(os.environ.get("SHOW_ALL"))  # every frame, Django's and libraries' too


def main() -> None:
    from bench.support import profiled

    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    count = int(args[0]) if args else 10_000
    database = args[1] if len(args) > 1 else "sqlite"
    breaker = {"PUBLISH_DISPATCH_BREAKER_SECONDS": "3600"}
    with profiled(database, prefix="blogpublish-profile-", **breaker) as workdir:
        run(count, workdir, publish="--publish" in sys.argv)


def run(count: int, workdir: Path, *, publish: bool) -> None:
    import logging

    import django
    from django.core.management import call_command

    django.setup()
    logging.disable(logging.WARNING)
    call_command("migrate", verbosity=0)
    from pyinstrument import Profiler

    from bench.importing import write_files
    from publishing.services import publish_group
    from publishing.services.importing import articles_import

    write_files(workdir / "posts", count)
    profiler = Profiler(interval=0.0005)
    started = time.perf_counter()
    with profiler:
        report = articles_import([workdir / "posts"])
    elapsed = time.perf_counter() - started
    print(f"import: {report.summary} in {elapsed:.2f} s: {count / elapsed:,.0f} files/s\n")
    print(
        profiler.output_text(unicode=False, color=False, show_all=bool(os.environ.get("SHOW_ALL")))
    )
    if not publish:
        return
    profiler = Profiler(interval=0.0005)
    started = time.perf_counter()
    done = 0
    with profiler:
        while (claimed := publish_group(retry_in=lambda n: 0).claimed) > 0:
            done += claimed
    elapsed = time.perf_counter() - started
    print(f"publish: {done} in {elapsed:.2f} s: {done / elapsed:,.0f} articles/s (one process)\n")
    print(
        profiler.output_text(unicode=False, color=False, show_all=bool(os.environ.get("SHOW_ALL")))
    )


if __name__ == "__main__":
    main()
