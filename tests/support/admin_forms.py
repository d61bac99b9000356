"""The article form of the admin as a browser posts it."""

from __future__ import annotations

ADD_URL = "/admin/publishing/article/add/"


def article_form(
    *, title: str, body: str = "Text.", slug: str = "", day: str = "2026-01-01", time="10:00:00"
) -> dict[str, str]:
    """The add/change form's fields: the content, the date and time as the split widget
    sends them (in the current TIME_ZONE), and the empty attempts inline."""
    return {
        "title": title,
        "slug": slug,
        "body": body,
        "publish_at_0": day,
        "publish_at_1": time,
        "publish_attempts-TOTAL_FORMS": "0",
        "publish_attempts-INITIAL_FORMS": "0",
    }
