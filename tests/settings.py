"""Settings for a test run: config.settings with this run's own database, Redis db
number, queue and SITE_ROOT, and test publishers in front of the real ones.

The run id lives in the environment, so the worker and beat processes that the tests
start (which inherit it) compute the same names and share the run's data.
"""

from __future__ import annotations

import os
import random
import tempfile
import uuid
from pathlib import Path

RUN_ID = os.environ.setdefault("BLOGPUBLISH_TEST_RUN", uuid.uuid4().hex[:10])
RUN_DIR = Path(tempfile.gettempdir()) / f"blogpublish-test-{RUN_ID}"
RUN_DIR.mkdir(parents=True, exist_ok=True)

_db_kind = os.environ.setdefault("BLOGPUBLISH_TEST_DB", "sqlite")
if _db_kind == "postgres":
    _pg = os.environ.get("TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres")
    os.environ["DATABASE_URL"] = f"{_pg.rsplit('/', 1)[0]}/bp_test_{RUN_ID}"
else:
    os.environ["DATABASE_URL"] = f"sqlite:///{RUN_DIR / 'db.sqlite3'}"
# The broker: this machine's Redis with a db number of the run's own, or, in the
# RabbitMQ run, the vhost that scripts/test.sh made for the run (TEST_AMQP_URL); unless
# a test process was given a private redis-server or RabbitMQ node
# (tests/support/processes.py, tests/support/rabbitmq.py).
_redis = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379").rstrip("/")
_amqp = os.environ.get("TEST_AMQP_URL", "")
os.environ.setdefault("BLOGPUBLISH_TEST_BROKER", _amqp or f"{_redis}/{random.randint(1, 15)}")
os.environ["CELERY_BROKER_URL"] = os.environ["BLOGPUBLISH_TEST_BROKER"]
# A worker that writes the site to object storage is given its s3:// URL here
# (tests/support/s3.py); every other process writes the run's folder.
os.environ["SITE_ROOT"] = os.environ.get("BLOGPUBLISH_TEST_SITE_ROOT") or str(RUN_DIR / "site")
os.environ["STATIC_ROOT"] = str(RUN_DIR / "static")
(RUN_DIR / "static").mkdir(exist_ok=True)
os.environ["DEBUG"] = "0"
os.environ["SECRET_KEY"] = f"test-only-secret-key-of-run-{RUN_ID}-{RUN_ID}-{RUN_ID}"

# Short enough that failure paths finish in seconds; each can be overridden per process.
os.environ.setdefault("PUBLISH_MAX_ATTEMPTS", "3")
os.environ.setdefault("PUBLISH_LEASE_SECONDS", "10")
os.environ.setdefault("PUBLISH_RETRY_BACKOFF_MAX", "2")
# Small batches, so that a backlog of a few dozen rows takes several (services.publish).
os.environ.setdefault("PUBLISH_BATCH_SIZE", "5")
os.environ.setdefault("PUBLISH_BATCH_TASKS", "2")
# A preview's render (in a forked process) may take over the 1 s default on a loaded
# 2-core machine; the limit's own test sets a short one (tests/security/test_preview_limits.py).
os.environ.setdefault("PREVIEW_TIME_LIMIT", "10")

from config.queues import celery_queues  # noqa: E402
from config.settings import *  # noqa: E402, F403
from config.settings import BROKER_QUEUE_TYPE, DATABASES, PUBLISH_PUBLISHERS  # noqa: E402

# The database the tests create is the one the worker processes open.
DATABASES["default"]["TEST"] = {"NAME": DATABASES["default"]["NAME"]}

# A worker started with other settings (the webhook tests') gets queues of its own, so
# the session's worker never takes its messages.
CELERY_TASK_DEFAULT_QUEUE = os.environ.get("BLOGPUBLISH_TEST_QUEUE") or f"bp-test-{RUN_ID}"
CELERY_TASK_ROUTES, CELERY_TASK_QUEUES = celery_queues(CELERY_TASK_DEFAULT_QUEUE, BROKER_QUEUE_TYPE)

# Chaos in front (slow or failing on demand), a journal of page writes behind.
# The site publisher is the one that can be held inside its page write
# (tests.support.chaos.HeldSitePublisher): the site's own, unchanged without a rule.
PUBLISH_PUBLISHERS = [
    "tests.support.chaos.ChaosPublisher",
    *(
        "tests.support.chaos.HeldSitePublisher"
        if name == "blogpublish.site.StaticSitePublisher"
        else name
        for name in PUBLISH_PUBLISHERS
    ),
    "tests.support.chaos.JournalPublisher",
]
CHAOS_FILE = RUN_DIR / "chaos.json"
JOURNAL_FILE = RUN_DIR / "journal.log"

# Mail to files, so a test can count the alerts a worker process sent.
ADMINS = [("Test admin", "admin@example.com")]
EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
EMAIL_FILE_PATH = RUN_DIR / "mail"
# A process started beside a real SMTP server (tests/support/smtp.py) mails through it
# (EMAIL_HOST and EMAIL_PORT come from its environment).
if os.environ.get("BLOGPUBLISH_TEST_SMTP"):
    EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# A theme: a template folder searched before the app's, given to a worker as a deploy
# would give it new templates (tests/system/test_rerender_shared.py).
if os.environ.get("BLOGPUBLISH_TEST_TEMPLATE_DIR"):
    TEMPLATES = [{**TEMPLATES[0], "DIRS": [os.environ["BLOGPUBLISH_TEST_TEMPLATE_DIR"]]}]  # noqa: F405
