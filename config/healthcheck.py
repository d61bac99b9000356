"""The web container's health check (docker-compose.yml): `python config/healthcheck.py`.

GET /healthz on this container's gunicorn, as a request the deployment's own settings
let through: Django answers 400 to a Host outside ALLOWED_HOSTS, and with
SECURE_SSL_REDIRECT a 301 to a plain-http request, so the check names the first of
ALLOWED_HOSTS as its Host and, when SECURE_PROXY_SSL_HEADER is set, says "https" in
that header as the proxy would. 200 (the database answers) is healthy; anything else,
a redirect included, is not. It reads the environment alone and runs as a file (importing
the package `config` loads Celery): a check costs a bare interpreter's start.
"""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping

URL = "http://127.0.0.1:8000/healthz"


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):  # a redirect is an answer, not followed
        return None


def healthz_request(environ: Mapping[str, str], url: str = URL) -> urllib.request.Request:
    """The request for /healthz that this deployment's settings let through."""
    raw = environ.get("ALLOWED_HOSTS", "").strip() or "127.0.0.1,localhost"
    hosts = [h.strip() for h in raw.split(",") if h.strip() and h.strip() != "*"]
    # ".example.com" allows example.com and its subdomains.
    headers = {"Host": hosts[0].lstrip(".") if hosts else "localhost"}
    proxy_header = environ.get("SECURE_PROXY_SSL_HEADER", "").strip()
    if proxy_header:
        headers[proxy_header] = "https"
    return urllib.request.Request(url, headers=headers)


def check(environ: Mapping[str, str], url: str = URL, timeout: float = 5) -> str | None:
    """None if /healthz answers 200, else what it answered."""
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(healthz_request(environ, url), timeout=timeout) as response:
            status = response.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    except OSError as exc:
        return f"{url}: {exc}"
    return None if status == 200 else f"{url}: HTTP {status}"


def main() -> int:
    problem = check(os.environ)
    if problem:
        print(problem, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
