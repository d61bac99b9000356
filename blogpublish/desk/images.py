"""Images uploaded from the article form: checked, stripped of location data, stored
under SITE_ROOT by their content, and removed once no article uses them.

- Only real images: Pillow must read the file as PNG, JPEG, GIF or WebP. SVG is refused
  by name (it can carry scripts and links), as is anything else; at most 10 MiB and
  50 megapixels (a small file can unpack to gigabytes of pixels); a JPEG of few enough
  scans for its size (each makes its decoder walk every block: JPEG_MAX_SCAN_PIXELS).
- No metadata is kept but a JPEG's orientation, whatever it says (issue 19): a JPEG is
  rebuilt from the segments a decoder needs, its compressed pixels untouched (no EXIF but
  the orientation, no XMP, Extended XMP, IPTC, comment, or anything after its end); PNG,
  GIF and WebP are re-encoded from their pixels, upright (the orientation applied to
  them), losslessly but for a lossy WebP (no text, iTXt, zTXt or eXIf chunks, no GIF
  comments, no WebP EXIF or XMP chunks); a PNG of 16 bits a sample in colour or with alpha, which
  Pillow reads at 8, is rebuilt from its chunks instead (PNG_KEEP).
- Stored as `media/<sha256 of the stored bytes>.<ext>` with `blogpublish.files`, the
  functions the site writes its pages with (atomic, never through a link); "media" is a
  reserved slug, so no article's page can be there and the full check never takes it
  for one. The same image uploaded twice is one file.
- With smaller copies beside it (`media/<sha256>-<width>w.<ext>`, WebP and the original's
  format, none carrying metadata: blogpublish.desk.renditions), which the pages offer
  in `srcset` (blogpublish.site.figures). The original is kept.
- The full check (`sweep`, from `StaticSitePublisher.reconcile`) removes an image, and
  its copies, once no article uses it, in its text or its live version, and
  IMAGE_GRACE_SECONDS have passed since it was uploaded or last seen in use. It also
  makes the copies of images uploaded before copies were made, a few per check.
"""

from __future__ import annotations

import hashlib
import io
import logging
import re
import struct
import threading
import warnings
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import PIL.Image
import PIL.ImageSequence
import PIL.PngImagePlugin
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from blogpublish.desk import renditions
from blogpublish.exceptions import BlogpublishError, StorageError
from blogpublish.models import Image
from blogpublish.site import paths
from blogpublish.storage import SiteStorage, site_storage
from publishing.exceptions import TIME_LIMITS
from publishing.models import Article, Revision, Story

logger = logging.getLogger(__name__)

MEDIA_DIR = "media"  # a reserved slug (publishing.validators)
IMAGE_MAX_BYTES = 10 * 2**20
IMAGE_MAX_PIXELS = 50_000_000
# An animation's frames (a review's GIF of 450,000 1×1 frames held 1.7 GB while it was
# cleaned, a Python object each): 40 s at 25 frames a second.
IMAGE_MAX_FRAMES = 1_000
# Images uploaded before copies were made, given their copies per full check.
RENDITIONS_PER_CHECK = 20
FORMATS = {"PNG": "png", "JPEG": "jpg", "GIF": "gif", "WEBP": "webp"}
# A phone's multi-picture JPEG (MPO) opens through the JPEG decoder as "MPO": its first
# picture is kept, as a plain JPEG (jpeg_without_location stops at its end).
EXTENSIONS = {**FORMATS, "MPO": "jpg"}
# What an article's Markdown names an image by: media/<64 hex>.<ext>.
IMAGE_REF_RE = re.compile(r"media/([0-9a-f]{64}\.(?:png|jpg|gif|webp))")
# A smaller copy's address in a text (a writer copies it from a live page's `srcset`):
# a use of its original, whose hash it begins with.
COPY_REF_RE = re.compile(r"media/([0-9a-f]{64})-\d+w\.(?:png|jpg|gif|webp)")


class ImageRefused(BlogpublishError):
    """This file is not an image the site accepts."""


@dataclass(frozen=True)
class StoredImage:
    path: str  # relative to SITE_ROOT: media/<sha256>.<ext>
    href: str  # root-relative address readers use
    markdown: str  # what the form inserts
    width: int
    height: int


# How each of the four formats starts (WebP: RIFF, its size, then WEBP).
RASTER_MAGIC = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"GIF87a", b"GIF89a")


def is_raster(head: bytes) -> bool:
    """Whether the file starts as a PNG, JPEG, GIF or WebP does."""
    return head.startswith(RASTER_MAGIC) or (head[:4] == b"RIFF" and head[8:12] == b"WEBP")


def looks_like_svg(head: bytes, name: str, content_type: str) -> bool:
    """Whether the file is named, typed or written as an SVG. Its text is read only when
    it does not start as one of the four formats: a PNG whose text chunk named "<svg"
    was refused as an SVG (a review's), though it is stored as the PNG it is, its text
    chunks gone, and served as one."""
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    return (
        name.lower().endswith((".svg", ".svgz"))
        or "svg" in content_type.lower()
        or (
            not is_raster(head)
            and (text.startswith((b"<svg", b"<?xml", b"<!doctype svg")) or b"<svg" in text[:1024])
        )
    )


def check(data: bytes, *, name: str = "", content_type: str = "") -> tuple[bytes, str, int, int]:
    """(the bytes to store, their extension, width, height), or ImageRefused saying why."""
    if len(data) > IMAGE_MAX_BYTES:
        raise ImageRefused(
            f"“{name}” is {len(data) / 2**20:.1f} MiB; an image may be at most 10 MiB."
        )
    if not data:
        raise ImageRefused(f"“{name}” is empty.")
    if looks_like_svg(data[:4096], name, content_type):
        raise ImageRefused(
            f"“{name}” is an SVG: refused, since an SVG can carry scripts and links. "
            "Export it as PNG or WebP."
        )
    try:
        with pillow_bound():
            with warnings.catch_warnings():  # its size is checked next, and said
                warnings.simplefilter("ignore", PIL.Image.DecompressionBombWarning)
                # Only the four decoders: Pillow's others never see an upload.
                image = PIL.Image.open(io.BytesIO(data), formats=list(FORMATS))
            width, height = image.size
            if width * height > IMAGE_MAX_PIXELS:
                raise ImageRefused(
                    f"“{name}” is {width}×{height} pixels; at most {IMAGE_MAX_PIXELS:,} pixels."
                )
            # An animation's frames are all decoded and kept while it is cleaned: the
            # bound is on all of them (the frames are counted from their headers), and
            # on their number, which also bounds each frame's own cost (a few KB).
            if image.format == "GIF":
                frames = gif_frames(data, image.size, name)
            elif image.format == "MPO":  # only its first picture is decoded and kept
                frames = 1  # (a review's: a phone's photo and its gain map were refused)
            else:
                frames = getattr(image, "n_frames", 1)
            if frames > IMAGE_MAX_FRAMES:
                raise ImageRefused(
                    f"“{name}” is an animation of more than {IMAGE_MAX_FRAMES:,} frames; "
                    f"at most {IMAGE_MAX_FRAMES:,}."
                )
            if frames * width * height > IMAGE_MAX_PIXELS:
                raise ImageRefused(
                    f"“{name}” is an animation of {frames:,} frames of {width}×{height} "
                    f"pixels; at most {IMAGE_MAX_PIXELS:,} pixels in all its frames."
                )
            image.verify()  # reads the whole file: a truncated or corrupt one fails here
            image = PIL.Image.open(io.BytesIO(data), formats=list(FORMATS))  # verify() used it up
    except ImageRefused:
        raise
    except (PIL.Image.DecompressionBombWarning, PIL.Image.DecompressionBombError):
        raise ImageRefused(
            f"“{name}” has too many pixels; at most {IMAGE_MAX_PIXELS:,} pixels."
        ) from None
    except PIL.UnidentifiedImageError:  # its text names only an in-memory object
        raise ImageRefused(
            f"“{name}” is not a PNG, JPEG, GIF or WebP image that Pillow can read."
        ) from None
    except Exception as exc:  # Pillow raises many kinds for what it cannot read
        if _text_too_large(exc):
            raise ImageRefused(TEXT_TOO_LARGE.format(name=name)) from None
        raise ImageRefused(
            f"“{name}” is not a PNG, JPEG, GIF or WebP image that Pillow can read ({_plain(exc)})."
        ) from None
    # Opened with `formats`, an image has one of them (Pillow's format is None only for
    # an image made in memory).
    extension = EXTENSIONS[image.format or ""]
    try:
        # Decoding: verify() checks a PNG's chunks and a JPEG's markers, not a GIF's
        # pixels, which a truncated file lacks (a review's finding: a 500, not this).
        with pillow_bound():
            cleaned = without_location(data, image)
    except ImageRefused as exc:  # a JPEG's segments: named here
        raise ImageRefused(f"“{name}” cannot be read: {exc}.") from None
    except (PIL.Image.DecompressionBombWarning, PIL.Image.DecompressionBombError):
        raise ImageRefused(
            f"“{name}” has too many pixels; at most {IMAGE_MAX_PIXELS:,} pixels."
        ) from None
    except (OSError, SyntaxError, ValueError, EOFError) as exc:
        if _text_too_large(exc):  # a text chunk after the pixels is read with them
            raise ImageRefused(TEXT_TOO_LARGE.format(name=name)) from None
        raise ImageRefused(
            f"“{name}” cannot be read: it is truncated or corrupt ({exc})."
        ) from None
    if extension == "jpg":  # its pixels are decoded for its copies: bounded first
        jpeg_scans_bound(cleaned, width * height, name)
    else:  # encoded anew, upright: a turned image's sides swap
        width, height = PIL.Image.open(io.BytesIO(cleaned)).size
    if len(cleaned) > IMAGE_MAX_BYTES:  # encoded anew, a GIF's frames can weigh more
        raise ImageRefused(
            f"“{name}” is {len(cleaned) / 2**20:.1f} MiB once cleaned; an image may be at "
            "most 10 MiB."
        )
    return cleaned, extension, width, height


# A progressive JPEG's scans: each makes the decoder walk every block of the picture,
# however few bytes it is (a review's 290 KB JPEG of 7000×7000 greys, its last scan of
# 98 bytes repeated 1,000 times, took 38 s to decode for its copies, holding the turn
# every upload waits for). libjpeg's standard progressions have 6 scans (grey), 10
# (colour) or 18 (CMYK); libjpeg-turbo's own fuzzers refuse more than 500 scans
# (TJPARAM_SCANLIMIT, djpeg -maxscans), for pictures of at most a megapixel. So: at
# most 500 scans, and at most 25 scans of the largest picture taken (about 1.3 s of
# decoding at 50 megapixels of grey, where a scan took about 50 ms).
JPEG_MAX_SCANS = 500
JPEG_MAX_SCAN_PIXELS = 25 * IMAGE_MAX_PIXELS


def jpeg_scans_bound(data: bytes, pixels: int, name: str) -> None:
    """ImageRefused when the JPEG `data` (cleaned: its first picture's segments only)
    has more scans than its `pixels` allow (JPEG_MAX_SCANS, JPEG_MAX_SCAN_PIXELS)."""
    scans = sum(1 for marker, _ in jpeg_segments(data) if marker == 0xDA)
    most = max(1, min(JPEG_MAX_SCANS, JPEG_MAX_SCAN_PIXELS // max(pixels, 1)))
    if scans > most:
        raise ImageRefused(
            f"“{name}” has {scans:,} scans; at most {most:,} at its size: re-save it as a "
            "baseline or standard progressive JPEG."
        )


# A PNG's compressed text chunk (zTXt, iTXt: XMP) as Pillow unpacks it, which it bounds
# at 1 MB a chunk (MAX_TEXT_CHUNK) and 64 MB in all (MAX_TEXT_MEMORY): a review's 10 KB
# PNG, its XMP (Photoshop's DocumentAncestors) unpacking to 2.4 MB, was refused as no
# PNG Pillow can read, where the same XMP uncompressed was taken (and dropped, as all
# text is). A chunk may take all of the 64 MB, still bounded; past it, TEXT_TOO_LARGE.
PNG_MAX_TEXT = PIL.PngImagePlugin.MAX_TEXT_MEMORY
TEXT_TOO_LARGE = (
    "“{name}” has metadata (a PNG text chunk, such as XMP) that unpacks to more than "
    f"{PNG_MAX_TEXT // 2**20} MiB; save it without its metadata and upload it again."
)


def _text_too_large(exc: Exception) -> bool:
    """Whether Pillow refused a PNG for its text chunks' size (its own bound's words)."""
    return isinstance(exc, ValueError) and "MAX_TEXT_" in str(exc)


@contextmanager
def pillow_bound() -> Iterator[None]:
    """Pillow's own bound on an image's pixels (its MAX_IMAGE_PIXELS, checked wherever
    it sizes an image: opening it, a GIF's frame growing its canvas) at IMAGE_MAX_PIXELS,
    and its warning an error, while an upload is read: a review's finding, a GIF frame
    past the canvas raised DecompressionBombError outside the checks (a 500). Process
    wide, as Pillow's setting is; uploads are cleaned one at a time (IMAGES_AT_ONCE).
    With it, Pillow's bound on a PNG's compressed text chunk, at PNG_MAX_TEXT."""
    before = PIL.Image.MAX_IMAGE_PIXELS, PIL.PngImagePlugin.MAX_TEXT_CHUNK
    with warnings.catch_warnings():
        warnings.simplefilter("error", PIL.Image.DecompressionBombWarning)
        PIL.Image.MAX_IMAGE_PIXELS = IMAGE_MAX_PIXELS
        PIL.PngImagePlugin.MAX_TEXT_CHUNK = PNG_MAX_TEXT
        try:
            yield
        finally:
            PIL.Image.MAX_IMAGE_PIXELS, PIL.PngImagePlugin.MAX_TEXT_CHUNK = before


def gif_frames(data: bytes, canvas: tuple[int, int], name: str) -> int:
    """How many frames the GIF has, counted up to IMAGE_MAX_FRAMES + 1 (Pillow's n_frames
    reads every one); ImageRefused when one reaches past `canvas` (its size as Pillow
    opens it). Pillow enlarges the canvas for such a frame, and every frame is kept at
    the canvas's size while the GIF is cleaned: a review's GIF of a 1×1 screen and three
    frames of 9,000×9,000 (175 KiB) was bounded as 3 pixels and took 2.3 GB."""
    count = 0
    for right, bottom in gif_frame_extents(data):
        if right > canvas[0] or bottom > canvas[1]:
            raise ImageRefused(
                f"“{name}” has a frame reaching to {right}×{bottom} pixels, past its "
                f"{canvas[0]}×{canvas[1]} screen."
            )
        count += 1
        if count > IMAGE_MAX_FRAMES:
            break
    return count


def gif_frame_extents(data: bytes) -> Iterator[tuple[int, int]]:
    """The right and bottom edge of each frame of a GIF, read from the frames' headers
    (no pixel decoded), as Pillow reads them: to the trailer or the file's end, past any
    byte that starts no block."""
    flags = data[10] if len(data) > 10 else 0
    i = 13 + (3 << ((flags & 7) + 1) if flags & 0x80 else 0)
    while i < len(data) and data[i] != 0x3B:  # the trailer
        if data[i] == 0x21:  # an extension: its label, then its sub-blocks
            i = _after_sub_blocks(data, i + 2)
        elif data[i] == 0x2C and i + 10 <= len(data):  # an image descriptor
            x, y, w, h = struct.unpack_from("<4H", data, i + 1)
            yield x + w, y + h
            local = data[i + 9]
            i += 10 + (3 << ((local & 7) + 1) if local & 0x80 else 0)
            i = _after_sub_blocks(data, i + 1)  # past the LZW code size, then the pixels
        else:
            i += 1


def _after_sub_blocks(data: bytes, i: int) -> int:
    """Where the sub-blocks starting at `i` end (past their zero-length terminator)."""
    while i < len(data) and data[i]:
        i += data[i] + 1
    return i + 1


def _plain(exc: Exception) -> str:
    """An error's text without the Python reprs some carry (`<_io.BytesIO object at
    0x7f…>`), which say nothing to a writer."""
    return re.sub(r"\s*<[^<>]* at 0x[0-9a-fA-F]+>", "", str(exc)).strip() or type(exc).__name__


# --- metadata: only what showing the image needs is kept ----------------------------
#
# Not a hunt for location fields (issue 19: Extended XMP, PNG text and JPEG comments got
# through one), but a whitelist: a JPEG is rebuilt from the segments a decoder needs, its
# compressed pixels untouched; PNG, GIF and WebP are re-encoded from their pixels, made
# upright. The one tag kept is a JPEG's EXIF orientation, in a new EXIF block of its own.

ORIENTATION = 0x0112
# JPEG segments a decoder needs: SOFn, DHT, DAC, DQT, DRI (SOS and its scan are copied
# as they come). APP0 (JFIF), APP2 (ICC_PROFILE) and APP14 (Adobe) are kept for their
# identifier only: they say how to read the colours.
JPEG_KEEP = {*range(0xC0, 0xC8), *range(0xC9, 0xD0), 0xDB, 0xDD}
JPEG_KEEP_APP = {0xE0: (b"JFIF\x00",), 0xE2: (b"ICC_PROFILE\x00",), 0xEE: (b"Adobe",)}


def orientation_exif(image: PIL.Image.Image) -> PIL.Image.Exif | None:
    """A new EXIF block holding only the image's orientation (None when it has none)."""
    orientation = image.getexif().get(ORIENTATION)
    if not isinstance(orientation, int) or not 2 <= orientation <= 8:
        return None
    exif = PIL.Image.Exif()
    exif[ORIENTATION] = orientation
    return exif


def without_location(data: bytes, image: PIL.Image.Image) -> bytes:
    """`data` with no metadata but its orientation: no EXIF (GPS or other), XMP (standard
    or extended), IPTC, comments or text chunks, whatever they say."""
    exif = orientation_exif(image)
    if image.format in ("JPEG", "MPO"):
        return jpeg_without_location(data, exif.tobytes() if exif else None)
    if exif is None and deep_colour_png(data) and getattr(image, "n_frames", 1) == 1:
        image.load()  # decoded all the same: a PNG's pixels that do not decode are refused
        return png_without_location(data)
    return re_encoded(data, image, exif[ORIENTATION] if exif else None)


# How each EXIF orientation (2–8) is made upright (as PIL.ImageOps.exif_transpose does).
UPRIGHT = {
    2: PIL.Image.Transpose.FLIP_LEFT_RIGHT,
    3: PIL.Image.Transpose.ROTATE_180,
    4: PIL.Image.Transpose.FLIP_TOP_BOTTOM,
    5: PIL.Image.Transpose.TRANSPOSE,
    6: PIL.Image.Transpose.ROTATE_270,
    7: PIL.Image.Transpose.TRANSVERSE,
    8: PIL.Image.Transpose.ROTATE_90,
}


def re_encoded(data: bytes, image: PIL.Image.Image, orientation: int | None) -> bytes:
    """PNG, GIF, WebP encoded anew from their pixels (every frame of an animation), with
    only what the pixels need (transparency, frame timing, the colour profile), upright:
    the EXIF orientation applied to the pixels and no EXIF kept (a review's finding: a
    browser may ignore it outside a JPEG, and Chromium showed a turned WebP sideways in
    its upright box). Lossless, but for a lossy WebP, which is re-encoded at quality 90."""
    profile = image.info.get("icc_profile")
    # One frame is encoded from the image itself, its info replaced: a copy of it was
    # as large again (150 MB more for 50 megapixels of RGB).
    single = getattr(image, "n_frames", 1) == 1
    frames = []
    disposed = False
    for frame in PIL.ImageSequence.Iterator(image):
        frame.load()  # a WebP frame's duration is in its info once it is loaded
        info: dict = {k: frame.info[k] for k in FRAME_INFO if k in frame.info}
        # A GIF frame's disposal (cleared after it is shown) is not in Pillow's info.
        disposed = disposed or getattr(frame, "disposal_method", 0) in (2, 3)
        if orientation in UPRIGHT:
            clean = frame.transpose(UPRIGHT[orientation])
        else:
            clean = frame if single else frame.copy()
        clean.info = info
        frames.append(clean)
    options: dict = {}
    if profile:
        options["icc_profile"] = profile
    if len(frames) > 1:
        # Each frame's own time (WebP's encoder would give every frame the first one's).
        durations = [frame.info.get("duration", 0) for frame in frames]
        if image.info.get("default_image"):
            # An APNG's default image, shown where APNG is not, is no frame of its
            # animation (a review's: it became its first frame): Pillow reads it as frame
            # 0, and writes it so only when told, the animation and its times after it.
            options["default_image"] = True
            durations = durations[1:]
        options.update(save_all=True, append_images=frames[1:], duration=durations)
        if image.format == "PNG":
            # The frames are whole pictures, as Pillow composes them, each written over
            # the one before (its change only), replacing it (OP_SOURCE): Pillow's writer
            # took the first frame's disposal and blend for every frame, and a frame
            # blended over the one before (OP_OVER) showed it through its translucent
            # pixels (126 of 216 mixes of three frames' disposals and blends were shown
            # otherwise).
            options.update(disposal=0, blend=0)
        if image.format == "WEBP":
            # Pillow's WebP writer reads the loop count from its options alone (GIF's and
            # APNG's from the first frame's info): an animation made to play once looped
            # forever (a review's).
            options["loop"] = image.info.get("loop", 0)
        # A pixel turning transparent is what needs the frames cleared: in a GIF with
        # none, kept frames show as they were (a review's: one cleared frame of a
        # hundred opaque ones made each frame whole, 300 KB cleaned into 21 MiB).
        transparent = any(f.mode in ALPHA_MODES or "transparency" in f.info for f in frames)
        if image.format == "GIF" and disposed and transparent:
            # The frames are whole pictures, as Pillow composes them. Kept on the screen
            # (the default), Pillow writes what changed only, where a transparent pixel
            # shows the one before: a frame cleared to a transparent background was seen
            # under the next (a review's: a sticker's moving box smeared). Each frame
            # cleared, Pillow writes every frame's visible part. The original's own
            # disposals are not enough when they are mixed: Pillow's writer takes a
            # cleared frame to have cleared the whole screen.
            options["disposal"] = 2
    if image.format == "WEBP":
        # A lossless WebP stays lossless; a lossy one is re-encoded.
        options.update({"lossless": True} if webp_is_lossless(data) else {"quality": 90})
    if image.format == "GIF":
        options["comment"] = b""  # Pillow would carry a frame's comment over otherwise
    out = io.BytesIO()
    frames[0].save(out, image.format, **options)
    return out.getvalue()


def webp_is_lossless(data: bytes) -> bool:
    """Whether every picture of a WebP is a lossless (VP8L) bitstream, read from its RIFF
    chunks and an animation's frames' own: a review's finding, looking for "VP8L" in the
    first 64 bytes missed one after a colour profile, or in an animation's frames, and
    they were re-encoded lossy."""
    return set(_webp_bitstreams(data[12:])) == {b"VP8L"}


def _webp_bitstreams(chunks: bytes) -> Iterator[bytes]:
    """The kind of each picture's bitstream (VP8 or VP8L) in these RIFF chunks."""
    i = 0
    while i + 8 <= len(chunks):
        kind, size = chunks[i : i + 4], int.from_bytes(chunks[i + 4 : i + 8], "little")
        if kind in (b"VP8 ", b"VP8L"):
            yield kind
        elif kind == b"ANMF":  # a frame: 16 bytes of its place and time, then its chunks
            yield from _webp_bitstreams(chunks[i + 8 + 16 : i + 8 + size])
        i += 8 + size + (size & 1)  # a chunk is padded to an even length


# What a frame's pixels need from Pillow's info to be encoded as they were.
ALPHA_MODES = ("RGBA", "LA", "PA")
FRAME_INFO = ("transparency", "duration", "loop", "background", "disposal", "blend")


def jpeg_without_location(data: bytes, exif: bytes | None) -> bytes:
    """The JPEG rebuilt from the segments a decoder needs (JPEG_KEEP, JPEG_KEEP_APP), with
    `exif` (an EXIF block, or None) after its JFIF header. The scans' compressed bytes are
    copied as they were, so the pixels are too; nothing after the end marker is kept."""
    out = []
    for marker, segment in jpeg_segments(data):
        # A scan (SOS, 0xDA) comes with its compressed bytes, as they were.
        if (
            marker == 0xDA
            or marker in JPEG_KEEP
            or (marker in JPEG_KEEP_APP and segment[4:].startswith(JPEG_KEEP_APP[marker]))
        ):
            out.append(segment)
    head = [b"\xff\xd8"]
    if out and out[0][1] == 0xE0:  # JFIF wants to be first
        head.append(out.pop(0))
    if exif is not None and len(exif) + 2 <= 0xFFFF:
        head.append(b"\xff\xe1" + (len(exif) + 2).to_bytes(2, "big") + exif)
    return b"".join([*head, *out, b"\xff\xd9"])


def jpeg_segments(data: bytes) -> Iterator[tuple[int, bytes]]:
    """Each segment of a JPEG up to its end marker, as (its marker, its bytes): a scan's
    with its compressed bytes. Walked by the segments' lengths, so what a segment holds
    (an EXIF thumbnail's own markers) is never taken for a segment of the image."""
    if data[:2] != b"\xff\xd8":
        raise ImageRefused("the JPEG does not start as a JPEG does")
    i = 2
    while True:
        if i + 2 > len(data) or data[i] != 0xFF:
            raise ImageRefused("the JPEG's segments are damaged or it has no end")
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker == 0xD9:  # end of image
            return
        if 0xD0 <= marker <= 0xD7 or marker == 0x01:  # no length; harmless, dropped
            i += 2
            continue
        start, i = i, i + 2 + int.from_bytes(data[i + 2 : i + 4], "big")
        if marker == 0xDA:  # start of scan: its compressed bytes run to the next marker
            i = jpeg_scan_end(data, i)
        yield marker, data[start:i]


def jpeg_scan_end(data: bytes, i: int) -> int:
    """Where the compressed bytes starting at `i` end: the next 0xFF that is not a stuffed
    zero (FF 00) or a restart marker (FF D0–D7)."""
    while True:
        i = data.find(b"\xff", i)
        if i < 0 or i + 1 >= len(data):
            raise ImageRefused("the JPEG's compressed data has no end")
        after = data[i + 1]
        if after == 0x00 or 0xD0 <= after <= 0xD7:
            i += 2
        elif after == 0xFF:  # fill bytes before a marker
            i += 1
        else:
            return i


# A PNG's chunks a decoder needs, or that say how to show its colours: no text (tEXt,
# zTXt, iTXt: XMP too), eXIf, time, or any other.
PNG_KEEP = {b"IHDR", b"PLTE", b"tRNS", b"gAMA", b"cHRM", b"sRGB", b"iCCP", b"sBIT", b"IDAT"}


def deep_colour_png(data: bytes) -> bool:
    """Whether the PNG is RGB, RGBA or grey with alpha of 16 bits a sample, which Pillow
    decodes at 8: encoded anew from its pixels, it lost half its depth (a review's
    finding), so it is rebuilt from its chunks instead, but when it must be turned
    upright. (16-bit grey alone Pillow reads and writes at 16.)"""
    return data[12:16] == b"IHDR" and data[24:26] in (b"\x10\x02", b"\x10\x04", b"\x10\x06")


def png_without_location(data: bytes) -> bytes:
    """The PNG rebuilt from the chunks of PNG_KEEP, its pixels as they were; the colour
    profile's name (free text) replaced by Pillow's own. The pixels' stream is read and
    compressed again into one IDAT of the bytes the image needs: copied as it was, what
    follows the stream's end, or the image's last row, in its IDATs was kept, somewhere
    to hide what the other chunks were cleaned of (a review's finding)."""
    out, i = [data[:8]], 8
    idats: list[bytes] = []
    while True:
        if i + 12 > len(data):
            raise ImageRefused("the PNG's chunks are damaged or it has no end")
        length = int.from_bytes(data[i : i + 4], "big")
        kind, payload = data[i + 4 : i + 8], data[i + 8 : i + 8 + length]
        chunk, i = data[i : i + 12 + length], i + 12 + length
        if kind == b"IEND":
            break
        if kind == b"iCCP":  # its name, a zero, the compression (0), the profile
            chunk = _png_chunk(kind, b"ICC Profile\0" + payload[payload.find(b"\0") + 1 :])
        if kind == b"IDAT":
            if not idats:
                out.append(b"")  # the place of the one IDAT written
            idats.append(payload)
        elif kind in PNG_KEEP:
            out.append(chunk)
    if not idats:
        raise ImageRefused("the PNG has no pixels")
    out[out.index(b"")] = _png_chunk(b"IDAT", _pixels_only(idats, _png_raw_size(data[16:29])))
    return b"".join([*out, _png_chunk(b"IEND", b"")])


# Adam7's seven passes (the PNG specification, 8.2): each one's first column and row,
# and its steps across and down.
ADAM7_PASSES = (
    (0, 0, 8, 8),
    (4, 0, 8, 8),
    (0, 4, 4, 8),
    (2, 0, 4, 4),
    (0, 2, 2, 4),
    (1, 0, 2, 2),
    (0, 1, 1, 2),
)


def _png_raw_size(ihdr: bytes) -> int:
    """The bytes of a PNG's filtered rows (a filter byte each), from its IHDR's
    width, height, bit depth, colour type and interlace (Adam7's seven passes)."""
    width, height = int.from_bytes(ihdr[0:4], "big"), int.from_bytes(ihdr[4:8], "big")
    depth, colour, interlace = ihdr[8], ihdr[9], ihdr[12]
    bits = depth * {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}.get(colour, 4)
    total = 0
    for x0, y0, dx, dy in ADAM7_PASSES if interlace else [(0, 0, 1, 1)]:
        w, h = -(-(width - x0) // dx), -(-(height - y0) // dy)
        if w > 0 and h > 0:
            total += h * (1 + -(-w * bits // 8))
    return total


def _pixels_only(idats: list[bytes], size: int) -> bytes:
    """The first `size` bytes of the IDATs' zlib stream, compressed again; streamed, so
    a 16-bit picture's rows are never all in memory at once."""
    inflate, deflate = zlib.decompressobj(), zlib.compressobj(9)
    out, left = [], size
    for payload in idats:
        pending = payload
        while pending and left > 0 and not inflate.eof:
            rows = inflate.decompress(pending, min(left, 1 << 20))
            pending = inflate.unconsumed_tail
            left -= len(rows)
            out.append(deflate.compress(rows))
    if left > 0:
        raise ImageRefused("the PNG's pixels are cut short")
    return b"".join([*out, deflate.flush()])


def _png_chunk(kind: bytes, payload: bytes) -> bytes:
    crc = zlib.crc32(kind + payload).to_bytes(4, "big")
    return len(payload).to_bytes(4, "big") + kind + payload + crc


# --- storing ---------------------------------------------------------------------------


def alt_text(name: str) -> str:
    """The file's name without its extension, as the image's alt text."""
    stem = Path(name).stem if name else ""
    return " ".join(re.sub(r"[\[\]\\`*_<>]+", " ", stem).split())[:100] or "image"


# Uploads cleaned and made into copies at once in one process: each may hold a few
# hundred MB of pixels while it is (a 50-megapixel PNG about 230 MB, a JPEG about 50:
# docs/writing.md), and a web process serves several requests at once (gunicorn's
# threads), so eight uploads at once could take two gigabytes. IMAGES_WAITING more wait
# for their turn, up to IMAGE_WAIT_SECONDS; any other is told at once to try again
# (ImageBusy: 503), as the preview is: a waiting upload holds one of the process's
# threads, and uploads waiting in every thread stalled every other request (a review's:
# a 27 s `/healthz` with 14 uploads at once on 4 threads).
IMAGES_AT_ONCE = 1
IMAGES_WAITING = 1
IMAGE_WAIT_SECONDS = 15.0


class ImageBusy(BlogpublishError):
    """Other uploads hold the server's turns, or held them past IMAGE_WAIT_SECONDS."""


class Turns:
    """`at_once` holders, and at most `waiting` waiting in line for a turn. A newcomer
    takes a free turn only when nobody waits for it, so with one waiting (IMAGES_WAITING)
    it is first come, first served; among several, the order is the semaphore's."""

    def __init__(self, at_once: int, waiting: int) -> None:
        self._free = threading.BoundedSemaphore(at_once)
        self._lock = threading.Lock()
        self.waiting = 0
        self.most_waiting = waiting

    @contextmanager
    def turn(self, timeout: float) -> Iterator[None]:
        with self._lock:
            taken = self.waiting == 0 and self._free.acquire(blocking=False)
            if not taken and self.waiting >= self.most_waiting:
                raise ImageBusy(BUSY)
            self.waiting += 0 if taken else 1
        if not taken:
            try:
                taken = self._free.acquire(timeout=timeout)
            finally:
                with self._lock:
                    self.waiting -= 1
            if not taken:
                raise ImageBusy(BUSY)
        try:
            yield
        finally:
            self._free.release()


BUSY = "The server is cleaning other images; try this one again in a moment."
_cleaning = Turns(IMAGES_AT_ONCE, IMAGES_WAITING)


def store(data: bytes, *, name: str = "", content_type: str = "") -> StoredImage:
    """Check, clean and store an upload with its smaller copies (blogpublish.desk.renditions);
    ImageRefused (nothing stored) when refused, ImageBusy when others held its turn."""
    with _cleaning.turn(IMAGE_WAIT_SECONDS):
        cleaned, ext, width, height = check(data, name=name, content_type=content_type)
        rel = f"{MEDIA_DIR}/{hashlib.sha256(cleaned).hexdigest()}.{ext}"
        made, copies = copies_of(cleaned, rel, name)  # outside the transaction: CPU only
    site = site_storage()
    # The row first, then the files, in one transaction: the sweep deletes a row under
    # the row's lock and unlinks inside it, so it can never unlink a file being stored.
    for last_try in (False, True):
        try:
            with transaction.atomic():
                # Waits for a sweep holding the row; finds it gone then, and makes it anew.
                now = timezone.now()
                fresh = {"uploaded_at": now, "renditions": made.as_json()}
                made_row = not Image.objects.filter(path=rel).update(**fresh)
                if made_row:
                    Image.objects.create(
                        path=rel,
                        original_name=name[:255],
                        size=len(cleaned),
                        width=width,
                        height=height,
                        **fresh,
                    )
                _write_all(site, [(rel, cleaned), *copies], take_back=made_row)
            break
        except IntegrityError:  # the same bytes uploaded at the same moment
            if last_try:
                raise
    href = f"{paths.site_path()}/{rel}"
    return StoredImage(rel, href, f"![{alt_text(name)}]({href})", made.width, made.height)


def _write_all(site: SiteStorage, files: list[tuple[str, bytes]], *, take_back: bool) -> None:
    """Each file written; when one fails, with `take_back` (the upload made the row,
    which the failure rolls back), those written and the one that failed (a PUT given up
    may have landed) removed, best effort, before the row's lock is let go: no sweep goes
    by a row that is not there, and they stayed in media/ for good (a review's finding).
    Without it, the files are another upload's of the same bytes, and stay."""
    tried: list[str] = []
    try:
        for rel, data in files:
            tried.append(rel)
            site.write(rel, data)
    except (OSError, StorageError):
        for rel in tried if take_back else ():
            try:
                site.delete(rel)
            except (OSError, StorageError) as exc:
                logger.warning("an upload that failed left %s behind: %s", rel, exc)
        raise


# What Pillow raises for pixels it cannot decode (a truncated scan, a lossless JPEG's
# SOF3, a Huffman table of no codes; struct.error: a header cut short) or a size past
# its bound.
UNDECODABLE = (
    OSError,
    SyntaxError,
    ValueError,
    EOFError,
    struct.error,
    PIL.Image.DecompressionBombError,
    PIL.Image.DecompressionBombWarning,
)


def copies_of(
    cleaned: bytes, rel: str, name: str
) -> tuple[renditions.Renditions, list[tuple[str, bytes]]]:
    """renditions.make, its decoding errors an ImageRefused: check() decodes no JPEG's
    pixels (it keeps them as they are), so a JPEG they fail to decode in is first decoded
    here (a review's finding: a 500 for a lossless JPEG, or a Huffman table of no codes)."""
    try:
        with pillow_bound():
            return renditions.make(cleaned, path=rel)
    except UNDECODABLE as exc:
        raise ImageRefused(
            f"“{name}” cannot be read: its pixels do not decode ({_plain(exc)})."
        ) from None


def make_missing_renditions(site: SiteStorage, *, limit: int = RENDITIONS_PER_CHECK) -> int:
    """The copies of images uploaded before copies were made, `limit` images per call
    (the full check's): returns how many were done. An original that is missing or
    cannot be decoded is logged and recorded as having no copies (`failed` says why), so
    that it is not tried again: a review's finding, one such image was picked first by
    every check, and raised or took the budget, so no other got its copies. Setting its
    renditions to null again (the file restored) has it tried again. Not so what says
    nothing of the image: the task's time limit is raised through, and an image that
    found the process short of memory is recorded so (`short_of_memory`) and tried again
    by later checks, after every image not tried yet: one that is short of memory every
    time (a limit on the address space, Pillow on a size) holds no place of theirs (a
    review's finding)."""
    done = 0
    fields = ("pk", "path", "width", "height")
    rows = list(
        Image.objects.filter(renditions__isnull=True).order_by("pk").values_list(*fields)[:limit]
    )
    if len(rows) < limit:
        waiting = Image.objects.filter(renditions__short_of_memory=True).order_by("pk")
        rows += waiting.values_list(*fields)[: limit - len(rows)]
    for pk, rel, width, height in rows:
        data = site.read(rel)
        try:
            if data is None:
                raise FileNotFoundError("not in the site's storage")
            with pillow_bound():
                made, copies = renditions.make(data, path=rel)
        except TIME_LIMITS:
            raise
        except Exception as exc:  # whatever it is (UNDECODABLE, or a bug), it is this image's
            short = isinstance(exc, MemoryError)
            reason = "this process was short of memory" if short else _plain(exc)
            logger.warning("the copies of the image %s cannot be made: %s", rel, reason)
            failed = {"width": width, "height": height, "copies": [], "failed": reason}
            Image.objects.filter(
                Q(renditions__isnull=True) | Q(renditions__short_of_memory=True), pk=pk
            ).update(renditions=failed | ({"short_of_memory": True} if short else {}))
            continue
        with transaction.atomic():
            if not Image.objects.select_for_update().filter(pk=pk).exists():
                continue  # swept meanwhile
            for copy_rel, copy in copies:
                site.write(copy_rel, copy)
            Image.objects.filter(pk=pk).update(renditions=made.as_json())
        done += 1
    return done


def copy_paths(made: dict | None) -> list[str]:
    """The paths of the copies an `Image.renditions` value names."""
    return [copy["path"] for copy in (made or {}).get("copies", ())]


# --- the full check ----------------------------------------------------------------------


def used_paths() -> set[str]:
    """Every image path named by some article's text or live version, or by a story's
    draft or revision, in the trash too (issue 22): one pass over the bodies; the full
    check reads the whole site anyway."""
    used: set[str] = set()
    copied: set[str] = set()  # the hashes of the copies named
    named = f"{MEDIA_DIR}/"
    texts = [
        Article.objects.filter(Q(body__contains=named) | Q(published_body__contains=named))
        .values_list("body", "published_body")
        .iterator(chunk_size=200),
        Story.objects.filter(body__contains=named).values_list("body").iterator(chunk_size=200),
        Revision.objects.filter(body__contains=named).values_list("body").iterator(chunk_size=200),
    ]
    for rows in texts:
        for row in rows:
            for text in row:
                used.update(f"{MEDIA_DIR}/{m}" for m in IMAGE_REF_RE.findall(text or ""))
                copied.update(COPY_REF_RE.findall(text or ""))
    return used | _originals_of(copied)


def _originals_of(hashes: set[str]) -> set[str]:
    """The paths of the images these hashes are of (an original's extension is its row's)."""
    found: set[str] = set()
    ordered = sorted(hashes)
    for start in range(0, len(ordered), 100):
        either = Q()
        for digest in ordered[start : start + 100]:
            either |= Q(path__startswith=f"{MEDIA_DIR}/{digest}.")
        found.update(Image.objects.filter(either).values_list("path", flat=True))
    return found


def in_use(rel: str) -> bool:
    """Some article, story or revision names `rel` (media/<sha256>.<ext>), or one of its
    copies (media/<sha256>-<width>w.<ext>), now."""
    copy = f"{rel.rsplit('.', 1)[0]}-"
    return any(
        Article.objects.filter(Q(body__contains=name) | Q(published_body__contains=name)).exists()
        or Story.objects.filter(body__contains=name).exists()
        or Revision.objects.filter(body__contains=name).exists()
        for name in (rel, copy)
    )


def sweep(site: SiteStorage) -> list[str]:
    """Remove the images no article has used for IMAGE_GRACE_SECONDS; returns their paths."""
    now = timezone.now()
    cutoff = now - timedelta(seconds=settings.IMAGE_GRACE_SECONDS)
    if not Image.objects.filter(uploaded_at__lt=cutoff).exists():
        return []
    used = used_paths()
    Image.objects.filter(path__in=used).update(last_used_at=now)
    stale = Q(uploaded_at__lt=cutoff) & (Q(last_used_at__isnull=True) | Q(last_used_at__lt=cutoff))
    removed = []
    stale_rows = Image.objects.filter(stale).exclude(path__in=used)
    for pk, rel, made in stale_rows.values_list("pk", "path", "renditions"):
        with transaction.atomic():
            # Locked and checked again: an upload of the same bytes meanwhile renews it.
            if not Image.objects.select_for_update().filter(stale, pk=pk).exists():
                continue
            if in_use(rel):  # used since the pass began
                continue
            Image.objects.filter(pk=pk).delete()
            site.delete(rel)
            for copy_rel in copy_paths(made):
                site.delete(copy_rel)
        logger.info("removed %s, which no article has used since the grace period", rel)
        removed.append(rel)
    return removed
