"""Images that carry a location in each place a file can hold one, written with
exiftool (Debian's libimage-exiftool-perl, installed by scripts/install-tools.sh), and
what exiftool reads back from a file: the real tool, not our own parser, judges.

Each case plants PLANTED (a place name and coordinates) in one kind of metadata; a file
is clean when exiftool finds no GPS or location field and no value naming the place.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.support.desk import image_bytes

PLANTED = "Wuhan-Jianghan 武汉 30.5928N 114.3055E"
LAT, LON = "30.5928", "114.3055"
GPS_TAGS = [
    f"-GPSLatitude={LAT}",
    "-GPSLatitudeRef=N",
    f"-GPSLongitude={LON}",
    "-GPSLongitudeRef=E",
]
XMP_GPS = [f"-XMP-exif:GPSLatitude={LAT}N", f"-XMP-exif:GPSLongitude={LON}E"]
# Field names that say where (exiftool's names, any group).
LOCATION_FIELD = re.compile(
    r"GPS|Location|City|Country|Province|State|Sub-?location|Latitude|Longitude", re.I
)


@dataclass(frozen=True)
class Case:
    name: str  # what the test id shows
    fmt: str  # Pillow's format of the base image
    args: tuple[str, ...]  # exiftool's arguments that plant the location
    size: tuple[int, int] = (64, 48)


# Extended XMP: exiftool moves the largest XMP properties out of the main packet (which
# must fit one 64 KiB APP1 segment) into Extended XMP segments.
BIG_LOCATION = " ".join([PLANTED] * 2500)

CASES = [
    Case("jpeg-exif-gps", "JPEG", tuple(GPS_TAGS)),
    Case("jpeg-xmp-gps", "JPEG", tuple(XMP_GPS)),
    Case("jpeg-extended-xmp", "JPEG", (f"-XMP-iptcCore:Location={BIG_LOCATION}",)),
    Case(
        "jpeg-iptc",
        "JPEG",
        (
            "-IPTC:CodedCharacterSet=UTF8",
            f"-IPTC:City={PLANTED}",
            f"-IPTC:Sub-location={PLANTED}",
            "-IPTC:Country-PrimaryLocationName=China",
        ),
    ),
    Case("jpeg-comment", "JPEG", (f"-File:Comment={PLANTED}",)),
    Case("png-exif-gps", "PNG", tuple(GPS_TAGS)),
    Case("png-xmp-gps", "PNG", tuple(XMP_GPS)),
    Case("png-text", "PNG", (f"-PNG:Comment={PLANTED}", f"-PNG:Description={PLANTED}")),
    Case(
        "png-ztxt",
        "PNG",
        ("-api", "Compress=1", f"-PNG:Comment={PLANTED}", f"-PNG:Source={PLANTED}"),
    ),
    Case("webp-exif-gps", "WEBP", tuple(GPS_TAGS)),
    Case("webp-xmp-gps", "WEBP", tuple(XMP_GPS)),
    Case("gif-xmp-gps", "GIF", tuple(XMP_GPS)),
    Case("gif-comment", "GIF", (f"-File:Comment={PLANTED}",)),
]
EXT = {"JPEG": "jpg", "PNG": "png", "WEBP": "webp", "GIF": "gif"}


def exiftool() -> str:
    found = shutil.which("exiftool")
    if found is None:
        raise RuntimeError("exiftool is missing: run scripts/install-tools.sh")
    return found


def planted(case: Case, folder: Path) -> bytes:
    """A fresh image of `case.fmt` with the case's location written into it by exiftool."""
    path = folder / f"{case.name}.{EXT[case.fmt]}"
    path.write_bytes(image_bytes(case.fmt, size=case.size))
    subprocess.run(
        [exiftool(), "-q", "-overwrite_original", *case.args, str(path)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return path.read_bytes()


def metadata(data: bytes, folder: Path, name: str = "read") -> dict:
    """Every field exiftool reads in `data` (`-j -a -G1`: all of them, duplicates too,
    each named by its group), less what describes the file rather than its content."""
    path = folder / name
    path.write_bytes(data)
    return metadata_of_files([path])[0]


def metadata_of_files(paths: list[Path]) -> list[dict]:
    """`metadata` of several files, read by one exiftool call."""
    answer = subprocess.run(
        [exiftool(), "-j", "-a", "-G1", *map(str, paths)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return [
        {k: v for k, v in fields.items() if not k.startswith(("System:", "ExifTool:"))}
        for fields in json.loads(answer.stdout)
    ]


def where_it_says(fields: dict) -> dict:
    """The fields that give a location away: by their name, or by naming the place."""
    marker = PLANTED.split()[0]
    return {
        k: v
        for k, v in fields.items()
        if LOCATION_FIELD.search(k) or marker in json.dumps(v, ensure_ascii=False)
    }
