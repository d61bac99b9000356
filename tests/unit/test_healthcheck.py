"""The web container's health check (config/healthcheck.py, docker-compose.yml): its
request passes the deployment's host and https checks, and only a 200 is healthy."""

from __future__ import annotations

import http.server
import threading

import pytest
from django.test import Client, override_settings

from config.healthcheck import check, healthz_request
from tests.support.processes import free_port

PRODUCTION = {
    "ALLOWED_HOSTS": ".blog.example.com,www.example.org",
    "SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto",
}


@pytest.mark.django_db
@override_settings(
    DEBUG=False,
    ALLOWED_HOSTS=[".blog.example.com", "www.example.org"],
    SECURE_SSL_REDIRECT=True,
    SECURE_PROXY_SSL_HEADER=("HTTP_X_FORWARDED_PROTO", "https"),
)
def test_the_request_passes_a_deployments_host_and_https_checks():
    """A Host of 127.0.0.1 answered 400 (DisallowedHost) behind a deployment's
    ALLOWED_HOSTS, and plain http a 301 under SECURE_SSL_REDIRECT."""
    request = healthz_request(PRODUCTION)
    headers = dict(request.header_items())

    assert headers["Host"] == "blog.example.com"
    assert Client().get("/healthz", headers=headers).status_code == 200
    assert Client().get("/healthz").status_code == 400  # what the naive check got


@pytest.mark.parametrize(
    ("environ", "host"),
    [
        ({}, "127.0.0.1"),  # settings' default
        ({"ALLOWED_HOSTS": " , *"}, "localhost"),  # "*" lets any through
        ({"ALLOWED_HOSTS": "*,blog.example.com"}, "blog.example.com"),
    ],
)
def test_the_host_is_one_allowed(environ, host):
    assert dict(healthz_request(environ).header_items())["Host"] == host


@pytest.fixture
def server():
    answers: list[int] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(answers.pop(0))
            self.send_header("Location", "https://blog.example.com/healthz")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield answers, f"http://127.0.0.1:{httpd.server_address[1]}/healthz"
    httpd.shutdown()
    httpd.server_close()


def test_only_a_200_is_healthy(server):
    answers, url = server
    answers.extend([200, 503, 301])
    assert check({}, url) is None
    assert check({}, url) == f"{url}: HTTP 503"
    assert check({}, url) == f"{url}: HTTP 301"  # not followed to https


def test_nothing_listening_is_unhealthy():
    url = f"http://127.0.0.1:{free_port()}/healthz"
    assert check({}, url, timeout=2).startswith(f"{url}: ")
