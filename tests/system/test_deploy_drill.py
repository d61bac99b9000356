"""A rolling deploy, drilled (issue 23, item 4; docs/operations.md, "Rolling deploy").

The previous release (deploy/previous-release.json's commit, from `git archive`) runs
web (gunicorn), worker and Beat on an installation of its own while a writer creates
articles through the HTTP API, as fast as one program does. Then, with the saves going
on, each is replaced by this release in the documented order: migrations, worker
(the new one ready before the old one's warm shutdown), web (the writer moves to the
new one before the old one stops, as a load balancer would), Beat. Every save must
succeed, every article be published exactly once, and `restore_check` of this release
must find the site exact: every live page present and current, the counts right, the
front page, feed and sitemap there.

PostgreSQL only; once, as a system test (about a minute: it is the point of the item).
"""

from __future__ import annotations

import json
import sys
import threading
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field

import psycopg
import pytest
from django.db import connection

from tests.support import processes, releases
from tests.support.migration_safety import previous_release
from tests.support.processes import ROOT, Proc
from tests.support.releases import sh
from tests.support.waiting import wait_for
from tests.system.conftest import SYSTEM_SETTINGS

pytestmark = [
    pytest.mark.system,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="several hosts' database"),
]

PYTHON = sys.executable
GUNICORN = ("--workers", "1", "--threads", "4", "--graceful-timeout", "10")


@dataclass
class ApiWriter:
    """Creates articles through POST /api/articles, one after another, at `url` (which
    the deploy moves from the old web to the new); a request that could not connect is
    sent again with the same Idempotency-Key."""

    url: str
    token: str
    created: list[int] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def post(self, i: int) -> None:
        body = json.dumps(
            {
                "title": f"部署 drill {i}",
                "slug": f"drill-{i}",
                "body": f"Saved during the deploy, {i}.",
            }
        ).encode()
        key = str(uuid.uuid4())
        while not self.stop.is_set():
            request = urllib.request.Request(
                f"{self.url}/api/articles",
                data=body,
                method="POST",
                headers={
                    "Authorization": f"Bearer {self.token}",
                    "Content-Type": "application/json",
                    "Idempotency-Key": key,
                },
            )
            try:
                with urllib.request.urlopen(request, timeout=10) as answer:
                    self.created.append(json.loads(answer.read())["id"])
                    return
            except urllib.error.HTTPError as exc:
                self.problems.append(f"save {i}: HTTP {exc.code} {exc.read()[:300]!r}")
                return
            except OSError as exc:  # not connected: the same request again
                self.problems.append(f"save {i}: {exc} (sent again)")
                self.stop.wait(0.1)

    def run(self) -> None:
        i = 0
        while not self.stop.is_set():
            i += 1
            self.post(i)
            self.stop.wait(0.05)  # the writer's pace, not a wait for anything


def start_web(site: releases.Installation, cwd, name: str) -> tuple[Proc, str]:
    port = processes.free_port()
    proc = processes.spawn(
        name,
        [PYTHON, "-m", "gunicorn", "config.wsgi", "--bind", f"127.0.0.1:{port}", *GUNICORN],
        env=site.env,
        cwd=cwd,
    )
    url = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        assert proc.alive(), proc.tail()
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=2) as answer:
                return answer.status == 200
        except OSError:
            return False

    wait_for(answers, timeout=60, what=f"{name} to answer")
    return proc, url


def test_deploy_drill__old_processes_replaced_one_by_one_while_saving(tmp_path):
    old = releases.checkout(previous_release()["commit"], tmp_path / "previous-release")
    settings_env = {k: str(v) for k, v in SYSTEM_SETTINGS.items()}
    started: list[Proc] = []
    writer: ApiWriter | None = None
    with releases.installation("d", ALLOWED_HOSTS="127.0.0.1", **settings_env) as site:
        env = site.env
        try:
            # The previous release, running: schema, a program's token, its processes.
            sh([PYTHON, "manage.py", "migrate", "-v", "0"], cwd=old, env=env)
            make_user = (
                "from django.contrib.auth import get_user_model; get_user_model().objects"
                ".create_superuser('drill', 'drill@example.com', 'drill-password-0123')"
            )
            sh([PYTHON, "manage.py", "shell", "-c", make_user], cwd=old, env=env)
            token = sh(
                [PYTHON, "manage.py", "api_token", "drill", "--scope", "write"], cwd=old, env=env
            ).split()[-1]
            old_worker = processes.start_worker(
                env=env, cwd=old, name="old-worker", ready=False, queues=site.queues(old)
            )
            started.append(old_worker)
            processes.wait_until_ready(old_worker)
            old_beat = processes.start_beat(env=env, cwd=old, name="old-beat")
            started.append(old_beat)
            old_web, old_url = start_web(site, old, "old-web")
            started.append(old_web)

            writer = ApiWriter(url=old_url, token=token)
            thread = threading.Thread(target=writer.run, daemon=True)
            thread.start()

            def saved(n: int) -> None:
                goal = len(writer.created) + n

                def done() -> bool:
                    refused = [p for p in writer.problems if "HTTP" in p]
                    assert not refused, refused[:5]
                    return len(writer.created) >= goal

                wait_for(done, timeout=60, what=f"{n} saves")

            saved(10)
            # 1. Migrations, while the old code runs.
            sh([PYTHON, "manage.py", "migrate"], cwd=ROOT, env=env)
            saved(5)
            # 2. Workers: the new one ready, then the old one's warm shutdown.
            new_worker = processes.start_worker(
                env=env, name="new-worker", ready=False, queues=site.queues()
            )
            started.append(new_worker)
            processes.wait_until_ready(new_worker)
            old_worker.stop(timeout=30)
            saved(5)
            # 3. Web: the writer moves to the new one, then the old one stops.
            new_web, new_url = start_web(site, ROOT, "new-web")
            started.append(new_web)
            writer.url = new_url
            old_web.stop(timeout=30)
            saved(5)
            # 4. Beat, one at a time.
            old_beat.stop(timeout=30)
            started.append(processes.start_beat(env=env, name="new-beat"))
            saved(10)
            writer.stop.set()
            thread.join(30)

            assert not writer.problems, writer.problems[:10]
            with psycopg.connect(site.url, autocommit=True) as conn:
                releases.wait_published_once(conn, writer.created)
            # The site exact once the last pass of the shared views is over.
            last: list = []

            def site_exact() -> bool:
                last[:] = [releases.run([PYTHON, "manage.py", "restore_check"], cwd=ROOT, env=env)]
                return last[0].returncode == 0

            try:
                wait_for(site_exact, timeout=60, interval=1, what="restore_check to pass")
            except AssertionError:
                pytest.fail(f"restore_check:\n{last[0].stdout[-2000:]}\n{last[0].stderr[-2000:]}")
        finally:
            if writer is not None:
                writer.stop.set()
            for proc in reversed(started):
                proc.stop(timeout=10)
