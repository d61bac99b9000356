"""Issue 19, finding 8: a location survived an upload in Extended XMP, a PNG text chunk
and a JPEG comment (and IPTC was not tried). Now no metadata is kept but the orientation.

Each file of the corpus is made by exiftool with a location in one place; it is uploaded
through the article form's image upload, and exiftool reads what was stored.
"""

from __future__ import annotations

import dataclasses
import io
import shutil

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from PIL import Image as Pil

from blogpublish.models import Image
from tests.support.metadata import (
    CASES,
    EXT,
    GPS_TAGS,
    Case,
    metadata,
    metadata_of_files,
    planted,
    where_it_says,
)

IMAGE = "/admin/publishing/article/image/"


@pytest.fixture(autouse=True)
def _no_images_left(settings):
    """The uploads' files go with the test (the run's SITE_ROOT is shared by its tests)."""
    yield
    shutil.rmtree(settings.SITE_ROOT / "media", ignore_errors=True)


@pytest.mark.django_db
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_upload__keeps_no_location_in_any_metadata(admin_client, tmp_path, case):
    sent = planted(case, tmp_path)
    found = where_it_says(metadata(sent, tmp_path, "sent"))
    assert found, f"exiftool did not plant a location for {case.name}"  # the case is real

    file = SimpleUploadedFile(f"{case.name}.{EXT[case.fmt]}", sent, f"image/{case.fmt.lower()}")
    response = admin_client.post(IMAGE, {"image": file})

    assert response.status_code == 201, response.content
    stored = (settings.SITE_ROOT / response.json()["path"]).read_bytes()
    assert where_it_says(metadata(stored, tmp_path, "stored")) == {}
    image = Pil.open(io.BytesIO(stored))
    assert image.format == case.fmt and image.size == case.size
    original = Pil.open(io.BytesIO(sent))
    if case.fmt != "WEBP":  # a lossy WebP is re-encoded; every other is lossless
        assert image.convert("RGBA").tobytes() == original.convert("RGBA").tobytes()


@pytest.mark.django_db
def test_upload__jpeg_keeps_its_orientation_and_compressed_pixels(admin_client, tmp_path):
    case = Case("jpeg-turned", "JPEG", (*GPS_TAGS, "-IFD0:Orientation#=6"))
    sent = planted(case, tmp_path)

    file = SimpleUploadedFile("turned.jpg", sent, "image/jpeg")
    answer = admin_client.post(IMAGE, {"image": file}).json()

    stored = (settings.SITE_ROOT / answer["path"]).read_bytes()
    assert stored[stored.index(b"\xff\xda") :] == sent[sent.index(b"\xff\xda") :]
    fields = metadata(stored, tmp_path)
    assert fields["IFD0:Orientation"] == "Rotate 90 CW"
    assert where_it_says(fields) == {}


@pytest.mark.django_db
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_upload__no_copy_keeps_a_location(admin_client, tmp_path, case):
    """Issue 21, item 6: the smaller copies are encoded from the pixels alone. 500 × 300
    pixels: a copy 400 wide in WebP and (JPEG, PNG) in the original's format, and a WebP
    at 500 (but for a WebP original)."""
    sent = planted(dataclasses.replace(case, size=(500, 300)), tmp_path)

    file = SimpleUploadedFile(f"{case.name}.{EXT[case.fmt]}", sent, f"image/{case.fmt.lower()}")
    response = admin_client.post(IMAGE, {"image": file})

    assert response.status_code == 201, response.content
    copies = Image.objects.get(path=response.json()["path"]).renditions["copies"]
    expected = {"JPEG": 3, "PNG": 3, "GIF": 2, "WEBP": 1}[case.fmt]
    assert len(copies) == expected
    found = metadata_of_files([settings.SITE_ROOT / copy["path"] for copy in copies])
    assert [where_it_says(fields) for fields in found] == [{}] * expected
