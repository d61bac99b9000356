"""Helpers of the writer's desk tests: images made with Pillow, the admin's form data."""

from __future__ import annotations

import io

import PIL.Image
from django.utils import timezone
from PIL import ExifTags

GPS = {1: "N", 2: (52.0, 31.0, 12.0), 3: "E", 4: (13.0, 24.0, 0.0)}


def image_bytes(fmt: str = "PNG", *, size=(64, 48), colour="teal", gps: bool = False) -> bytes:
    image = PIL.Image.new("RGB", size, colour)
    options = {}
    if gps:
        exif = PIL.Image.Exif()
        exif[0x0112] = 6  # orientation: kept
        exif[ExifTags.IFD.GPSInfo] = GPS
        options["exif"] = exif
    out = io.BytesIO()
    image.save(out, fmt, **options)
    return out.getvalue()


def article_form(*, title: str, body: str, slug: str = "", when=None) -> dict:
    """What the admin's add form posts."""
    local = timezone.localtime(when or timezone.now())
    return {
        "title": title,
        "slug": slug,
        "body": body,
        "publish_at_0": local.strftime("%Y-%m-%d"),
        "publish_at_1": local.strftime("%H:%M:%S"),
        "publish_attempts-TOTAL_FORMS": "0",
        "publish_attempts-INITIAL_FORMS": "0",
        "publish_attempts-MIN_NUM_FORMS": "0",
        "publish_attempts-MAX_NUM_FORMS": "0",
    }
