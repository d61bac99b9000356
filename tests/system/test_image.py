"""The image starts (issue 18, item 6): its files, as the Dockerfile's COPY lines bring
them, installed into a clean virtualenv as its RUN line installs them, then web (its
CMD), worker and Beat started from there with production settings against a database
and a Redis of the test's own. An article saved there is published by that worker and
served by that web process.

No Docker engine runs on the test machines, so the image is not built; everything the
image would hold comes from the Dockerfile's own lines (tests/support/dockerfile.py).
Slow (a pip install into a new virtualenv), so it runs once, on PostgreSQL."""

from __future__ import annotations

import secrets
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection

from tests.support.databases import fresh_database
from tests.support.dockerfile import read_image
from tests.support.processes import PrivateRedis, free_port, spawn
from tests.support.waiting import wait_for

pytestmark = [
    pytest.mark.system,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="slow: run once, on PostgreSQL"),
]


@pytest.fixture
def database() -> Iterator[str]:
    with fresh_database("bp_image") as url:
        yield url


@pytest.fixture
def redis():
    server = PrivateRedis(free_port()).start()
    yield server
    server.stop()


def run(cmd: list[str], *, cwd: Path, env: dict | None = None) -> str:
    done = subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=540, check=False
    )
    assert done.returncode == 0, f"{cmd} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, ""
    except OSError:
        return 0, ""


def test_the_images_files_start_web_worker_and_beat(tmp_path, database, redis):
    image = read_image()
    app = image.build_files(tmp_path / "image")
    venv = tmp_path / "venv"
    # A clean virtualenv without pip of its own (ensurepip costs ~15 s on a loaded
    # machine); this run's pip installs into it, as the image's pip would. No .pyc
    # compiled at install: what is imported is compiled when it is imported.
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=tmp_path)
    pip = [sys.executable, "-m", "pip", "--python", str(venv / "bin/python")]
    run([*pip, "install", "-q", "--no-compile", *image.pip_install], cwd=app)
    env = {
        "PATH": f"{venv / 'bin'}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "SECRET_KEY": secrets.token_urlsafe(48),
        "DATABASE_URL": database,
        "CELERY_BROKER_URL": redis.url,
        "SITE_ROOT": str(tmp_path / "site"),
        "STATIC_ROOT": str(tmp_path / "static"),
        "PUBLISH_CATCHUP_INTERVAL": "2",
        "PUBLISH_STALE_AFTER": "2",
    }
    python = str(venv / "bin/python")
    run([python, "manage.py", "migrate", "--no-input"], cwd=app, env=env)
    port = free_port()
    cmd = [str(venv / "bin" / image.cmd[0]), *image.cmd[1:]]
    cmd[cmd.index("--bind") + 1] = f"127.0.0.1:{port}"
    procs = [
        spawn("image-web", cmd, env=env, cwd=app, inherit_env=False),
        spawn(
            "image-worker",
            [python, "-m", "celery", "-A", "config", "worker", "-l", "info", "-c", "1"],
            env=env,
            cwd=app,
            inherit_env=False,
        ),
        spawn(
            "image-beat",
            [
                python,
                "-m",
                "celery",
                "-A",
                "config",
                "beat",
                "-l",
                "info",
                "-s",
                str(tmp_path / "schedule"),
            ],
            env=env,
            cwd=app,
            inherit_env=False,
        ),
    ]
    try:
        web, worker, beat = procs
        for proc, line in ((worker, " ready."), (beat, "Sending due task")):
            wait_for(
                lambda p=proc, text=line: p.alive() and text in p.log.read_text(errors="replace"),
                timeout=90,
                what=f"{proc.name}: {line!r}\n{proc.tail()}",
            )
        wait_for(
            lambda: get(f"http://127.0.0.1:{port}/healthz")[0] == 200,
            timeout=60,
            what=f"the image's web to answer /healthz\n{web.tail()}",
        )

        run(
            [
                python,
                "manage.py",
                "shell",
                "-c",
                "from publishing.models import Article; Article.objects.create("
                "title='从镜像发布', slug='from-the-image', body='It *starts*.')",
            ],
            cwd=app,
            env=env,
        )

        _, html = wait_for(
            lambda: (r := get(f"http://127.0.0.1:{port}/from-the-image/"))[0] == 200 and r,
            timeout=60,
            what=f"the article's page from the image\n{worker.tail()}",
        )
        assert "从镜像发布" in html and "<em>starts</em>" in html
    finally:
        for proc in procs:
            proc.stop(timeout=10)
