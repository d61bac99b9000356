"""The webhook's pure parts: signature, idempotency key, body, and what an answer means."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest

from blogpublish.webhooks import check_answer, encode, idempotency_key
from publishing.exceptions import PermanentPublishError, TransientPublishError
from publishing.signing import sign, signed_headers


def test_sign__t_and_v1_hmac_sha256_of_timestamp_key_and_raw_body():
    body = encode({"title": "你好"})
    signed = b"1767225600.key-1." + body
    expected = hmac.new(b"s3cret", signed, hashlib.sha256).hexdigest()

    header = sign(secret="s3cret", key="key-1", body=body, timestamp=1767225600)

    assert header == f"t=1767225600,v1={expected}"


@pytest.mark.parametrize(
    "change",
    [
        # each part of the request is covered: a replay that edits one no longer matches
        {"body": b"{}"},
        {"key": "key-2"},
        {"timestamp": 1767225601},
        {"secret": "another"},
    ],
)
def test_sign__every_part_is_covered(change):
    request = {"secret": "s3cret", "key": "key-1", "body": b'{"a":1}', "timestamp": 1767225600}
    assert sign(**(request | change)).split(",")[1] != sign(**request).split(",")[1]


def test_signed_headers__now_with_the_key():
    headers = signed_headers(secret="s3cret", key="key-1", body=b"{}")
    t = int(headers["X-Blogpublish-Signature"].split(",")[0].removeprefix("t="))

    assert headers["Idempotency-Key"] == "key-1"
    assert headers["Content-Type"] == "application/json"
    assert headers["X-Blogpublish-Signature"] == sign(
        secret="s3cret", key="key-1", body=b"{}", timestamp=t
    )


def test_encode__utf8_json_as_sent():
    body = encode({"title": "你好", "n": 1})
    assert body == '{"title":"你好","n":1}'.encode()
    assert json.loads(body) == {"title": "你好", "n": 1}


def test_idempotency_key__same_for_same_content_new_after_an_edit():
    uid = "2f1c7c1e-6a4e-4b59-9d39-7d0e2a1c0b11"
    # sha256 of "<uid>:<content hash>", as docs/site.md tells receivers
    assert (
        idempotency_key(uid, "hash-a")
        == "268f44bdae7b64102bdd62ca63981349453b70e9e95e5abc1aced4fabeb0bf78"
    )
    assert idempotency_key(uid, "hash-a") != idempotency_key(uid, "hash-b")
    assert idempotency_key(uid, "hash-a") != idempotency_key("another-uid", "hash-a")
    assert len(idempotency_key(uid, "hash-a")) == 64
    # A later publish of the same content (A, B, then A): after the previous event's id.
    assert (
        idempotency_key(uid, "hash-a", after=7)
        == "59f90a377f0e2eb9727a10f827ea9bcdbd0c66047918e11fa60ed60a13071013"
    )
    assert idempotency_key(uid, "hash-a", after=7) != idempotency_key(uid, "hash-a", after=8)


@pytest.mark.parametrize("status", [200, 201, 202, 204])
def test_check_answer__2xx_is_delivered(status):
    check_answer(status, "")


@pytest.mark.parametrize(
    ("status", "error"),
    [
        # The receiver is busy or broken: retried.
        (408, TransientPublishError),
        (429, TransientPublishError),
        (500, TransientPublishError),
        (502, TransientPublishError),
        (503, TransientPublishError),
        # The receiver refuses this event, or the URL is wrong: dead at once.
        (400, PermanentPublishError),
        (401, PermanentPublishError),
        (404, PermanentPublishError),
        (410, PermanentPublishError),
        (422, PermanentPublishError),
        (301, PermanentPublishError),
    ],
)
def test_check_answer__failures_carry_the_status(status, error):
    with pytest.raises(error, match=f"^webhook answered HTTP {status}: bad news$"):
        check_answer(status, "bad\n  news")
