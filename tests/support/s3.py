"""A real S3-compatible HTTP server for the object-storage tests: moto's server mode
(`moto[server]`), started as a subprocess on a free port and stopped by its PID, never
an in-process mock. boto3 talks HTTP to it exactly as to AWS S3, MinIO or R2.

`S3Server.env(bucket, prefix)` is what a worker process needs to write the site there
(tests/settings.py reads BLOGPUBLISH_TEST_SITE_ROOT); `settings_for` the same for the
test process; `mirror` copies a bucket's site into a folder, so the readers of
tests/support/site.py check it as they check a folder.
"""

from __future__ import annotations

import contextlib
import http.server
import sys
import threading
import urllib.parse
import uuid
from dataclasses import dataclass
from pathlib import Path

import boto3
import requests
from botocore.config import Config

from tests.support import processes
from tests.support.waiting import wait_for

ACCESS_KEY = "test-access-key"
SECRET_KEY = "test-secret-key"
REGION = "us-east-1"


@dataclass
class S3Server:
    port: int
    host: str = "127.0.0.1"
    proc: processes.Proc | None = None

    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> S3Server:
        self.proc = processes.spawn(
            f"moto-s3-{self.port}",
            [sys.executable, "-m", "moto.server", "-H", self.host, "-p", str(self.port)],
        )
        wait_for(self.answers, timeout=60, what=f"the S3 server on port {self.port}")
        return self

    def answers(self) -> bool:
        if self.proc and not self.proc.alive():
            raise AssertionError(f"moto_server exited:\n{self.proc.tail()}")
        with contextlib.suppress(requests.RequestException):
            return requests.get(self.endpoint, timeout=1).status_code < 500
        return False

    def stop(self) -> None:
        if self.proc:
            self.proc.stop()

    def client(self):
        return boto3.session.Session(
            aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY
        ).client(
            "s3",
            endpoint_url=self.endpoint,
            region_name=REGION,
            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 2}),
        )

    def new_bucket(self) -> str:
        name = f"bp-test-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        return name

    def env(self, site_root: str) -> dict[str, str]:
        """The environment of a process that writes the site to `site_root` (s3://…)."""
        return {
            "BLOGPUBLISH_TEST_SITE_ROOT": site_root,
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_DEFAULT_REGION": REGION,
        }

    def settings_for(self, site_root: str) -> dict:
        """The same, as settings of this process (django.test.override_settings)."""
        return {
            "SITE_ROOT": site_root,
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_S3_ADDRESSING_STYLE": "path",
        }


def keys(client, bucket: str, prefix: str = "") -> set[str]:
    """Every key under `prefix` (paginated), relative to it."""
    found = set()
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        found |= {obj["Key"][len(prefix) :] for obj in page.get("Contents", ())}
    return found


def mirror(client, bucket: str, prefix: str, into: Path) -> Path:
    """The bucket's site as a folder, for the readers of tests/support/site.py."""
    for key in keys(client, bucket, prefix):
        path = into / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(client.get_object(Bucket=bucket, Key=prefix + key)["Body"].read())
    into.mkdir(parents=True, exist_ok=True)
    return into


class HeldPuts:
    """An HTTP proxy in front of the S3 server that holds every PUT whose path contains
    `marker` unanswered (a bucket slower than the read timeout; let go at `close`, never
    forwarded) and forwards every other request. `held`: the paths of the PUTs held."""

    def __init__(self, upstream: str, marker: str):
        self.upstream, self.marker = upstream, marker
        self.held: list[str] = []
        self.release = threading.Event()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def forward(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                path = urllib.parse.unquote(self.path)
                if self.command == "PUT" and proxy.marker in path:
                    proxy.held.append(path)
                    proxy.release.wait(60)
                    self.close_connection = True
                    return
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                answer = requests.request(
                    self.command, proxy.upstream + self.path, data=body, headers=headers
                )
                self.send_response(answer.status_code)
                for name, value in answer.headers.items():
                    if name.lower() not in ("content-length", "transfer-encoding", "connection"):
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(answer.content)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(answer.content)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = forward

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> HeldPuts:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
