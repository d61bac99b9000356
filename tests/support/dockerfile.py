"""The Docker image read from its Dockerfile, for the tests that check what it holds
and that it starts (no Docker engine runs on the test machines): the files its COPY
lines bring, its WORKDIR, what its RUN line installs with pip and its CMD."""

from __future__ import annotations

import json
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from tests.support.processes import ROOT

IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".venv", "var", "*.egg-info")


@dataclass(frozen=True)
class Image:
    workdir: PurePosixPath
    copies: list[tuple[list[str], str]]  # (sources in the context, destination)
    pip_install: list[str]  # the arguments of the RUN line's `pip install`, flags left out
    cmd: list[str]

    def build_files(self, into: Path) -> Path:
        """The image's WORKDIR, as its COPY lines fill it, under `into`; returns it."""
        app = into / self.workdir.relative_to("/")
        app.mkdir(parents=True, exist_ok=True)
        for sources, dest in self.copies:
            target = app / dest if not dest.startswith("/") else into / dest.lstrip("/")
            for source in sources:
                path = ROOT / source
                if path.is_dir():
                    shutil.copytree(path, target, ignore=IGNORED, dirs_exist_ok=True)
                else:
                    folder = target if dest.endswith("/") or len(sources) > 1 else target.parent
                    folder.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(path, folder / (path.name if folder == target else target.name))
        return app


def logical_lines(text: str) -> list[str]:
    """The Dockerfile's instructions, continuation lines joined, comments left out."""
    lines, current = [], ""
    for raw in text.splitlines():
        if not current and raw.lstrip().startswith("#"):
            continue
        if raw.rstrip().endswith("\\"):
            current += raw.rstrip()[:-1] + " "
            continue
        current += raw
        if current.strip():
            lines.append(current.strip())
        current = ""
    return lines


def read_image(path: Path = ROOT / "Dockerfile") -> Image:
    workdir, copies, pip_install, cmd = PurePosixPath("/"), [], [], []
    for line in logical_lines(path.read_text()):
        keyword, _, rest = line.partition(" ")
        keyword = keyword.upper()
        if keyword == "WORKDIR":
            workdir = workdir / rest.strip()
        elif keyword == "COPY":
            args = [a for a in shlex.split(rest) if not a.startswith("--")]
            copies.append((args[:-1], args[-1]))
        elif keyword == "RUN" and "pip install" in rest:
            words = shlex.split(rest.split("pip install", 1)[1].split("&&", 1)[0])
            pip_install = [w for w in words if not w.startswith("-")]
        elif keyword == "CMD":
            cmd = json.loads(rest)
    return Image(workdir=workdir, copies=copies, pip_install=pip_install, cmd=cmd)
