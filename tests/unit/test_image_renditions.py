"""The smaller copies of an upload (blogpublish.desk.renditions) and how a page offers
them (blogpublish.site.figures): pure functions, no database."""

from __future__ import annotations

import io
import os
import re
import struct

import PIL.Image
import PIL.ImageChops
import PIL.ImageStat
import pytest

from blogpublish.desk import renditions
from blogpublish.desk.images import check
from blogpublish.desk.renditions import Copy, Renditions
from blogpublish.site import figures
from tests.support.desk import image_bytes

SHA = "ab" * 32


def made(fmt: str, size: tuple[int, int], **kwargs) -> tuple[Renditions, dict[str, bytes]]:
    cleaned, ext, _w, _h = check(image_bytes(fmt, size=size, **kwargs), name=f"x.{fmt}")
    record, files = renditions.make(cleaned, path=f"media/{SHA}.{ext}")
    return record, dict(files)


@pytest.mark.parametrize(
    ("fmt", "size", "expected"),
    [
        # A wide JPEG: WebP and JPEG at every width below its own; no copy wider than 1600.
        (
            "JPEG",
            (2000, 1000),
            [(w, t) for w in (400, 800, 1200, 1600) for t in ("image/webp", "image/jpeg")],
        ),
        # A PNG of 900: PNG and WebP below it, and a WebP at its own width.
        (
            "PNG",
            (900, 300),
            [
                (400, "image/webp"),
                (400, "image/png"),
                (800, "image/webp"),
                (800, "image/png"),
                (900, "image/webp"),
            ],
        ),
        # A WebP: WebP copies only, none at its own width (the original is that).
        ("WEBP", (1000, 500), [(400, "image/webp"), (800, "image/webp")]),
        # A GIF: WebP copies only (a GIF copy would lose colours to a palette).
        ("GIF", (500, 100), [(400, "image/webp"), (500, "image/webp")]),
    ],
)
def test_copies_at_each_width_below_the_image_in_webp_and_its_own_format(fmt, size, expected):
    record, files = made(fmt, size)

    assert [(c.width, c.type) for c in record.copies] == expected
    assert (record.width, record.height) == size
    for copy in record.copies:
        assert re.fullmatch(rf"media/{SHA}-{copy.width}w\.(webp|jpg|png)", copy.path)
        image = PIL.Image.open(io.BytesIO(files[copy.path]))
        assert image.size == (copy.width, copy.height)
        assert PIL.Image.MIME[image.format] == copy.type
        assert copy.height == round(size[1] * copy.width / size[0])


def test_copies_carry_no_exif_and_are_upright():
    # The original keeps its orientation tag (6: turned 90° clockwise): shown 48 × 64.
    record, files = made("JPEG", (64, 48), gps=True)

    assert (record.width, record.height) == (48, 64)
    assert [c.type for c in record.copies] == ["image/webp"]  # only at its own width
    for data in files.values():
        image = PIL.Image.open(io.BytesIO(data))
        assert image.size == (48, 64)
        assert not image.getexif()
        assert "exif" not in image.info and "xmp" not in image.info


def test_an_animation_gets_no_copies():
    frames = [PIL.Image.new("RGB", (900, 600), colour) for colour in ("red", "blue")]
    out = io.BytesIO()
    frames[0].save(out, "GIF", save_all=True, append_images=frames[1:], duration=100)

    record, files = renditions.make(out.getvalue(), path=f"media/{SHA}.gif")

    assert (record.width, record.height, record.copies, files) == (900, 600, (), [])


@pytest.mark.parametrize(
    ("mode", "key", "logo"), [("RGB", (0, 0, 0), (200, 30, 30)), ("L", 0, 180)], ids=["RGB", "L"]
)
def test_a_pngs_colour_key_stays_transparent_in_its_copies(mode, key, logo):
    """A PNG of RGB or grey pixels with a transparent colour (tRNS): its copies had an
    opaque black background (a review's finding)."""
    image = PIL.Image.new(mode, (900, 300), key)  # the background: the transparent colour
    image.paste(logo, (300, 100, 600, 200))
    # Noise on the logo: copies lighter than the original, so they are made.
    image.paste(PIL.Image.effect_noise((200, 60), 40).convert(mode), (350, 120))
    out = io.BytesIO()
    image.save(out, "PNG", transparency=key)
    cleaned, ext, *_ = check(out.getvalue(), name="logo.png")

    _record, files = renditions.make(cleaned, path=f"media/{SHA}.{ext}")

    assert {path.rsplit("-", 1)[1] for path, _ in files} >= {"400w.png", "400w.webp"}
    for path, data in files:
        copy = PIL.Image.open(io.BytesIO(data)).convert("RGBA")
        assert copy.getpixel((2, 2))[3] == 0, path  # the background
        assert copy.getpixel((copy.width // 2, copy.height // 2))[3] == 255, path  # the logo


def test_no_copy_is_heavier_than_the_original():
    """A review's finding: a palette PNG (a diagram) got RGB copies up to 12 times as
    heavy as itself, in PNG and in WebP."""
    import PIL.ImageDraw

    diagram = PIL.Image.new("P", (1000, 500), 0)
    diagram.putpalette([255, 255, 255, 0, 0, 0, 200, 30, 30])
    draw = PIL.ImageDraw.Draw(diagram)
    for x in range(0, 1000, 23):
        draw.line([(x, 0), (1000 - x, 500)], fill=1 + x % 2, width=2)
    out = io.BytesIO()
    diagram.save(out, "PNG", optimize=True)
    cleaned, ext, *_ = check(out.getvalue(), name="diagram.png")

    record, files = renditions.make(cleaned, path=f"media/{SHA}.{ext}")

    # Its PNG copies weigh 3 and 7 times as much, its WebP ones up to 4 times but for the
    # narrowest, which goes with them: the page offers the original alone.
    assert (record.copies, files) == ((), [])


@pytest.mark.parametrize(
    ("weights", "kept"),
    [
        # A copy in the original's own type goes alone: the page offers the original.
        ({"400w.png": 10, "800w.png": 100, "400w.webp": 5, "800w.webp": 50}, 3),
        # The WebP copies go together: a browser choosing among them alone would get
        # the 400 on a wide screen.
        ({"400w.png": 10, "800w.png": 50, "400w.webp": 5, "800w.webp": 100}, 2),
    ],
)
def test_a_copy_as_heavy_as_the_original_goes_and_the_webp_ones_together(weights, kept):
    copies = [
        Copy(f"media/{SHA}-{name}", int(name[:3]), 1, renditions.MIME[name.rsplit(".")[1]])
        for name in weights
    ]
    files = [(f"media/{SHA}-{name}", b"x" * weight) for name, weight in weights.items()]

    left, left_files = renditions._lighter_than(100, "image/png", copies, files)

    assert len(left) == len(left_files) == kept
    assert all(len(data) < 100 for _path, data in left_files)


def test_renditions_round_trip_through_json():
    record, _ = made("PNG", (900, 300))
    assert Renditions.from_json(record.as_json()) == record


# --- how a page offers them ------------------------------------------------------------

JPEG = Renditions(
    2000,
    1000,
    (
        Copy(f"media/{SHA}-400w.webp", 400, 200, "image/webp"),
        Copy(f"media/{SHA}-400w.jpg", 400, 200, "image/jpeg"),
        Copy(f"media/{SHA}-800w.webp", 800, 400, "image/webp"),
        Copy(f"media/{SHA}-800w.jpg", 800, 400, "image/jpeg"),
    ),
)


def lookup_of(known: dict[str, Renditions]):
    asked = []

    def lookup(paths):
        asked.append(set(paths))
        return {p: known[p] for p in paths if p in known}

    return lookup, asked


def test_an_uploaded_image_gets_its_size_srcset_sizes_and_a_webp_source():
    lookup, asked = lookup_of({f"media/{SHA}.jpg": JPEG})
    html = f'<p><img src="/media/{SHA}.jpg" alt="A &quot;view&quot; &gt; all"></p>'

    out = figures.fit(html, lookup)

    assert asked == [{f"media/{SHA}.jpg"}]
    assert out == (
        "<p><picture>"
        f'<source type="image/webp" srcset="/media/{SHA}-400w.webp 400w, '
        f'/media/{SHA}-800w.webp 800w" sizes="{figures.SIZES}">'
        f'<img src="/media/{SHA}.jpg" alt="A &quot;view&quot; &gt; all" loading="lazy" '
        'decoding="async" width="2000" height="1000" '
        f'srcset="/media/{SHA}-400w.jpg 400w, /media/{SHA}-800w.jpg 800w, '
        f'/media/{SHA}.jpg 2000w" sizes="{figures.SIZES}">'
        "</picture></p>"
    )


def test_any_other_image_is_loaded_lazily_and_keeps_what_it_has():
    lookup, _ = lookup_of({})
    html = (
        '<img src="https://example.com/a.png" alt="x" width="10">'
        f'<img src="/media/{SHA}.png" alt="uploaded before copies were made">'
    )

    out = figures.fit(html, lookup)

    assert out == (
        '<img src="https://example.com/a.png" alt="x" width="10" loading="lazy" '
        'decoding="async">'
        f'<img src="/media/{SHA}.png" alt="uploaded before copies were made" '
        'loading="lazy" decoding="async">'
    )


def test_an_img_inside_an_attribute_value_is_text_and_left_alone():
    lookup, asked = lookup_of({f"media/{SHA}.jpg": JPEG})
    # What the sanitiser writes for a title holding markup: `<` and `>` unescaped.
    html = f'<a title="<img src=&quot;/media/{SHA}.jpg&quot;> onerror=x">link</a>'

    assert figures.fit(html, lookup) == html
    assert asked == []


def test_a_writers_own_size_is_kept():
    lookup, _ = lookup_of({f"media/{SHA}.jpg": JPEG})
    out = figures.fit(f'<img src="/media/{SHA}.jpg" alt="" width="300">', lookup)
    assert 'width="300"' in out and 'height="' not in out and "srcset" in out


def test_a_copy_taller_than_webp_allows_is_made_in_the_originals_format_only():
    """A long screenshot (800×17,000): WebP holds at most 16,383 a side, and its encoder
    raised ValueError (a 500 at upload). The copies WebP can hold are still made."""
    record, files = made("JPEG", (800, 17_000))
    kinds = [(copy.width, copy.height, copy.type) for copy in record.copies]
    assert kinds == [(400, 8500, "image/webp"), (400, 8500, "image/jpeg")]
    for path, data in files.items():
        assert PIL.Image.open(io.BytesIO(data)).format == (
            "WEBP" if path.endswith("webp") else "JPEG"
        )


def test_a_16_bit_grey_pngs_copies_keep_their_greys():
    """Pillow's own conversion of 16-bit grey clamps to 255: every copy came out white."""
    image = PIL.Image.new("I;16", (900, 300), 30_000)  # 30000 / 65535: a mid grey
    out = io.BytesIO()
    image.save(out, "PNG")
    cleaned, ext, _w, _h = check(out.getvalue(), name="grey.png")
    _record, files = renditions.make(cleaned, path=f"media/{SHA}.{ext}")
    assert files
    for data in dict(files).values():
        copy = PIL.Image.open(io.BytesIO(data)).convert("L")
        assert copy.getpixel((10, 10)) in range(114, 121)  # 30000 / 256 = 117


@pytest.mark.parametrize("with_profile", [False, True])
def test_a_cmyk_jpegs_copies_are_rgb_and_carry_no_cmyk_profile(with_profile):
    """Copies are RGB; the original's CMYK profile on them named their colours wrongly
    (a review). Red in CMYK stays red; a profile that cannot be used (this one is only
    a header) falls back to Pillow's own conversion."""
    options = {}
    if with_profile:
        icc = bytearray(132)
        icc[0:4] = (132).to_bytes(4, "big")
        icc[12:16], icc[16:20], icc[20:24], icc[36:40] = b"prtr", b"CMYK", b"Lab ", b"acsp"
        options["icc_profile"] = bytes(icc)
    out = io.BytesIO()
    PIL.Image.new("CMYK", (900, 300), (0, 255, 255, 0)).save(out, "JPEG", **options)
    cleaned, ext, _w, _h = check(out.getvalue(), name="print.jpg")
    _record, files = renditions.make(cleaned, path=f"media/{SHA}.{ext}")
    assert files
    for data in dict(files).values():
        copy = PIL.Image.open(io.BytesIO(data))
        assert copy.mode in ("RGB", "RGBA")
        assert copy.info.get("icc_profile") is None
        red, green, blue = copy.convert("RGB").getpixel((10, 10))
        assert red > 200 and green < 60 and blue < 60


@pytest.mark.parametrize("size", [(7000, 3000), (3000, 7000), (1700, 900), (1601, 5)])
def test_a_large_jpeg_turned_or_not_gets_its_copies_from_a_scaled_decode(size):
    """A JPEG wider than the widest copy is decoded at 1/2, 1/4 or 1/8 of its size (the
    decoder's DCT scaling): the copies have the sizes of the whole decode, upright."""
    for turned in (False, True):
        record, files = made("JPEG", size, gps=turned)  # gps=True: orientation 6 too
        upright = size[::-1] if turned else size
        assert (record.width, record.height) == upright
        widths = [w for w in renditions.WIDTHS if w < upright[0]]
        widths += [upright[0]] if upright[0] <= renditions.WIDTHS[-1] else []
        assert sorted({c.width for c in record.copies}) == widths
        for copy in record.copies:
            image = PIL.Image.open(io.BytesIO(files[copy.path]))
            assert image.size == (copy.width, copy.height)
            assert copy.height == max(1, round(upright[1] * copy.width / upright[0]))


@pytest.mark.parametrize("size", [(20000, 10), (10, 20000), (9000, 70)])
def test_a_panoramas_copies_from_a_scaled_decode_keep_its_colours(size):
    """An eighth of a few rows would be mostly the padding of JPEG's 8-pixel blocks."""
    image = PIL.Image.linear_gradient("L").resize(size).convert("RGB")
    out = io.BytesIO()
    image.save(out, "JPEG", quality=95)
    record, made_files = renditions.make(out.getvalue(), path=f"media/{SHA}.jpg")
    files = dict(made_files)
    for copy in record.copies:
        made_copy = PIL.Image.open(io.BytesIO(files[copy.path])).convert("L")
        expected = image.convert("L").resize(made_copy.size, PIL.Image.Resampling.LANCZOS)
        [mean] = PIL.ImageStat.Stat(PIL.ImageChops.difference(made_copy, expected)).mean
        assert mean < 20, (copy, mean)  # a whole decode: up to 12 here (the filters)


# Each upload's memory above what its process held, checked and its copies made, in
# MB: (the limit, what it took before the scaled decode and the copies left out).
UPLOAD_PEAKS = {
    "jpeg": (150, 430),
    "progressive jpeg": (250, 430),  # its scaled decode still keeps every coefficient
    "png": (320, 423),  # decoded whole: once to clean it, once for the copies
}


@pytest.mark.parametrize("kind", list(UPLOAD_PEAKS))
def test_a_50_megapixel_upload_is_checked_and_copied_without_holding_it_thrice(tmp_path, kind):
    """8,600 × 5,800 is 150 MB of RGB. A JPEG's copies come from a scaled decode; a PNG
    (no scaled decode) is cleaned from the image itself and made upright in place, not
    from copies of it (a review's finding: uploads at once could take a small host's
    memory). A process of its own, whose peak is read."""
    import subprocess
    import sys

    from tests.support.processes import ROOT

    path = tmp_path / ("big.png" if kind == "png" else "big.jpg")
    image = PIL.Image.new("RGB", (8600, 5800), "teal")
    if kind == "png":
        image.save(path)
    else:
        image.save(path, quality=80, progressive=kind == "progressive jpeg")
    # The peak from /proc (VmHWM, in kB): getrusage's ru_maxrss is inherited from the
    # parent across fork and exec, and this test's process holds the image already.
    code = (
        "import re, sys, django\n"
        "django.setup()\n"
        "from blogpublish.desk import images, renditions\n"
        "def peak():\n"
        "    status = open('/proc/self/status').read()\n"
        "    return int(re.search(r'VmHWM:\\s+(\\d+)', status).group(1))\n"
        "data = open(sys.argv[1], 'rb').read()\n"
        "before = peak()\n"
        "cleaned, ext, _, _ = images.check(data, name='big')\n"
        "record, files = renditions.make(cleaned, path='media/x.' + ext)\n"
        "print(record.width, record.height, len(files), (peak() - before) // 1024)\n"
    )
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DEBUG": "1",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
    }
    result = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    width, height, files, grown_mb = map(int, result.stdout.split() or [0, 0, 0, 0])
    assert (width, height) == (8600, 5800), result.stderr[-3000:]
    assert files == 8  # WebP and its own format at each of the four widths
    limit, before = UPLOAD_PEAKS[kind]
    assert grown_mb < limit, f"the upload took {grown_mb} MB (before the fix: about {before})"


def grey_profile() -> bytes:
    """A small ICC grey display profile (v2: a description, D50 white, gamma 2.2): Pillow
    makes none, and the system may have none."""

    def s15(value: float) -> bytes:
        return struct.pack(">i", round(value * 65536))

    d50 = s15(0.9642) + s15(1.0) + s15(0.8249)
    text = b"grey\0"
    desc = b"desc" + bytes(4) + struct.pack(">I", len(text)) + text + bytes(4 + 4 + 3 + 67)
    tags = [
        (b"desc", desc),
        (b"wtpt", b"XYZ " + bytes(4) + d50),
        (b"kTRC", b"curv" + bytes(4) + struct.pack(">IH", 1, round(2.2 * 256)) + bytes(2)),
    ]
    at, table, body = 128 + 4 + 12 * len(tags), b"", b""
    for signature, data in tags:
        data += bytes(-len(data) % 4)
        table += signature + struct.pack(">II", at + len(body), len(data))
        body += data
    head = (
        struct.pack(">I", at + len(body))
        + b"lcms"
        + bytes([2, 0x10, 0, 0])
        + b"mntrGRAYXYZ "
        + bytes(12)
        + b"acsp"
        + bytes(28)
        + d50
        + bytes(48)
    )
    return head + struct.pack(">I", len(tags)) + table + body


def test_a_grey_jpegs_webp_copies_are_rgb_in_srgb_not_tagged_grey():
    """A review's finding: a grey JPEG's grey colour profile was carried into its WebP
    copies, whose pixels are RGB. Its JPEG copies stay grey, with their profile."""
    grey = PIL.Image.linear_gradient("L").resize((900, 300))
    out = io.BytesIO()
    grey.save(out, "JPEG", icc_profile=grey_profile())
    cleaned, ext, *_ = check(out.getvalue(), name="grey.jpg")

    _record, files = renditions.make(cleaned, path=f"media/{SHA}.{ext}")

    kinds = {}
    for path, data in files:
        copy = PIL.Image.open(io.BytesIO(data))
        profile = copy.info.get("icc_profile")
        kinds[path.rsplit(".", 1)[1]] = (copy.mode, profile[16:20] if profile else None)
    assert kinds == {"webp": ("RGB", None), "jpg": ("L", b"GRAY")}
