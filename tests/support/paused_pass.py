"""A pass of the shared views that waits after reading its snapshot, for a test that
stops it (SIGSTOP) past its lease: `python -m tests.support.paused_pass READY GO`.

The pass is the catch-up's (`shared_views_pass`); once it has read the entries of the
feed it leaves the file READY and waits for the file GO, then writes. It prints
"pass done: <what shared_views_pass returned>" at the end.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def main(ready: Path, go: Path) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    import django

    django.setup()
    from blogpublish.site import documents
    from publishing.services.refresh import shared_views_pass
    from tests.support.waiting import wait_for

    atom_feed = documents.atom_feed

    def paused_atom_feed(*args, **kwargs):
        ready.touch()
        wait_for(go.exists, timeout=600, interval=0.02, what=str(go))
        return atom_feed(*args, **kwargs)

    documents.atom_feed = paused_atom_feed
    print(f"pass done: {shared_views_pass()}", flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
