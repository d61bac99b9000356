"""/metrics, /status.json, the dashboard and the API answer 503 in their own format when
the database cannot be reached, not an HTML 500 (a review's finding). Port 1 of loopback is closed:
a real unreachable server, nothing mocked; the web runs in a process of its own, with
Django's test client, so that its settings name that server."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.support.processes import ROOT

PROBE = """
import json
from django.test import Client

client = Client(raise_request_exception=False)
client.cookies["sessionid"] = "s" * 32  # a session to look up: /status.json reads it
for path, headers in [
    ("/metrics", {"HTTP_AUTHORIZATION": "Bearer scrape-token-0123456789-abcdefghijklmnop"}),
    ("/metrics?anonymous", {}),
    ("/status.json", {}),
    ("/api/articles", {"HTTP_AUTHORIZATION": "Bearer some-token"}),
    ("/admin/publishing/dashboard/", {}),
]:
    answer = client.get(path, **headers)
    print(json.dumps([path, answer.status_code, answer["Content-Type"], answer.content.decode()]))
answer = client.post("/admin/publishing/dashboard/requeue/", {"all": "1"})
print(json.dumps(["requeue", answer.status_code, answer["Content-Type"], answer.content.decode()]))
"""


def test_the_watching_endpoints_and_the_api_answer_503_without_the_database(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PUBLISH_", "DB_"))}
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-v", "0", "-c", PROBE],
        cwd=ROOT,
        env={
            **env,
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DEBUG": "1",
            "METRICS_TOKEN": "scrape-token-0123456789-abcdefghijklmnop",
            "ALLOWED_HOSTS": "testserver",
            "SITE_ROOT": str(tmp_path / "site"),
            "DATABASE_URL": "postgres://nobody@127.0.0.1:1/blog",
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    answers = {
        path: (status, content_type, body)
        for path, status, content_type, body in map(json.loads, result.stdout.splitlines())
    }

    assert answers["/metrics"] == (
        503,
        "text/plain",
        "the database is unavailable: OperationalError\n",
    ), result.stderr[-3000:]
    # Refused before the database is touched: a caller without the token learns
    # nothing of it (a review's finding).
    assert answers["/metrics?anonymous"][0] == 401
    status, content_type, body = answers["/status.json"]
    assert (status, content_type) == (503, "application/json")
    assert json.loads(body) == {"error": "the database is unavailable: OperationalError"}
    status, content_type, body = answers["/api/articles"]
    assert (status, content_type.split(";")[0]) == (503, "application/json")
    assert json.loads(body)["detail"] == "The database is unavailable; try again later."
    status, content_type, body = answers["/admin/publishing/dashboard/"]
    assert (status, content_type) == (503, "text/html; charset=utf-8")
    assert "cannot be shown: the database is unavailable: OperationalError" in body
    assert answers["requeue"][:2] == (503, "text/html; charset=utf-8")  # its buttons too
