from __future__ import annotations

from django.apps import AppConfig


class DigestConfig(AppConfig):
    """The editors' daily digest: its task, its command, its templates and its admin.
    Its model (`Digest`) stays in work.models under the app label "clock", so its
    table does not move."""

    name = "digest"
    verbose_name = "Daily digest"
