"""The daily digest with a real SMTP server (aiosmtpd, a subprocess), a real webhook
receiver and a real worker: sent once per day whatever fires it, retried with backoff,
missed days by the stated policy, and `send_digest` by hand."""

from __future__ import annotations

import hashlib
import hmac
import json
import subprocess
import sys
from datetime import timedelta

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from django.utils import timezone

from config.celery import app
from digest.content import day_bounds, digest_build
from digest.days import digest_yesterday
from digest.tasks import digest_daily
from publishing.models import Article, ArticleStatus, AttemptOutcome, PublishAttempt
from tests.support import processes
from tests.support.own_worker import own_worker
from tests.support.receiver import Receiver
from tests.support.smtp import SmtpServer
from tests.support.waiting import wait_for
from work.models import Digest, DigestState, JobOutcome, JobRun

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.broker,  # a worker of the module's own sends the digest: runs again on RabbitMQ
]

SECRET = "test-digest-secret-of-at-least-32-characters"
RECIPIENTS = "editors@example.com,chief@example.com"


@pytest.fixture(scope="module")
def digest_env(django_db_setup, django_db_blocker, tmp_path_factory):
    """SMTP server, webhook receiver, and a worker on queues of its own that mails and
    posts the digest to them; this process's settings say the same."""
    smtp = SmtpServer(tmp_path_factory.mktemp("smtp")).start()
    receiver = Receiver().start()
    env = {
        **smtp.env,
        "DIGEST_RECIPIENTS": RECIPIENTS,
        "DIGEST_WEBHOOK_URL": receiver.url,
        "DIGEST_WEBHOOK_SECRET": SECRET,
        "PUBLISH_WEBHOOK_TIMEOUT": "2",
    }
    try:
        with own_worker(
            "digest-worker",
            suffix="digest",
            db_blocker=django_db_blocker,
            env=env,
            EMAIL_BACKEND="django.core.mail.backends.smtp.EmailBackend",
            EMAIL_HOST="127.0.0.1",
            EMAIL_PORT=smtp.port,
            DIGEST_RECIPIENTS=RECIPIENTS.split(","),
            DIGEST_WEBHOOK_URL=receiver.url,
            DIGEST_WEBHOOK_SECRET=SECRET,
            PUBLISH_WEBHOOK_TIMEOUT=2.0,
        ):
            queue = app.conf.task_default_queue
            env = {**env, "BLOGPUBLISH_TEST_QUEUE": queue}
            yield {"smtp": smtp, "receiver": receiver, "env": env, "queue": queue}
    finally:
        receiver.stop()
        smtp.stop()


@pytest.fixture
def digest(digest_env):
    digest_env["smtp"].reset()
    digest_env["smtp"].control()
    with digest_env["receiver"].lock:
        digest_env["receiver"].received.clear()
    return digest_env


def fire(digest) -> None:
    """What Beat does at DIGEST_SCHEDULE, to this module's worker (Celery's router keeps
    the routes it read first, so the queue is named)."""
    digest_daily.apply_async(queue=digest["queue"])


def subject_of(day) -> str:
    return f"Digest of {day.isoformat()}:"


def signature_ok(received) -> bool:
    fields = dict(p.split("=", 1) for p in received.headers["X-Blogpublish-Signature"].split(","))
    key = received.headers["Idempotency-Key"]
    signed = f"{fields['t']}.{key}.".encode() + received.body
    expected = hmac.new(SECRET.encode(), signed, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, fields["v1"])


def wait_sent(day, timeout: float = 60.0) -> Digest:
    return wait_for(
        lambda: Digest.objects.filter(day=day, state=DigestState.SENT).first(),
        timeout=timeout,
        what=f"the digest of {day} to be sent",
    )


def test_a_mail_server_failing_twice__sent_on_the_third_try_webhook_posted_once(digest):
    smtp, receiver = digest["smtp"], digest["receiver"]
    smtp.control(fail=2)
    day = digest_yesterday()
    fire(digest)

    row = wait_sent(day)
    assert row.attempts == 3
    assert smtp.tries() == 3
    [mail] = smtp.messages(subject_of(day))
    assert sorted(a.strip() for a in mail["To"].split(",")) == sorted(RECIPIENTS.split(","))
    assert mail.get_body(("plain",)) is not None and mail.get_body(("html",)) is not None
    [posted] = receiver.requests_with_key(f"digest-{day.isoformat()}")
    assert posted.status == 200 and signature_ok(posted)
    assert posted.json["day"] == day.isoformat()
    assert row.mailed_to == RECIPIENTS.replace(",", ", ") and row.posted_to == receiver.url


def test_missed_days__the_three_most_recent_sent_once_oldest_first_the_older_skipped(digest):
    smtp, receiver = digest["smtp"], digest["receiver"]
    today = timezone.localdate()
    Digest.objects.create(day=today - timedelta(days=5), state=DigestState.SENT)
    fire(digest)
    fire(digest)  # a second Beat, or a retry: nothing twice

    days = [today - timedelta(days=n) for n in (3, 2, 1)]
    for day in days:
        wait_sent(day)
    assert Digest.objects.get(day=today - timedelta(days=4)).state == DigestState.SKIPPED
    assert Digest.objects.count() == 5
    keys = [r.headers["Idempotency-Key"] for r in receiver.received]
    assert keys == [f"digest-{d.isoformat()}" for d in days], "once each, oldest first"
    for day in days:
        assert len(smtp.messages(subject_of(day))) == 1
    sent_at = [Digest.objects.get(day=d).sent_at for d in days]
    assert sent_at == sorted(sent_at)


def test_when_no_digest_was_ever_sent_only_yesterdays_goes_out(digest):
    call_command("send_digest")
    assert list(Digest.objects.values_list("day", "state")) == [
        (digest_yesterday(), DigestState.SENT)
    ]
    assert len(digest["receiver"].received) == 1


def test_two_send_digest_runs_at_once_for_one_date__one_delivery(digest):
    smtp, receiver = digest["smtp"], digest["receiver"]
    smtp.control(delay=3)  # the first run holds the day while the second one starts
    day = digest_yesterday() - timedelta(days=1)
    env = {**digest["env"], "DJANGO_SETTINGS_MODULE": "tests.settings"}
    cmd = [sys.executable, "manage.py", "send_digest", "--date", day.isoformat()]
    runs = [
        subprocess.Popen(
            cmd,
            cwd=processes.ROOT,
            env={**processes.os.environ, **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [run.communicate(timeout=120)[0] for run in runs]
    assert [run.returncode for run in runs] == [0, 0], outputs

    assert len(smtp.messages(subject_of(day))) == 1, outputs
    assert len(receiver.requests_with_key(f"digest-{day.isoformat()}")) == 1, outputs
    assert Digest.objects.get(day=day).state == DigestState.SENT
    assert sum("was sent" in out for out in outputs) >= 1, outputs


def test_send_digest_date_sends_a_skipped_day_once_and_refuses_a_day_not_over(digest):
    receiver = digest["receiver"]
    day = digest_yesterday() - timedelta(days=10)
    Digest.objects.create(day=day, state=DigestState.SKIPPED)
    call_command("send_digest", "--date", day.isoformat())
    assert Digest.objects.get(day=day).state == DigestState.SENT
    call_command("send_digest", "--date", day.isoformat())  # sent already: not again
    assert len(receiver.requests_with_key(f"digest-{day.isoformat()}")) == 1
    assert len(digest["smtp"].messages(subject_of(day))) == 1

    with pytest.raises(CommandError, match="not over yet"):
        call_command("send_digest", "--date", timezone.localdate().isoformat())


def test_send_digest_date_sends_a_day_whose_last_try_died(digest):
    """Pending with every try spent, none recorded as the last (its worker died): asked
    for by hand, "with a fresh budget of tries", it was given up as failed with an alert
    instead of sent (a review's finding)."""
    day = digest_yesterday() - timedelta(days=12)
    Digest.objects.create(day=day, state=DigestState.PENDING, attempts=settings.DIGEST_MAX_ATTEMPTS)

    call_command("send_digest", "--date", day.isoformat())

    assert Digest.objects.get(day=day).state == DigestState.SENT
    assert len(digest["receiver"].requests_with_key(f"digest-{day.isoformat()}")) == 1


def test_the_digest_lists_the_days_publishes_scheduled_dead_slowest_and_counts(make_article):
    day = digest_yesterday()
    start, _ = day_bounds(day)
    live = make_article(title="Live <one>")
    dead = make_article(title="Dead one")
    later = make_article(title="Later one", publish_at=timezone.now() + timedelta(hours=3))
    Article.objects.filter(pk=live.pk).update(status=ArticleStatus.PUBLISHED)
    Article.objects.filter(pk=dead.pk).update(status=ArticleStatus.DEAD)
    at = start + timedelta(hours=10)
    for article, number, outcome, seconds, error in [
        (live, 1, AttemptOutcome.RETRY, 1.0, "timeout"),
        (live, 2, AttemptOutcome.OK, 4.5, ""),
        (dead, 1, AttemptOutcome.DEAD, 0.5, "webhook answered HTTP 400"),
    ]:
        PublishAttempt.objects.create(
            article=article,
            number=number,
            content_hash=article.content_hash,
            started_at=at,
            finished_at=at + timedelta(seconds=seconds),
            duration=timedelta(seconds=seconds),
            outcome=outcome,
            error=error,
        )
    PublishAttempt.objects.create(  # the day before: not in this digest
        article=live, number=9, content_hash="x", started_at=start - timedelta(hours=1),
        finished_at=start - timedelta(minutes=59), outcome=AttemptOutcome.OK,
    )  # fmt: skip

    content = digest_build(day=day)
    assert [(a["title"], a["url"]) for a in content["published"]] == [
        ("Live <one>", f"{settings.SITE_URL}/{live.slug}/")
    ]
    assert [a["title"] for a in content["scheduled_next_24h"]] == [later.title]
    assert [(a["title"], a["error"]) for a in content["dead"]] == [
        ("Dead one", "webhook answered HTTP 400")
    ]
    assert [a["duration_s"] for a in content["slowest"]] == [4.5]
    assert content["attempts"] == {"ok": 1, "retry": 1, "dead": 1, "running": 0}
    json.dumps(content)  # the webhook's body as it is

    from digest.content import digest_render

    text, html = digest_render(content)
    assert "Live <one>" in text and "Live &lt;one&gt;" in html and "<one>" not in html


def test_the_admin_lists_every_days_digest_with_its_state(admin_client):
    today = timezone.localdate()
    Digest.objects.create(day=today - timedelta(days=2), state=DigestState.SKIPPED)
    Digest.objects.create(
        day=today - timedelta(days=1),
        state=DigestState.SENT,
        sent_at=timezone.now(),
        mailed_to="editors@example.com",
    )
    page = admin_client.get("/admin/clock/digest/").content.decode()
    assert "Skipped" in page and "Sent" in page and "editors@example.com" in page


def test_a_webhook_failing_twice__posted_on_the_third_try_under_one_key_mailed_once(digest):
    smtp, receiver = digest["smtp"], digest["receiver"]
    day = digest_yesterday()
    key = f"digest-{day.isoformat()}"
    receiver.plan(key, 503, 500)
    fire(digest)

    row = wait_sent(day)
    posts = receiver.requests_with_key(key)
    assert [p.status for p in posts] == [503, 500, 200]
    assert all(signature_ok(p) for p in posts)
    assert len({p.body for p in posts}) == 1  # the same content at every try
    assert len(smtp.messages(subject_of(day))) == 1  # the mail went at the first try only
    assert row.attempts == 3


def test_a_failed_try_waits_thirty_seconds_before_the_next(digest, settings):
    """A day's five tries at 1, 2, 4 and 8 s were spent by a receiver restarting for
    16 s (a review's finding); now the waits start at half a minute."""
    settings.PUBLISH_RETRY_BACKOFF_MAX = 600  # production's cap (the tests' is 2 s)
    digest["smtp"].control(fail=1)
    day = digest_yesterday() - timedelta(days=5)
    before = timezone.now()
    with pytest.raises(CommandError, match="failed"):
        call_command("send_digest", "--date", day.isoformat())

    row = Digest.objects.get(day=day)
    assert row.attempts == 1
    assert 29 <= (row.next_attempt_at - before).total_seconds() <= 60


def test_send_digest_date_that_fails_exits_1_and_a_second_run_sends_it(digest):
    smtp = digest["smtp"]
    day = digest_yesterday() - timedelta(days=3)
    smtp.control(fail=1)
    with pytest.raises(CommandError, match="failed"):
        call_command("send_digest", "--date", day.isoformat())
    row = Digest.objects.get(day=day)
    assert (row.state, row.attempts, row.mailed_at) == (DigestState.PENDING, 1, None)
    assert "451" in row.last_error and row.next_attempt_at is not None

    call_command("send_digest", "--date", day.isoformat())  # by hand: no waiting for backoff
    row.refresh_from_db()
    assert (row.state, row.attempts) == (DigestState.SENT, 2)
    # Its runs as recorded: the failed one failed (it was "ok", a review's finding).
    runs = JobRun.objects.filter(job="digest", detail__startswith=f"--date {day}")
    assert list(runs.order_by("started_at").values_list("outcome", flat=True)) == [
        JobOutcome.FAILED,
        JobOutcome.OK,
    ]
    assert len(smtp.messages(subject_of(day))) == 1
