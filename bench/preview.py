"""The preview against the public site (issue 19, finding 2): a reader's front page
while one writer streams heavy previews, served by gunicorn with 2 workers as the
Dockerfile runs it, with the preview's limits (their defaults) and without them.

    .venv/bin/python bench/run.py preview [--quick]

A benchmark, not a test: it prints the reader's p50/p95 idle and under load, and the
ratio of the two p95 (the target: within 3×), and what the previews got.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import requests

from bench.support import free_port, progress, running, wait_until

WRITER, PASSWORD = "writer", "bench-writer-password-0123456789"
WITHOUT_LIMITS = {
    "PREVIEW_RATE_PER_MINUTE": "1000000",
    "PREVIEW_BURST": "1000000",
    "PREVIEW_MAX_CONCURRENT": "100",
    "PREVIEW_TIME_LIMIT": "10",
}


def heavy_body() -> str:
    """96 KiB of Markdown that is slow to render and within the renderer's complexity
    limits: nested lists in block quotes, by the thousand (python-markdown: about 6 s
    on one core, so the time limit stops it)."""
    unit = "> - *a* [b](c)\n>   - **d** `e`\n\n"
    return (unit * (96 * 1024 // len(unit) + 1))[: 96 * 1024]


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))] if ordered else float("nan")


def read_front_page(url: str, seconds: float) -> list[float]:
    """Milliseconds of each GET of the front page, one after another, for `seconds`."""
    times, session = [], requests.Session()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        start = time.perf_counter()
        answer = session.get(url + "/", timeout=120)
        times.append((time.perf_counter() - start) * 1000)
        answer.raise_for_status()
    return times


def writer_session(url: str) -> requests.Session:
    session = requests.Session()
    page = session.get(url + "/admin/login/", timeout=60)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    answer = session.post(
        url + "/admin/login/?next=/admin/",
        data={"username": WRITER, "password": PASSWORD, "csrfmiddlewaretoken": token},
        timeout=60,
    )
    answer.raise_for_status()
    session.headers["X-CSRFToken"] = session.cookies["csrftoken"]
    return session


def stream_previews(url: str, start, stop, results) -> None:
    """One stream of the writer's previews (a process of its own, so the reader's timings
    share no interpreter with it), back to back from `start` until `stop`; puts what they
    got, with their mean milliseconds, on `results`."""
    from urllib.parse import urlencode

    session = writer_session(url)
    body = urlencode(
        {
            "title": "Heavy",
            "body": heavy_body(),
            "publish_at_0": "2026-01-01",
            "publish_at_1": "10:00:00",
        }
    )
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    got: dict[str, list[float]] = {}
    start.wait()
    while not stop.is_set():
        began = time.perf_counter()
        answer = session.post(
            url + "/admin/publishing/article/preview/", data=body, headers=headers, timeout=120
        )
        if answer.status_code == 200 and any("stopped" in p for p in answer.json()["problems"]):
            kind = "stopped"
        else:
            kind = str(answer.status_code)
        got.setdefault(kind, []).append((time.perf_counter() - began) * 1000)
    results.put(got)


def measure(url: str, seconds: float, streams: int) -> tuple[list[float], list[float], dict]:
    context = multiprocessing.get_context("fork")
    start, stop, results = context.Event(), context.Event(), context.Queue()
    senders = [
        context.Process(target=stream_previews, args=(url, start, stop, results))
        for _ in range(streams)
    ]
    for sender in senders:
        sender.start()  # each logs in now: a login hashes a password, not measured
    idle = read_front_page(url, seconds)
    start.set()
    time.sleep(1)  # the previews under way before the reader starts
    loaded = read_front_page(url, seconds)
    stop.set()
    got: dict[str, list[float]] = {}
    for _ in senders:
        for kind, times in results.get(timeout=180).items():
            got.setdefault(kind, []).extend(times)
    for sender in senders:
        sender.join()
    return idle, loaded, got


def _publish_front_page(workdir: Path) -> None:
    from bench.run import create_articles, django_in

    with django_in(workdir):
        from django.contrib.auth import get_user_model

        from publishing.services import article_publish

        for article_id in create_articles(20, start=0):
            article_publish(article_id=article_id, retry_in=lambda n: 0)
        get_user_model().objects.create_superuser(WRITER, "w@example.com", PASSWORD)


def prepare(workdir: Path) -> dict[str, str]:
    """A database with a published front page and the writer; the env gunicorn needs.
    Made in a process of its own: `make bench` has set Django up on another database in
    this one already (bench_site), and Django reads its settings once."""
    from bench.run import django_env

    child = multiprocessing.get_context("spawn").Process(
        target=_publish_front_page, args=(workdir,)
    )
    child.start()
    child.join()
    if child.exitcode != 0:
        raise RuntimeError(f"preparing the preview bench's site failed ({child.exitcode})")
    env = {
        **os.environ,
        **django_env(workdir),
        "ALLOWED_HOSTS": "127.0.0.1",
        # Plain http on loopback: the cookies must come back without TLS.
        "SESSION_COOKIE_SECURE": "0",
        "CSRF_COOKIE_SECURE": "0",
    }
    env.pop("PUBLISH_WEBHOOK_URL", None)
    return env


def bench_preview(args: argparse.Namespace) -> None:
    """A reader's front page while one writer streams heavy previews (bench/preview.py)."""
    seconds = 10.0 if args.quick else 30.0
    streams = 4
    workdir = Path(tempfile.mkdtemp(prefix="blogpublish-bench-preview-"))
    gunicorn = str(Path(sys.executable).with_name("gunicorn"))
    try:
        env = prepare(workdir)
        print(
            f"\nPreview vs. the public site: gunicorn, 2 workers; a reader GETs / for "
            f"{seconds:.0f} s idle, then {seconds:.0f} s while one writer sends {streams} "
            f"streams of {len(heavy_body()) // 1024} KiB previews\n"
        )
        header = (
            f"{'preview limits':<22} {'idle p50':>9} {'p95':>7} {'loaded p50':>11} {'p95':>7}"
            f" {'p95 ×':>6}  previews got"
        )
        print(header)
        print("-" * len(header))
        for label, limits, threads in (
            ("on (the defaults)", {}, 1),
            ("on, --threads 4", {}, 4),
            ("off", WITHOUT_LIMITS, 1),
        ):
            port = free_port()
            url = f"http://127.0.0.1:{port}"
            cmd = [gunicorn, "config.wsgi", "--workers", "2", "--bind", f"127.0.0.1:{port}"]
            cmd += ["--threads", str(threads)]
            log = workdir / f"gunicorn-{port}.log"
            with running(cmd, log, {**env, **limits}):
                wait_until(lambda u=url: answers(u), 60, "gunicorn to answer")
                progress(f"preview limits {label}: measuring")
                idle, loaded, counts = measure(url, seconds, streams)
            ratio = percentile(loaded, 0.95) / percentile(idle, 0.95)
            got = ", ".join(
                f"{k}: {len(v)} ({statistics.mean(v):.0f} ms)" for k, v in sorted(counts.items())
            )
            print(
                f"{label:<22} {statistics.median(idle):>9.1f} {percentile(idle, 0.95):>7.1f}"
                f" {statistics.median(loaded):>11.1f} {percentile(loaded, 0.95):>7.1f}"
                f" {ratio:>6.1f}  {got}",
                flush=True,
            )
        print(
            "(milliseconds; p95 × = loaded p95 / idle p95, the target: within 3×; previews "
            "got: answers by kind, with their mean time)"
        )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def answers(url: str) -> bool:
    try:
        return requests.get(url + "/", timeout=5).status_code == 200
    except requests.RequestException:
        return False
