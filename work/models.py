"""The clock's bookkeeping: one row per day's digest, one per scheduled run, and the
leases that keep runs of a job (and the heavy jobs) from overlapping.

Like an article, a digest and a job are taken with one conditional UPDATE on a short
lease; there is no owner field. Whoever finds the lease free may take the row.
"""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _


class DigestState(models.TextChoices):
    # To be sent (or being sent, while its lease holds).
    PENDING = "pending", _("Pending")
    # Mailed and posted (whichever of the two is configured).
    SENT = "sent", _("Sent")
    # A missed day older than DIGEST_CATCHUP_DAYS: recorded, not sent (`send_digest
    # --date` sends it by hand).
    SKIPPED = "skipped", _("Skipped")
    # Gave up after DIGEST_MAX_ATTEMPTS failed tries; `send_digest --date` tries again.
    FAILED = "failed", _("Failed")


class Digest(models.Model):
    """The editors' digest of one day (in TIME_ZONE). Unique by day: whoever fires the
    digest (two Beats, a retry, a manual run, cron) inserts the row or finds it."""

    day = models.DateField(unique=True)
    state = models.CharField(max_length=16, choices=DigestState.choices)
    # Tries of the current round, the budget (reset by `send_digest --date`).
    attempts = models.PositiveIntegerField(default=0)
    # Claims ever made: the value read after a claim is the fencing token.
    claims = models.PositiveBigIntegerField(default=0)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")
    # What is sent, built once at the first claim, so every retry sends the same.
    content = models.JSONField(null=True, blank=True)
    # Each channel's own delivery, so a retry after the mail went does not mail again.
    mailed_at = models.DateTimeField(null=True, blank=True)
    mailed_to = models.TextField(blank=True, default="")
    posted_at = models.DateTimeField(null=True, blank=True)
    posted_to = models.CharField(max_length=500, blank=True, default="")
    sent_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-day"]

    def __str__(self) -> str:
        return f"digest of {self.day} ({self.state})"


class JobOutcome(models.TextChoices):
    # The run did its work.
    OK = "ok", _("OK")
    # The run raised.
    FAILED = "failed", _("Failed")
    # Not run: the previous run of the job (or another heavy job) still held its lease.
    SKIPPED = "skipped", _("Skipped")


class JobRun(models.Model):
    """What one scheduled run cost, as its summary log line says (docs/operations.md,
    "What each scheduled run cost")."""

    job = models.CharField(max_length=64)
    outcome = models.CharField(max_length=16, choices=JobOutcome.choices)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField()
    wall_s = models.FloatField(default=0)
    cpu_s = models.FloatField(default=0)
    rows_read = models.BigIntegerField(default=0)
    rows_written = models.BigIntegerField(default=0)
    # None where /proc/self/io does not exist (not Linux).
    io_read_bytes = models.BigIntegerField(null=True, blank=True)
    io_write_bytes = models.BigIntegerField(null=True, blank=True)
    # The process's peak RSS so far (a worker child's whole life), and how much this run
    # raised it.
    peak_rss_bytes = models.BigIntegerField(default=0)
    rss_growth_bytes = models.BigIntegerField(default=0)
    host = models.CharField(max_length=255, blank=True, default="")
    detail = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["-started_at"]
        indexes = [
            models.Index(fields=["job", "-started_at"], name="clock_jobrun_job_idx"),
            # /metrics: each job's last run of each outcome, and the jobs (work.metrics).
            models.Index(fields=["job", "outcome", "-started_at"], name="clock_jobrun_outcome_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.job} at {self.started_at:%Y-%m-%d %H:%M:%S} ({self.outcome})"


class JobLease(models.Model):
    """One row per job name (and one named "heavy"): taken for a run with a conditional
    UPDATE, let go at its end, free again once `lease_expires_at` passed (a run whose
    process died)."""

    name = models.CharField(max_length=64, unique=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    # Which job's run took it (for "heavy": which heavy job), and since when: what the
    # "skipped" log line says. Not an owner: nothing but the lease decides who may run.
    running_job = models.CharField(max_length=64, blank=True, default="")
    held_since = models.DateTimeField(null=True, blank=True)
    # Leases ever taken: the fencing token of a release.
    takes = models.PositiveBigIntegerField(default=0)

    def __str__(self) -> str:
        return self.name


class Checkpoint(models.Model):
    """How far a long job that runs in several passes got (work.checkpoints): one row
    per job name, written in the transaction of the pass whose progress it records, so
    a pass that stops at its time budget resumes where it stopped, and one that fails
    or is overtaken leaves the last committed progress. Not a lock: only the job's own
    lease decides who runs it."""

    name = models.CharField(max_length=64, unique=True)
    # Where the job resumes, in the job's own terms; None: from the start.
    position = models.JSONField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"checkpoint {self.name}: {self.position}"
