"""Imports run one way: every module can be the first one a fresh interpreter imports.

A cycle held together by imports inside functions breaks as soon as someone moves one
of them to the top, and only for the entry points that meet the cycle half-way (a
worker importing the tasks first, a command importing a service first). So each module
is imported first, in an interpreter of its own, after no more than what Django must
load before any app module: the settings and the Celery app, the app configs and the
models. The apps' ready() (our signal receivers, the admin's autodiscover) would import
half the project, so they run after the module instead, and must then succeed too.

An interpreter starts in about a second, nearly all of it importing Django, Celery and
kombu. So one interpreter loads those libraries, none of the project, and forks a child
per module: each child imports the project from nothing, its module first.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.support.processes import ROOT

PACKAGES = ("config", "publishing", "blogpublish", "api")

IMPORT_FIRST = """
import importlib
import django
from django.conf import settings

# The admin without its autodiscover, and the publishing app without its ready(): both
# run below, after the module under test.
settings.INSTALLED_APPS = [
    "django.contrib.admin.apps.SimpleAdminConfig" if app == "django.contrib.admin" else app
    for app in settings.INSTALLED_APPS
]
from publishing.apps import PublishingConfig
ready, PublishingConfig.ready = PublishingConfig.ready, lambda self: None
django.setup()

importlib.import_module(MODULE)

from django.apps import apps
from django.contrib import admin
ready(apps.get_app_config("publishing"))
admin.autodiscover()
"""

# Runs in one interpreter: loads the libraries, then forks a child per module (a few at
# a time) that runs IMPORT_FIRST. Prints {module: traceback} of those that failed.
FORK_PER_MODULE = """
import json, os, sys, traceback
import celery, django.contrib.admin, django.db.models, django.http, django.urls
import cmarkgfm, kombu.transport.redis, nh3, redis, requests
packages, import_first, modules = sys.argv[1].split(","), sys.argv[2], sys.argv[3:]
preloaded = sorted(m for m in sys.modules if m.split(".")[0] in packages)
assert not preloaded, f"the project was loaded before the fork: {preloaded}"

failed, running = {}, {}
def reap():
    pid, status = os.wait()
    module, read_end = running.pop(pid)
    with os.fdopen(read_end) as pipe:
        error = pipe.read()
    if os.waitstatus_to_exitcode(status) != 0:
        failed[module] = error or f"exit status {status}"

for module in modules:
    if len(running) >= 4:
        reap()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        try:
            exec(import_first, {"MODULE": module})
        except BaseException:
            os.write(write_end, traceback.format_exc().encode())
            os._exit(1)
        os._exit(0)
    os.close(write_end)
    running[pid] = (module, read_end)
while running:
    reap()
print(json.dumps(failed))
"""


def project_modules() -> list[str]:
    modules = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).with_suffix("")
            if "migrations" in relative.parts:
                continue
            parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
            modules.append(".".join(parts))
    return modules


def test_the_walk_finds_the_modules_that_import_each_other():
    modules = project_modules()
    for module in ("publishing.dispatch", "publishing.tasks", "publishing.services.catch_up"):
        assert module in modules


def test_every_module_can_be_imported_first_in_a_fresh_interpreter():
    modules = project_modules()

    out = subprocess.run(
        [sys.executable, "-c", FORK_PER_MODULE, ",".join(PACKAGES), IMPORT_FIRST, *modules],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"},
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert out.returncode == 0, out.stderr
    failed = json.loads(out.stdout.strip().splitlines()[-1])
    assert not failed, "\n".join(f"{m}:\n{error}" for m, error in failed.items())


def test_the_dispatch_and_the_services_do_not_load_the_tasks():
    """The dispatch sends tasks by name: the web process never needs the task module."""
    code = (
        "import sys, django; django.setup()\n"
        "import publishing.dispatch, publishing.services\n"
        "print('publishing.tasks' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"},
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False"]
