"""The daily digest under real Beats and workers: sent once however many Beats fire it,
and taken over after the lease when the worker sending it is killed."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator

import pytest
from django.conf import settings

from digest.days import digest_yesterday
from digest.tasks import digest_daily
from tests.support.receiver import Receiver
from tests.support.smtp import SmtpServer
from tests.support.waiting import wait_for
from tests.system.conftest import record_timing, since
from tests.system.helpers import log_count
from work.models import Digest, DigestState

pytestmark = [pytest.mark.system, pytest.mark.django_db(transaction=True)]

SECRET = "test-digest-secret-of-at-least-32-characters"
ON_SQLITE = settings.DATABASES["default"]["ENGINE"].endswith("sqlite3")


@pytest.fixture
def targets(tmp_path) -> Iterator[tuple[SmtpServer, Receiver]]:
    smtp = SmtpServer(tmp_path / "smtp").start()
    receiver = Receiver().start()
    try:
        yield smtp, receiver
    finally:
        receiver.stop()
        smtp.stop()


def digest_env(smtp: SmtpServer, receiver: Receiver, **extra: str) -> dict[str, str]:
    return {
        **smtp.env,
        "DIGEST_RECIPIENTS": "editors@example.com",
        "DIGEST_WEBHOOK_URL": receiver.url,
        "DIGEST_WEBHOOK_SECRET": SECRET,
        **extra,
    }


def wait_sent(day, timeout: float) -> Digest:
    return wait_for(
        lambda: Digest.objects.filter(day=day, state=DigestState.SENT).first(),
        timeout=timeout,
        what=f"the digest of {day} to be sent",
    )


# Two minutes of wall time per run: on PostgreSQL only, the database of more than one host
# (where two Beats happen); the same claim on SQLite is held by the concurrent send_digest
# test (tests/integration/test_digest.py), which runs on both.
@pytest.mark.skipif(ON_SQLITE, reason="two minutes of two Beats: run on PostgreSQL")
def test_two_beats_every_minute_send_one_mail_and_one_webhook_for_yesterday(pipeline, targets):
    smtp, receiver = targets
    pipeline.env.update(digest_env(smtp, receiver, DIGEST_SCHEDULE="* * * * *"))
    worker = pipeline.worker()
    beats = [pipeline.beat(name="beat-a"), pipeline.beat(name="beat-b")]
    day = digest_yesterday()

    sending = "Sending due task digest (clock.tasks.digest_daily)"
    wait_for(
        lambda: all(log_count(beat, sending) >= 1 for beat in beats),
        timeout=140,
        what="both Beats to send the digest at the next minute",
    )
    wait_for(
        lambda: log_count(worker, "clock.tasks.digest_daily[") >= 2 * 2,  # received + done
        timeout=60,
        what="the worker to have run both Beats' digest messages",
    )
    wait_sent(day, timeout=30)
    # A later firing (the next minute's, as a Beat sends it) finds the day sent. Sent
    # here rather than waited for: the minute after costs the run a minute.
    digest_daily.delay()
    wait_for(
        lambda: log_count(worker, "clock.tasks.digest_daily[") >= 3 * 2,
        timeout=60,
        what="the worker to have run the later digest message",
    )
    assert len(smtp.messages(f"Digest of {day.isoformat()}")) == 1
    assert len(receiver.requests_with_key(f"digest-{day.isoformat()}")) == 1
    assert list(Digest.objects.values_list("day", "state")) == [(day, DigestState.SENT)]


def test_a_worker_killed_while_sending_is_taken_over_after_the_lease_with_the_same_key(
    pipeline, targets
):
    smtp, receiver = targets
    day = digest_yesterday()
    key = f"digest-{day.isoformat()}"
    receiver.plan(key, "stall")  # the first post hangs: the worker is killed meanwhile
    pipeline.env.update(digest_env(smtp, receiver, DIGEST_LEASE_SECONDS="6", LOG_FORMAT="json"))
    first = pipeline.worker(name="worker-a")
    pipeline.beat()  # its resume, every PUBLISH_CATCHUP_INTERVAL, finds the day unfinished
    digest_daily.delay()

    wait_for(lambda: receiver.requests_with_key(key), timeout=60, what="the first post")
    assert len(smtp.messages(f"Digest of {day.isoformat()}")) == 1  # mailed before posting
    first.kill()  # SIGKILL, the whole worker: its message waits for the visibility timeout
    killed = time.monotonic()
    second = pipeline.worker(name="worker-b")

    row = wait_sent(day, timeout=90)
    record_timing("digest: sent by another worker after the sender was killed", since(killed))
    posts = receiver.requests_with_key(key)
    assert [p.status for p in posts] == [None, 200]  # the stalled one, then the take-over
    assert posts[0].body == posts[1].body  # the content built once, sent as it was
    assert len(smtp.messages(f"Digest of {day.isoformat()}")) == 1  # not mailed again
    assert (row.claims, row.attempts) == (2, 2)

    # The run that sent it ended with its summary line, a JSON object (LOG_FORMAT=json).
    summary = wait_for(
        lambda: [
            line
            for line in json_lines(second)
            if line.get("job") == "digest" and line.get("outcome") == "ok"
        ],
        timeout=30,
        what="the digest run's summary line",
    )[0]
    assert set(SUMMARY_FIELDS) <= summary.keys(), summary
    assert summary["rows_read"] > 0 and summary["rows_written"] > 0
    assert summary["wall_s"] > 0 and summary["peak_rss_bytes"] > 0


SUMMARY_FIELDS = (
    "job",
    "wall_s",
    "cpu_s",
    "rows_read",
    "rows_written",
    "io_read_bytes",
    "io_write_bytes",
    "peak_rss_bytes",
)


def json_lines(proc) -> list[dict]:
    lines = []
    for text in proc.log.read_text(errors="replace").splitlines():
        if text.startswith("{"):
            with contextlib.suppress(ValueError):
                lines.append(json.loads(text))
    return lines
