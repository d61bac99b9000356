"""Markdown files for `import_articles`, and running the command as a user does
(tests/integration/test_import.py, tests/security/test_import_files.py)."""

from __future__ import annotations

import io
from pathlib import Path

from django.core.management import CommandError, call_command


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def post(title: str, body: str = "Some *Markdown*.", **meta: str) -> str:
    lines = [f"title: {title}", *(f"{key}: {value}" for key, value in meta.items())]
    return "---\n" + "\n".join(lines) + "\n---\n\n" + body + "\n"


def run_import(*args: str) -> tuple[str, str, int]:
    """(stdout, stderr, exit status) of `manage.py import_articles ARGS`."""
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("import_articles", *args, stdout=out, stderr=err)
        code = 0
    except CommandError as exc:
        code = exc.returncode
    return out.getvalue(), err.getvalue(), code
