"""A bucket's conditional PUT (blogpublish/storage/s3.py): which refusals mean "another
writer came first" (PageChanged: the caller judges the page again) and which are
errors. AWS answers 409 ConditionalRequestConflict when another conditional write of
the key is in flight, which moto's server never does, so the answers here are
botocore's stubbed responses to a real client (no bucket is reached)."""

from __future__ import annotations

import boto3
import pytest
from botocore.stub import Stubber

from blogpublish.exceptions import PageChanged, StorageError
from blogpublish.storage.s3 import S3SiteStorage


@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("PreconditionFailed", 412),
        ("ConditionalRequestConflict", 409),
        ("NoSuchKey", 404),
    ],
)
def test_a_refused_condition_is_a_page_changed(code, status):
    storage = S3SiteStorage(bucket="bucket", prefix="site")
    client = boto3.client(
        "s3", region_name="us-east-1", aws_access_key_id="a", aws_secret_access_key="b"
    )
    with Stubber(client) as stub:
        stub.add_client_error("put_object", service_error_code=code, http_status_code=status)
        with pytest.raises(PageChanged):
            storage._put("p/index.html", b"<p>new</p>", expect='"etag"', client=client)


def test_any_other_refusal_is_an_error_not_a_page_changed():
    storage = S3SiteStorage(bucket="bucket", prefix="site")
    client = boto3.client(
        "s3", region_name="us-east-1", aws_access_key_id="a", aws_secret_access_key="b"
    )
    with Stubber(client) as stub:
        stub.add_client_error("put_object", service_error_code="AccessDenied", http_status_code=403)
        with pytest.raises(StorageError) as raised:
            storage._put("p/index.html", b"<p>new</p>", expect='"etag"', client=client)
    assert not isinstance(raised.value, PageChanged)
