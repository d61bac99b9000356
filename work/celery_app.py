"""The project's Celery app, for the packages below `config`.

config/celery.py makes the app and registers it here as it is made; every process
imports it first (config/__init__.py, loaded with the settings), so the app is there
before any message is sent. The packages below `config` (publishing's dispatch and its
queue lengths) read it with `celery_app()` instead of importing `config`, so imports
run one way: config → … → publishing → work (docs/design.md, "Packages").
"""

from __future__ import annotations

from celery import Celery

_app: Celery | None = None


def register(app: Celery) -> None:
    global _app
    _app = app


def celery_app() -> Celery:
    """The app config/celery.py made; a clear error where none was made (a process that
    did not load Django's settings from `config`)."""
    if _app is None:
        raise RuntimeError(
            "no Celery app: config/celery.py registers it when the settings load "
            "(DJANGO_SETTINGS_MODULE=config.settings, or settings that import it)"
        )
    return _app
