"""A bad setting stops a program with its message alone, not with fifty lines of
traceback that end in it (config/settings.py raises ImproperlyConfigured naming the
setting and what it must be)."""

from __future__ import annotations


def settings_or_exit(program: str) -> None:
    """Load the settings now; a bad one exits with `program: <message>` (status 1)."""
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured

    try:
        settings.INSTALLED_APPS  # noqa: B018 (the attribute loads config/settings.py)
    except ImproperlyConfigured as exc:
        raise SystemExit(f"{program}: {exc}") from None
