"""What the side-by-side benchmark's processes share: the worker flags, child processes
stopped by PID, a private redis-server, fresh PostgreSQL databases, RSS from /proc.

Nothing here imports Django: the orchestrator (bench/pipeline.py) uses it too.
"""

from __future__ import annotations

import math
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PG_URL = os.environ.get("TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres")
# The benchmarks run with DEBUG off, as production does; settings then refuse a
# SECRET_KEY under 50 characters. This one signs nothing anyone sees.
SETTINGS_ENV = {
    "DEBUG": "0",
    "SECRET_KEY": "bench-only-" + "0123456789abcdefghijklmnopqrstuvwxyz" * 2,
}

# The one set of worker flags, for blogpublish's worker and bare Celery's alike. The rest
# of the configuration (acks_late, prefetch multiplier 1, serializer, task events, broker
# transport options) is Celery configuration: bare Celery reads it from config.settings.
WORKER_FLAGS = [
    "worker",
    "-l",
    "info",
    "-P",
    "prefork",
    "-c",
    "2",
    "--without-gossip",
    "--without-mingle",
]


def worker_command(app: str, *, flags: Sequence[str] = (), prefix: Sequence[str] = ()) -> list[str]:
    """`celery -A <app> worker …` with WORKER_FLAGS, run by this interpreter; `flags`
    after them (a later `-c` wins), the whole run by `prefix` when given (`chrt …`)."""
    return [*prefix, sys.executable, "-m", "celery", "-A", app, *WORKER_FLAGS, *flags]


def progress(message: str) -> None:
    """A line for the person watching; stdout is kept for the result."""
    print(f"  {time.strftime('%H:%M:%S')} {message}", file=sys.stderr, flush=True)


def wait_until(
    condition: Callable[[], object], timeout: float, what: str, *, every: float = 0.02
) -> None:
    """Poll `condition` every `every` seconds until it is true; fail after `timeout`."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(every)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def running(
    cmd: Sequence[str], log: Path, env: dict[str, str], *, patience: float = 15
) -> Iterator[subprocess.Popen]:
    """A child process in a session of its own; stopped by its PID (SIGTERM: a worker's
    warm shutdown), and its group killed if it lingers `patience` seconds (`stop`)."""
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            list(cmd),
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield proc
    finally:
        stop(proc, patience)


def stop(proc: subprocess.Popen, patience: float = 15) -> None:
    """SIGTERM to the process; SIGKILL to its group if it has not exited in `patience` s
    (called once its work is done, so a stuck warm shutdown costs time, not results)."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(patience)
        except subprocess.TimeoutExpired:
            progress(f"pid {proc.pid} still running {patience:.0f} s after SIGTERM; killing it")
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)  # pool children left behind, if any
    with suppress(subprocess.TimeoutExpired):
        proc.wait(10)


@contextmanager
def worker(
    app: str,
    log: Path,
    env: dict[str, str],
    *,
    flags: Sequence[str] = (),
    prefix: Sequence[str] = (),
    patience: float = 15,
) -> Iterator[subprocess.Popen]:
    """A Celery worker with WORKER_FLAGS, yielded once it says it is ready. With
    BENCH_PYSPY_DIR set, `py-spy record` (BENCH_PYSPY: its path) follows the worker and
    its pool children from then until it stops, writing raw stacks (idle ones too:
    the waits on the database are the point) to a file of that folder per worker: a
    profile of the run, whose figures it then slows. `flags`, `prefix`: worker_command's;
    `patience`: running's."""
    profiles = os.environ.get("BENCH_PYSPY_DIR")
    spy: subprocess.Popen | None = None
    command = worker_command(app, flags=flags, prefix=prefix)
    with running(command, log, env, patience=patience) as proc:
        wait_until(
            lambda: proc.poll() is not None or " ready." in log.read_text(errors="replace"),
            120,
            f"the {app} worker to start",
        )
        if proc.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:]
            raise SystemExit(f"the {app} worker exited at start:\n{tail}")
        progress(f"worker -A {app} ready (pid {proc.pid})")
        if profiles:
            out = Path(profiles) / f"{app}-{time.strftime('%H%M%S')}-{proc.pid}.txt"
            spy_bin = os.environ.get("BENCH_PYSPY", "py-spy")
            flags = ["--subprocesses", "--idle", "--format", "raw", "--rate", "250"]
            spy = subprocess.Popen(
                [spy_bin, "record", "--pid", str(proc.pid), *flags, "--output", str(out)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        yield proc
        progress(f"worker -A {app}: warm shutdown")
    if spy is not None:
        with suppress(subprocess.TimeoutExpired):
            spy.wait(60)


@contextmanager
def private_redis(workdir: Path) -> Iterator[str]:
    """A redis-server of our own on a free port, without persistence; yields its URL."""
    port = free_port()
    cmd = ["redis-server", "--port", str(port), "--bind", "127.0.0.1"]
    cmd += ["--save", "", "--appendonly", "no"]
    with running(cmd, workdir / "redis.log", dict(os.environ)) as proc:
        wait_until(lambda: proc.poll() is not None or _answers(port), 30, "redis-server")
        if proc.poll() is not None:
            raise SystemExit(f"redis-server exited: {(workdir / 'redis.log').read_text()[-500:]}")
        yield f"redis://127.0.0.1:{port}/0"


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def postgres_database(name: str, action: str) -> str | None:
    """CREATE or DROP DATABASE `name`; the problem as text, or None."""
    import psycopg

    try:
        with psycopg.connect(PG_URL, autocommit=True, connect_timeout=3) as conn:
            conn.execute(f'{action} DATABASE "{name}"')
    except psycopg.Error as exc:
        return str(exc).strip()
    return None


def postgres_url(name: str) -> str:
    return f"{PG_URL.rsplit('/', 1)[0]}/{name}"


@contextmanager
def profiled(database: str, *, prefix: str, **env: str) -> Iterator[Path]:
    """The setting of an in-process profile (bench/profile_*.py), yielding its folder: the
    folder's SITE_ROOT, the settings (`env` besides), a broker that refuses (nothing is
    sent), and a SQLite file in the folder or a fresh PostgreSQL database at
    TEST_POSTGRES_URL; the database and the folder removed after."""
    import shutil
    import tempfile

    workdir = Path(tempfile.mkdtemp(prefix=prefix))
    os.environ.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        SITE_ROOT=str(workdir / "site"),
        CELERY_BROKER_URL="redis://127.0.0.1:1/0",  # refused: nothing is sent
        **SETTINGS_ENV,
        **env,
    )
    os.environ.pop("PUBLISH_WEBHOOK_URL", None)
    name = f"bp_profile_{uuid.uuid4().hex[:8]}"
    try:
        if database != "postgres":
            os.environ["DATABASE_URL"] = f"sqlite:///{workdir / 'db.sqlite3'}"
            yield workdir
            return
        problem = postgres_database(name, "CREATE")
        if problem:
            raise SystemExit(f"no PostgreSQL: {problem}")
        os.environ["DATABASE_URL"] = postgres_url(name)
        try:
            yield workdir
        finally:
            from django.db import connections

            connections.close_all()
            postgres_database(name, "DROP")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


# --- measuring ----------------------------------------------------------------------------


def tree_rss_bytes(pid: int) -> int:
    """VmRSS of a process and its direct children (a prefork worker's pool), from /proc."""
    pids = [pid, *children_of(pid)]
    return sum(_vm_rss(p) for p in pids)


def children_of(pid: int) -> list[int]:
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        with suppress(OSError):
            stat = Path(entry.path, "stat").read_text()
            # pid (comm) state ppid …; comm may hold spaces and parentheses.
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def _vm_rss(pid: int) -> int:
    with suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100) of the values."""
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def rate(times: Sequence[float]) -> float:
    """Runs per second from the first to the last of these times: (n - 1) / span."""
    span = max(times) - min(times)
    return (len(times) - 1) / span if span > 0 else float("inf")


@contextmanager
def moto_bucket(workdir: Path) -> Iterator[dict[str, str]]:
    """An S3 server of our own (moto's server mode, as the tests start it:
    tests/support/s3.py) on a free port with one bucket; yields the settings of a site
    in it (SITE_ROOT and the AWS_* variables)."""
    import boto3

    port = free_port()
    cmd = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]
    with running(cmd, workdir / "moto.log", dict(os.environ)) as proc:
        wait_until(lambda: proc.poll() is not None or _listens(port), 60, "moto's S3 server")
        if proc.poll() is not None:
            raise SystemExit(f"moto exited: {(workdir / 'moto.log').read_text()[-500:]}")
        env = {
            "SITE_ROOT": "s3://bench-site/blog",
            "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
            "AWS_ACCESS_KEY_ID": "bench-access-key",
            "AWS_SECRET_ACCESS_KEY": "bench-secret-key",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_S3_ADDRESSING_STYLE": "path",
        }
        boto3.client(
            "s3",
            endpoint_url=env["AWS_ENDPOINT_URL"],
            aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
            region_name=env["AWS_DEFAULT_REGION"],
        ).create_bucket(Bucket="bench-site")
        yield env


def _listens(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False
