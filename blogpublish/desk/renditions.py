"""Smaller copies of an uploaded image, so that a phone does not load a 4,000-pixel photo
to show it 400 pixels wide (issue 21, item 6; docs/writing.md, "Images").

At upload, beside the original (kept as uploaded, less its metadata: blogpublish.desk.images),
copies are made at each of WIDTHS narrower than the image, in WebP and in the original's
format (JPEG or PNG; a GIF or WebP original gets WebP copies only), plus a WebP at the
image's own width when it is at most the widest of WIDTHS. Each is named after the
original's content: `media/<sha256>-<width>w.<ext>`.

- **No metadata in any copy**: each is encoded from the pixels alone, upright (the EXIF
  orientation applied, since a copy carries no EXIF), with no EXIF, XMP, text or
  comment; only the colour profile is kept.
- **No copy heavier than the original**: one at least as heavy is not kept (a palette
  PNG's copies are RGB), and a JPEG's, PNG's or GIF's WebP copies go all together.
- **An animation** (a GIF or WebP of several frames) gets no copies: resizing every frame
  is costly, and its pages show the original, sized and lazily loaded.
- The page (blogpublish.site.figures) offers them with `srcset` and `sizes`, the WebP
  ones first in a `<picture>`, so a browser takes the smallest that is sharp enough.
"""

from __future__ import annotations

import contextlib
import io
import math
from dataclasses import asdict, dataclass

import PIL.Image
import PIL.ImageCms
import PIL.ImageOps

# Widths of the copies, in pixels: the text column is 632 CSS pixels wide (base.html:
# 42rem less its padding), so these cover it from a phone to a 2.5× screen.
WIDTHS = (400, 800, 1200, 1600)
WEBP_QUALITY = 80
JPEG_QUALITY = 85
# The formats whose copies are also made in their own format (for browsers without
# WebP): GIF copies would lose colours to a palette, and WebP is already WebP.
SAME_FORMAT = {"JPEG": ("JPEG", "jpg"), "MPO": ("JPEG", "jpg"), "PNG": ("PNG", "png")}
MIME = {"webp": "image/webp", "jpg": "image/jpeg", "png": "image/png", "gif": "image/gif"}
# The widest or tallest image WebP can hold (libwebp's limit): a long screenshot's copies
# taller than this are made in the original's format only (none for a GIF).
WEBP_MAX_SIDE = 16383
# Greyscale of 16 bits a sample (a PNG's), as Pillow opens it.
SIXTEEN_BIT_GREY = ("I;16", "I;16B", "I;16L", "I;16N", "I")
ORIENTATION = 0x0112  # the EXIF tag


@dataclass(frozen=True)
class Copy:
    path: str  # relative to SITE_ROOT: media/<sha256>-<width>w.<ext>
    width: int
    height: int
    type: str  # its MIME type


@dataclass(frozen=True)
class Renditions:
    """What `Image.renditions` holds: the image's size as shown (orientation applied)
    and its copies, narrowest first."""

    width: int
    height: int
    copies: tuple[Copy, ...]

    def as_json(self) -> dict:
        return {
            "width": self.width,
            "height": self.height,
            "copies": [asdict(copy) for copy in self.copies],
        }

    @classmethod
    def from_json(cls, data: dict) -> Renditions:
        return cls(data["width"], data["height"], tuple(Copy(**c) for c in data["copies"]))


def make(data: bytes, *, path: str) -> tuple[Renditions, list[tuple[str, bytes]]]:
    """The copies of the image stored at `path` (`media/<sha256>.<ext>`, its bytes
    `data`, already checked) as (what to record, [(path, bytes)] to store)."""
    image = PIL.Image.open(io.BytesIO(data), formats=["PNG", "JPEG", "GIF", "WEBP"])
    width, height = _upright_size(image)
    if getattr(image, "n_frames", 1) > 1:
        return Renditions(width, height, ()), []
    if image.format in ("JPEG", "MPO") and width > WIDTHS[-1]:
        # Decoded at the smallest of 1/2, 1/4, 1/8 of its size that is still as wide as
        # the widest copy (the decoder's own DCT scaling): a 50-megapixel photo took
        # about 420 MB to decode whole, for copies at most 1,600 pixels wide.
        # At least 64 rows (or all): an eighth of a panorama's few rows would be mostly
        # the padding of JPEG's blocks of 8.
        wide, high = (WIDTHS[-1], max(math.ceil(height * WIDTHS[-1] / width), min(height, 64)))
        image.draft(None, (high, wide) if _turned(image) else (wide, high))
    image.load()
    # In place: an upright image's copy was as large again (150 MB for 50 megapixels).
    PIL.ImageOps.exif_transpose(image, in_place=True)
    upright: PIL.Image.Image = image
    stem = path.rsplit(".", 1)[0]
    targets = [w for w in WIDTHS if w < width] + ([width] if width <= WIDTHS[-1] else [])
    same = SAME_FORMAT.get(image.format or "")
    profile = image.info.get("icc_profile")
    if upright.mode == "CMYK":
        # The copies are RGB: converted through the file's own profile when it has one
        # that works, and tagged with none (a CMYK profile on RGB pixels misnames every
        # colour: a review's finding).
        upright, profile = _cmyk_to_rgb(upright, profile), None
    pixels = _pixels(upright)
    copies, files = [], []
    source = pixels
    for target in sorted(targets, reverse=True):
        size = (target, max(1, round(height * target / width)))
        # Widest first, each from the one before, with Pillow's reduce() before the
        # filter (reducing_gap): a 50-megapixel photo is not filtered whole four times.
        if size != source.size:
            source = source.resize(size, PIL.Image.Resampling.LANCZOS, reducing_gap=3.0)
        resized = source
        # At full width, the original itself is the copy in its own format.
        own_webp = target == width and image.format == "WEBP"
        encodings = [] if own_webp or max(size) > WEBP_MAX_SIDE else [("WEBP", "webp")]
        if same and target < width:
            encodings.append(same)
        for fmt, ext in encodings:
            rel = f"{stem}-{target}w.{ext}"
            files.append((rel, _encode(resized, fmt, profile)))
            copies.append(Copy(rel, size[0], size[1], MIME[ext]))
    own_type = PIL.Image.MIME.get(image.format or "", "")
    copies, files = _lighter_than(len(data), own_type, copies, files)
    copies.sort(key=lambda copy: copy.width)
    return Renditions(width, height, tuple(copies)), files


def _lighter_than(
    weight: int, own_type: str, copies: list[Copy], files: list[tuple[str, bytes]]
) -> tuple[list[Copy], list[tuple[str, bytes]]]:
    """The copies lighter than the original (`weight` bytes): a review's finding, a
    palette PNG's copies (a diagram's: RGB, or WebP) weighed up to 12 times as much. A
    copy in the original's type goes alone (the page offers the original beside them);
    the WebP copies of another type go all together if one does, since a browser that
    takes WebP chooses among them only (blogpublish.site.figures), and a narrower one
    alone would be blurred on a wide screen."""
    heavy = {path for path, data in files if len(data) >= weight}
    if any(c.path in heavy and c.type == "image/webp" != own_type for c in copies):
        heavy |= {c.path for c in copies if c.type == "image/webp"}
    return (
        [c for c in copies if c.path not in heavy],
        [(path, data) for path, data in files if path not in heavy],
    )


def _turned(image: PIL.Image.Image) -> bool:
    """Whether the image's EXIF orientation turns it a quarter (its width is its height)."""
    return image.getexif().get(ORIENTATION) in (5, 6, 7, 8)


def _upright_size(image: PIL.Image.Image) -> tuple[int, int]:
    width, height = image.size
    return (height, width) if _turned(image) else (width, height)


def _cmyk_to_rgb(image: PIL.Image.Image, profile: bytes | None) -> PIL.Image.Image:
    """A CMYK (or grey) image in sRGB: through its colour profile (LittleCMS, in Pillow),
    else Pillow's plain conversion."""
    if profile:
        with contextlib.suppress(PIL.ImageCms.PyCMSError, OSError, ValueError):
            converted = PIL.ImageCms.profileToProfile(
                image, io.BytesIO(profile), PIL.ImageCms.createProfile("sRGB"), outputMode="RGB"
            )
            if converted is not None:
                return converted
    return image.convert("RGB")


def _grey_to_rgb(image: PIL.Image.Image, profile: bytes) -> PIL.Image.Image:
    """A grey image (L, or LA: its alpha kept) in sRGB, through its grey profile."""
    alpha = image.getchannel("A") if image.mode == "LA" else None
    grey = image.convert("L") if image.mode != "L" else image
    rgb = _cmyk_to_rgb(grey, profile)  # any colour space, as for CMYK
    if alpha is not None:
        rgb.putalpha(alpha)
    return rgb


def _pixels(image: PIL.Image.Image) -> PIL.Image.Image:
    """RGB or RGBA (L or LA for grey), so that resizing filters instead of picking pixels."""
    if image.mode in ("RGB", "L") and "transparency" in image.info:
        # A colour key (a PNG's tRNS: what optimisers make of an alpha that is all or
        # nothing) made an alpha: a review's finding, a logo's copies were on black.
        return image.convert("RGBA" if image.mode == "RGB" else "LA")
    if image.mode in ("RGB", "RGBA", "L"):
        return image
    if image.mode in SIXTEEN_BIT_GREY:
        # 0–65535 to 0–255: Pillow's own conversion clamps, and every grey came out white.
        return image.convert("I").point(lambda value: value / 256).convert("L")
    has_alpha = image.mode in ("LA", "PA") or "transparency" in image.info
    return image.convert("RGBA" if has_alpha else "RGB")


def _encode(image: PIL.Image.Image, fmt: str, profile: bytes | None) -> bytes:
    """`image` in `fmt` with nothing but its pixels and colour profile: its `info` is
    emptied (Pillow's JPEG encoder would carry a comment over from it) and no `exif`,
    `xmp` or text is passed."""
    image = image.copy()
    image.info = {}
    if fmt == "WEBP" and profile and profile[16:20] == b"GRAY":
        # WebP holds RGB: grey pixels are made RGB through their grey profile, which
        # would misname RGB ones (a review's finding), and tagged with none.
        image, profile = _grey_to_rgb(image, profile), None
    options: dict = {"icc_profile": profile} if profile else {}
    if fmt == "WEBP":
        options.update(quality=WEBP_QUALITY, method=4)
    elif fmt == "JPEG":
        options.update(quality=JPEG_QUALITY, optimize=True, progressive=True)
        if image.mode == "RGBA":
            image = image.convert("RGB")
    else:
        options.update(optimize=True)
    out = io.BytesIO()
    image.save(out, fmt, **options)
    return out.getvalue()
