"""The webhook receiver that docs/site.md shows, run as written.

Its code block is executed as is, in a folder of the test's own (it opens
`receiver.sqlite3` in the working directory), with SECRET set to the test's secret:
what the tests prove of the receiving side, they prove of the code users copy.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from tests.support.processes import ROOT

SECTION = "### Verifying and deduplicating, on the receiving side"


def documented_code() -> str:
    text = (ROOT / "docs" / "site.md").read_text()
    section = text.split(SECTION, 1)[1]
    return section.split("```python\n", 1)[1].split("\n```", 1)[0]


def load(*, secret: str, workdir: Path) -> dict:
    """The example's module namespace: `verify`, `handle`, `apply`, `SECRET`, `db`."""
    workdir.mkdir(parents=True, exist_ok=True)
    namespace: dict = {"__name__": "documented_receiver"}
    with contextlib.chdir(workdir):
        exec(compile(documented_code(), "docs/site.md (receiver)", "exec"), namespace)
    namespace["SECRET"] = secret.encode()
    return namespace
