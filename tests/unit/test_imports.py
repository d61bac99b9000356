"""Imports run one way, between packages and between modules.

Between packages: config → {api, blogpublish, digest} → publishing → work
(docs/design.md, "Packages"). Every import statement of the production packages
(migrations left out) is read with `ast`, also those inside functions, and an edge
against that order, or a cycle between packages, fails the test with the line that
makes it.

Between modules: every module can be the first one a fresh interpreter imports.

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

import ast
import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from tests.support.processes import ROOT

# The declared order, a layer at a time: a package may import the packages of later
# layers, and those of its own layer as long as no cycle forms; never an earlier layer.
LAYERS = (("config",), ("api", "blogpublish", "digest"), ("publishing",), ("work",))
PACKAGES = tuple(package for layer in LAYERS for package in layer)
# Top-level directories that are not production packages: they may import anything.
NOT_PACKAGES = {"tests", "bench", "scripts", "deploy", "docs"}

Edges = dict[tuple[str, str], list[str]]


def python_files(package: str) -> list[Path]:
    return [p for p in sorted((ROOT / package).rglob("*.py")) if "migrations" not in p.parts]


def package_edges(packages=PACKAGES) -> Edges:
    """{(importer, imported): ["path:line module", …]} between `packages`."""
    edges: Edges = defaultdict(list)
    for package in packages:
        for path in python_files(package):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top in packages and top != package:
                        where = f"{path.relative_to(ROOT)}:{node.lineno} imports {name}"
                        edges[(package, top)].append(where)
    return dict(edges)


def against_the_order(edges: Edges, layers=LAYERS) -> Edges:
    """The edges from a package to one of an earlier layer."""
    rank = {package: n for n, layer in enumerate(layers) for package in layer}
    return {edge: where for edge, where in edges.items() if rank[edge[1]] < rank[edge[0]]}


def cycles(edges: Edges) -> list[list[str]]:
    """Every cycle of packages, each once, as the packages along it."""
    graph: dict[str, set[str]] = defaultdict(set)
    for importer, imported in edges:
        graph[importer].add(imported)
    found: list[list[str]] = []

    def walk(path: list[str]) -> None:
        for nxt in sorted(graph[path[-1]]):
            if nxt == path[0]:
                found.append(list(path))
            elif nxt not in path and nxt > path[0]:  # each cycle from its least package
                walk([*path, nxt])

    for start in sorted(graph):
        walk([start])
    return found


def test_every_top_level_package_has_a_place_in_the_order():
    found = {
        path.parent.name
        for path in ROOT.glob("*/__init__.py")
        if path.parent.name not in NOT_PACKAGES
    }
    assert found == set(PACKAGES), "add new packages to LAYERS (and docs/design.md)"


def test_no_package_imports_one_before_it_in_the_order():
    wrong = against_the_order(package_edges())
    assert not wrong, "\n".join(
        f"{a} must not import {b} (config → {{api, blogpublish, digest}} → publishing → work):"
        + "".join(f"\n    {line}" for line in where)
        for (a, b), where in sorted(wrong.items())
    )


def test_no_two_packages_import_each_other():
    edges = package_edges()
    lines = []
    for cycle in cycles(edges):
        lines.append(" → ".join([*cycle, cycle[0]]))
        for a, b in zip(cycle, [*cycle[1:], cycle[0]], strict=True):
            lines += [f"    {line}" for line in edges[(a, b)]]
    assert not lines, "\n".join(lines)


def test_the_checks_see_a_reverse_edge_and_a_cycle():
    """The checks themselves, on a made-up graph: `work` importing `publishing`
    is against the order and closes a cycle; two siblings importing each other are a
    cycle, though neither edge is against the order."""
    edges: Edges = {
        ("publishing", "work"): ["publishing/x.py:1"],
        ("work", "publishing"): ["work/y.py:1"],
        ("api", "blogpublish"): ["api/a.py:1"],
        ("blogpublish", "api"): ["blogpublish/b.py:1"],
        ("digest", "publishing"): ["digest/c.py:1"],
    }

    assert against_the_order(edges) == {("work", "publishing"): ["work/y.py:1"]}
    assert cycles(edges) == [["api", "blogpublish"], ["publishing", "work"]]


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
        for path in python_files(package):
            relative = path.relative_to(ROOT).with_suffix("")
            parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
            modules.append(".".join(parts))
    return modules


def test_the_walk_finds_the_modules():
    modules = project_modules()
    for module in (
        "publishing.dispatch",
        "publishing.tasks",
        "publishing.services.catch_up",
        "digest.tasks",
        "work.lease",
    ):
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
