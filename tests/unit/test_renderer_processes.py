"""The re-render's renderer processes (publishing.renderers, `render_processes`) die
with the process that forked them: `rerender_site` killed outright (SIGKILL) leaves no
renderer behind, blocked forever on a queue no one will write to; one interrupted does
not wait for a renderer still rendering. Real processes."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = """
import signal, django
django.setup()
from publishing.renderers import render_processes
with render_processes(2):
    print("ready", flush=True)
    signal.pause()  # until it is killed
"""


def children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(n) for n in path.read_text().split()] if path.exists() else []


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"  # a zombie has exited; its parent (init) reaps it


def test_renderer_processes_die_with_the_process_that_forked_them(tmp_path):
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DEBUG": "1",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
    }
    with subprocess.Popen(
        [sys.executable, "-c", PROGRAM], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True
    ) as command:
        renderers: list[int] = []
        try:
            assert command.stdout.readline().strip() == "ready"
            renderers = children(command.pid)
            assert len(renderers) == 2, renderers
            os.kill(command.pid, signal.SIGKILL)
            command.wait(timeout=30)
            wait_for(
                lambda: not any(alive(pid) for pid in renderers),
                what=f"the renderers {renderers} to die with their parent",
            )
            assert not any(alive(pid) for pid in renderers), renderers
        finally:
            command.kill()
            for pid in renderers:
                if alive(pid):
                    os.kill(pid, signal.SIGKILL)


@pytest.mark.timeout(60)  # without the kill, the exit waits for the renderer: forever
def test_an_interrupted_command_does_not_wait_for_a_renderer_still_rendering():
    """Ctrl-C (or an error) while a renderer is still rendering (stuck in C code,
    say): the renderers are killed, not waited for."""
    from publishing import renderers

    with pytest.raises(KeyboardInterrupt), renderers.render_processes(2):
        pool = renderers.pool()
        stuck = pool.submit(signal.pause)  # a renderer that never returns
        wait_for(stuck.running, interval=0.01, what="a renderer to take the stuck page")
        raise KeyboardInterrupt
    wait_for(lambda: not multiprocessing.active_children(), what="the renderers' exit")
    assert not multiprocessing.active_children()
