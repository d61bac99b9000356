"""The site in S3-compatible object storage: SITE_ROOT=s3://BUCKET/PREFIX.

django-storages' S3 backend holds the configuration (the standard AWS variables, read in
config/settings.py) and the boto3 connection; the site's operations go through its
client. One PUT makes a whole object visible at once, so a reader never sees half a
document and staging needs no temporary object; the PUT that makes a page live is still
made under the page guard, after the currency check (blogpublish.site.publisher).

Every object carries its Content-Type and Cache-Control, and the SHA-256 of its bytes as
metadata, by which a rebuild leaves an unchanged document alone with one HEAD.
"""

from __future__ import annotations

import contextlib
import hashlib
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Literal, cast

from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as EndpointUnreachable
from django.conf import settings
from storages.backends.s3 import S3Storage

from blogpublish.exceptions import PageChanged, StorageError, StorageUnreachable
from blogpublish.files import holdable, parts_of
from blogpublish.site import paths
from blogpublish.storage.base import (
    SiteStorage,
    Staged,
    cache_control_of,
    content_type_of,
    payload,
)

_MISSING = {"404", "NoSuchKey", "NotFound"}
_CHANGED = {"PreconditionFailed", "412", "ConditionalRequestConflict", "409", *_MISSING}
# Requests in flight at once when the full check reads the pages' first bytes.
READ_THREADS = 16


def client_config() -> Config:
    """Bounded waits and one retry (config/settings.py, SITE_STORAGE_*)."""
    # One of these three: config/settings.py refuses any other.
    addressing_style = cast(
        Literal["auto", "virtual", "path"], settings.AWS_S3_ADDRESSING_STYLE or "auto"
    )
    return Config(
        connect_timeout=settings.SITE_STORAGE_CONNECT_TIMEOUT,
        read_timeout=settings.SITE_STORAGE_READ_TIMEOUT,
        # total_max_attempts counts the first request; botocore's max_attempts does not
        # (it made three requests of a PUT that SITE_STORAGE_MAX_ATTEMPTS allowed two).
        retries={"total_max_attempts": settings.SITE_STORAGE_MAX_ATTEMPTS, "mode": "standard"},
        # A connection for each of read_heads' threads, which share one client.
        max_pool_connections=READ_THREADS,
        s3={"addressing_style": addressing_style},
        signature_version="s3v4",
    )


def backend(bucket: str) -> S3Storage:
    return S3Storage(
        bucket_name=bucket,
        endpoint_url=settings.AWS_ENDPOINT_URL,
        access_key=settings.AWS_ACCESS_KEY_ID,
        secret_key=settings.AWS_SECRET_ACCESS_KEY,
        region_name=settings.AWS_DEFAULT_REGION,
        client_config=client_config(),
        file_overwrite=True,
        querystring_auth=False,
    )


class S3SiteStorage(SiteStorage):
    shared_by_hosts = True
    # Every PUT over a page is conditional on the ETag its read answered with.
    reads_fence_writes = True

    def __init__(self, *, bucket: str, prefix: str = ""):
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.backend = backend(bucket)

    def late_write_seconds(self) -> float:
        return float(settings.SITE_STORAGE_LATE_WRITE_SECONDS)

    def __str__(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}" if self.prefix else f"s3://{self.bucket}"

    @property
    def client(self):
        return self.backend.connection.meta.client  # one per thread (django-storages)

    def key(self, rel: str) -> str:
        rel = "/".join(parts_of(rel))
        return f"{self.prefix}/{rel}" if self.prefix else rel

    def folder_key(self, folder: str) -> str:
        """The key prefix of everything in `folder`, ending in '/' ('' for the root)."""
        key = self.key(folder) if parts_of(folder) else self.prefix
        return f"{key}/" if key else ""

    @contextlib.contextmanager
    def _errors(self, what: str, rel: str) -> Iterator[None]:
        try:
            yield
        except (BotoCoreError, ClientError) as exc:
            # A timeout, a connection refused or cut: no answer, rather than a refusal.
            message = f"{what} {rel!r} in {self} failed: {exc}"
            if isinstance(exc, (EndpointUnreachable, HTTPClientError)):
                raise StorageUnreachable(message, rel) from exc
            raise StorageError(message) from exc

    # --- documents -----------------------------------------------------------------

    def write(self, rel, data, *, content_type=None, cache_control=None) -> None:
        self._put(rel, payload(data), content_type=content_type, cache_control=cache_control)

    def _put(
        self,
        rel: str,
        body: bytes,
        *,
        expect: str | None = None,
        client=None,
        write_id: str = "",
        **types,
    ) -> None:
        """One PUT (through `client`, else this thread's); with `expect` (observe), only
        over that ETag ("": only if missing). `write_id`: kept in the object's metadata,
        so that `take_back` knows this very write from another of the same bytes."""
        condition = {}
        if expect is not None:
            condition = {"IfMatch": expect} if expect else {"IfNoneMatch": "*"}
        with self._errors("writing", rel):
            try:
                (client or self.client).put_object(
                    Bucket=self.bucket,
                    Key=self.key(rel),
                    Body=body,
                    ContentType=types.get("content_type") or content_type_of(rel),
                    CacheControl=types.get("cache_control") or cache_control_of(rel),
                    Metadata={
                        "sha256": hashlib.sha256(body).hexdigest(),
                        **({"write": write_id} if write_id else {}),
                    },
                    **condition,
                )
            except ClientError as exc:
                # 412: not the object seen at the check; If-Match on a key deleted since
                # answers 404; 409 (AWS): another conditional write of the key was in
                # flight. Either way another writer came first, or is coming: judged
                # again, as the caller judges a page that changed.
                if condition and _code(exc) in _CHANGED:
                    raise PageChanged(f"{rel!r} in {self} changed since the check") from exc
                raise

    # A page goes live with a conditional PUT (issue 17): the ETag seen under the page
    # guard at the token check is the condition, so a writer that was paused between
    # its check and its PUT (its guard's locks gone with its database session), or a
    # PUT that lands after its client gave up, never replaces a newer page.
    # One where there was none (`IfNoneMatch`) is another matter: retried by botocore
    # after its attempt gave up and a delete removed the folder, it finds the key missing
    # and makes the page again. So a removal is made again once every request has ended
    # (`late_write_seconds`, SITE_STORAGE_LATE_WRITE_SECONDS).
    def observe(self, staged: Staged) -> None:
        head = self.head(staged.rel)
        staged.expect = head["ETag"] if head else ""

    def commit(self, staged: Staged) -> None:
        self._commit(staged)

    def _commit(self, staged: Staged, client=None) -> None:
        # A PUT over a page is conditional on the very page seen, so it has nothing to
        # take back; one where there was none makes the page, with an id of its own
        # (not its ETag: another attempt's page of the same bytes has the same one),
        # which `take_back` looks for before it removes the page.
        write_id = uuid.uuid4().hex if staged.expect == "" else ""
        self._put(staged.rel, staged.data, expect=staged.expect, client=client, write_id=write_id)
        staged.placed = write_id or None

    def take_back(self, staged: Staged) -> bool:
        """The page a conditional PUT made where there was none removed, if it is still
        that very write (its id): under the new guard no other writer is at it."""
        if not isinstance(staged.placed, str):
            return False
        head = self.head(staged.rel)
        if head is None or head.get("Metadata", {}).get("write") != staged.placed:
            return False
        self.delete(staged.rel)
        return True

    def read_observed(
        self, rels: list[str], size: int
    ) -> dict[str, tuple[bytes | None, str | None]]:
        """One ranged GET a page, READ_THREADS at a time: its first bytes, and its ETag
        (a ranged GET answers with the whole object's), the condition of a PUT over it.
        So the condition is the very object whose bytes were checked, with no HEAD: an
        empty object, which a range cannot read, is read again whole, bytes and ETag in
        one answer (a HEAD's ETag could be of a page written after the empty read)."""

        def one(rel: str, client) -> tuple[bytes | None, str | None]:
            head, etag = self._ranged_get(rel, size, client=client)
            if etag is None:
                head, etag = self._ranged_get(rel, size, client=client, whole=True)
            return head, etag

        return dict(zip(rels, self._each(one, rels), strict=True))

    def observe_heads(self, staged: list[Staged], size: int) -> dict[str, bytes | None]:
        """Under the page guard: `read_observed`, each page's ETag its PUT's condition."""
        observed = self.read_observed([item.rel for item in staged], size)
        for item in staged:
            item.expect = observed[item.rel][1]
        return {rel: head for rel, (head, _) in observed.items()}

    def commit_many(self, staged: list[Staged]) -> None:
        """The conditional PUTs READ_THREADS at a time (each is latency, not work), all
        of them tried; then the first failure, in their order, raises."""
        failures = [exc for exc in self._each(self._try_commit, staged) if exc is not None]
        if failures:
            first = failures[0]
            if isinstance(first, StorageUnreachable):  # every page it did not answer for
                first.rels = [
                    rel
                    for exc in failures
                    if isinstance(exc, StorageUnreachable)
                    for rel in exc.rels
                ]
            raise first

    def commit_each(self, staged: list[Staged]) -> list[Staged]:
        """The conditional PUTs as `commit_many` makes them; the pages changed since
        their read (a 412, 404 or 409: `_CHANGED`) returned, any other failure raised
        once all were tried."""
        outcomes = self._each(self._try_commit, staged)
        errors = [exc for exc in outcomes if exc is not None and not isinstance(exc, PageChanged)]
        if errors:
            raise errors[0]
        return [item for item, exc in zip(staged, outcomes, strict=True) if exc is not None]

    def _try_commit(self, staged: Staged, client) -> Exception | None:
        try:
            self._commit(staged, client)
        except (PageChanged, StorageError) as exc:
            return exc
        return None

    def _each(self, call, items: list) -> list:
        """`call(item, client)` for each item, READ_THREADS at a time when there are
        several, every thread with this thread's client (a boto3 client is
        thread-safe): django-storages makes one per thread, and making one costs more
        CPU than a hundred requests."""
        client = self.client
        if len(items) < 2:
            return [call(item, client) for item in items]
        with ThreadPoolExecutor(max_workers=READ_THREADS) as pool:
            return list(pool.map(lambda item: call(item, client), items))

    def read(self, rel: str) -> bytes | None:
        with self._errors("reading", rel):
            try:
                response = self.client.get_object(Bucket=self.bucket, Key=self.key(rel))
            except ClientError as exc:
                if _code(exc) in _MISSING:
                    return None
                raise
            return response["Body"].read()

    def read_head(self, rel: str, size: int, *, client=None) -> bytes | None:
        """One ranged GET (through `client`, else this thread's)."""
        return self._ranged_get(rel, size, client=client)[0]

    def _ranged_get(
        self, rel: str, size: int, *, client=None, whole: bool = False
    ) -> tuple[bytes | None, str | None]:
        """The object's first `size` bytes and its ETag: (None, "") when it is missing,
        (b"", None) when it is empty (a range of nothing: no ETag answered). `whole`:
        a GET without a range, its first `size` bytes read (never (b"", None))."""
        asked = {} if whole else {"Range": f"bytes=0-{size - 1}"}
        with self._errors("reading", rel):
            try:
                response = (client or self.client).get_object(
                    Bucket=self.bucket, Key=self.key(rel), **asked
                )
            except ClientError as exc:
                if _code(exc) in _MISSING:
                    return None, ""
                if _code(exc) == "InvalidRange":  # an empty object
                    return b"", None
                raise
            with contextlib.closing(response["Body"]) as body:
                return body.read(size), response["ETag"]

    def read_heads(self, rels: list[str], size: int) -> dict[str, bytes | None]:
        """Ranged GETs READ_THREADS at a time: one request per page is latency, not
        work (docs/performance.md, "Guarded page writes and the full check")."""
        heads = self._each(lambda rel, client: self.read_head(rel, size, client=client), rels)
        return dict(zip(rels, heads, strict=True))

    def head(self, rel: str) -> dict | None:
        with self._errors("reading", rel):
            try:
                return self.client.head_object(Bucket=self.bucket, Key=self.key(rel))
            except ClientError as exc:
                if _code(exc) in _MISSING:
                    return None
                raise

    def holds(self, rel: str, data: str | bytes) -> bool:
        """One HEAD: the same bytes (by their SHA-256), type and cache control; anything
        else (missing, other bytes, a wrong type) is not."""
        head = self.head(rel)
        return (
            head is not None
            and head.get("Metadata", {}).get("sha256") == hashlib.sha256(payload(data)).hexdigest()
            and head.get("ContentType") == content_type_of(rel)
            and head.get("CacheControl") == cache_control_of(rel)
        )

    def write_if_changed(self, rel: str, data: str | bytes) -> bool:
        """`write` unless the object `holds` the data already (one HEAD)."""
        body = payload(data)
        if self.holds(rel, body):
            return False
        self.write(rel, body)
        return True

    def exists(self, rel: str) -> bool:
        return self.head(rel) is not None

    def delete(self, rel: str) -> None:
        with self._errors("deleting", rel):
            self.client.delete_object(Bucket=self.bucket, Key=self.key(rel))

    def delete_tree(self, rel: str) -> None:
        # The keys as listed: under the folder's prefix by construction, also one whose
        # name the site could not hold (a deleted article's page stayed online behind
        # one: a review's finding).
        keys = [obj["Key"] for _rel, obj in self._objects(rel, every=True)]
        with self._errors("deleting", f"{rel}/"):
            for start in range(0, len(keys), 1000):  # DeleteObjects takes 1000 at most
                batch = [{"Key": key} for key in keys[start : start + 1000]]
                answer = self.client.delete_objects(
                    Bucket=self.bucket, Delete={"Objects": batch, "Quiet": True}
                )
                if answer.get("Errors"):
                    raise StorageError(f"deleting {rel}/ in {self}: {answer['Errors'][:3]}")

    # --- listings (paginated: 1000 keys a request) ----------------------------------

    def _pages(self, what: str, **query) -> Iterator[dict]:
        with self._errors("listing", what):
            paginator = self.client.get_paginator("list_objects_v2")
            yield from paginator.paginate(Bucket=self.bucket, **query)

    def names(self, folder: str = "") -> list[str]:
        start = self.folder_key(folder)
        found = []
        for page in self._pages(folder, Prefix=start, Delimiter="/"):
            found += [p["Prefix"][len(start) :].rstrip("/") for p in page.get("CommonPrefixes", ())]
            found += [o["Key"][len(start) :] for o in page.get("Contents", ())]
        return [name for name in found if holdable(name)]

    def list(self, prefix: str = "") -> Iterator[str]:
        for rel, _obj in self._objects(prefix):
            yield rel

    def _objects(self, prefix: str = "", *, every: bool = False) -> Iterator[tuple[str, dict]]:
        """The objects under `prefix`, by path: those whose path the site could hold
        (another tool's `a\\b`, `x//y` or `..` left out), or `every` one."""
        root = self.folder_key("")
        for page in self._pages(prefix, Prefix=self.folder_key(prefix)):
            for obj in page.get("Contents", ()):
                rel = obj["Key"][len(root) :]
                if every or holdable(rel):
                    yield rel, obj

    def page_dirs(self) -> dict[str, float | None]:
        found: dict[str, float | None] = {}
        for rel, obj in self._objects():
            folder, slash, rest = rel.partition("/")
            if slash and not folder.startswith("."):
                if rest == paths.FRONT_PAGE:
                    found[folder] = obj["LastModified"].timestamp()
                else:
                    found.setdefault(folder, None)
        return found


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))
