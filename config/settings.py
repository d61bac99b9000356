"""Settings of blogpublish.

Every environment variable the project reads is read here, each with a working local
default (`.env.example` lists them all). Production is the default: DEBUG is off unless
set (`make run` sets it for local work), and secrets have no default outside DEBUG, so
a production start without them fails loudly instead of running with a known key.
"""

from __future__ import annotations

import contextlib
import math
import os
import zoneinfo
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from config.checks import (
    allowed_hosts_problems,
    database_problems,
    digest_lease_problems,
    endpoint_problems,
    mail_address_problems,
    metrics_token_problems,
    preview_settings_problems,
    publishing_settings_problems,
    secret_key_problems,
    site_folder_problems,
    site_language_problems,
    site_root_problems,
    site_title_problems,
    url_problems,
    webhook_delivery_problems,
    webhook_secret_problems,
)
from config.crontab import parse_crontab
from config.queues import celery_queues
from work import brokers
from work.site_root import parse_site_root

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = BASE_DIR / "var"


def env_str(name: str, default: str = "") -> str:
    """The variable's text; empty is the default, as unset is (`NAME=` in .env.example
    means "the default": `CELERY_BROKER_URL=` stopped every process)."""
    return os.environ.get(name, "").strip() or default


def env_bool(name: str, default: bool) -> bool:
    """1/true/yes/on or 0/false/no/off; empty is the default, as unset is (`NAME=` in
    .env.example means "the default")."""
    raw = env_str(name).lower()
    if not raw:
        return default
    if raw in {"1", "true", "yes", "on"}:
        return True
    if raw in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean; use 1 or 0.")


# Every number's ceiling unless it names its own: three years in seconds, more days than
# a date can count past, and no `inf`, which passed every check and then broke what
# used it (a timedelta's overflow in every catch-up run: a review's finding).
NUMBER_MAXIMUM = 100_000_000


def env_number(
    name: str, default: float, *, minimum: float, maximum: float = NUMBER_MAXIMUM
) -> float:
    raw = env_str(name, str(default))
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a number.") from None
    if not math.isfinite(value):
        raise ImproperlyConfigured(f"{name}={raw!r} is not a finite number.")
    if value < minimum:
        raise ImproperlyConfigured(f"{name}={raw} is below its minimum of {minimum}.")
    if value > maximum:
        raise ImproperlyConfigured(f"{name}={raw} is above its maximum of {maximum:,}.")
    return value


def env_int(name: str, default: int, *, minimum: int, maximum: int = NUMBER_MAXIMUM) -> int:
    value = env_number(name, default, minimum=minimum, maximum=maximum)
    if value != int(value):
        raise ImproperlyConfigured(f"{name}={value} is not a whole number.")
    return int(value)


def _create_private_sqlite_file(name: str) -> list[str]:
    """The SQLite file holds password hashes and sessions: when it is ours to create,
    its folder is made 0700 and the file 0600 (SQLite gives its -wal and -shm files the
    file's mode), whatever the umask. An existing folder or file is left as it is
    (docs/operations.md says how to tighten an older var/). A path that cannot be one
    (`/proc/nope/db.sqlite3`, `/etc/passwd/db.sqlite3`) is a problem, not a traceback."""
    if not name or name == ":memory:" or name.startswith("file:"):
        return []
    path = Path(name)
    try:
        if not path.parent.exists():
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError as exc:
        return [f"DATABASE_URL's SQLite file {name!r} cannot be made: {exc.strerror or exc}."]
    return []


# --- Django -------------------------------------------------------------------------

# Off unless set: a deployment that forgets it must not show tracebacks, settings and
# the URLconf to anyone (issue 8). `make run` sets DEBUG=1 for local work.
DEBUG = env_bool("DEBUG", False)
# Outside DEBUG at least 50 characters, or nothing starts (config/checks.py).
SECRET_KEY = env_str("SECRET_KEY")
if DEBUG and not SECRET_KEY:
    SECRET_KEY = "django-insecure-local-only-never-deploy-this-key"

# Comma-separated; spaces around a name are not part of it (" testserver" matched no
# host: a 400 for it), and empty entries are dropped (config/checks.py refuses an empty
# list outside DEBUG).
ALLOWED_HOSTS = [
    h.strip() for h in env_str("ALLOWED_HOSTS", "127.0.0.1,localhost").split(",") if h.strip()
]

# HTTPS (docs/operations.md, "Production settings"). Behind a proxy that terminates TLS,
# SECURE_PROXY_SSL_HEADER names the header by which it says "https" (X-Forwarded-Proto);
# set it only when the proxy overwrites that header on every request, or a client could
# claim https itself. Off by default: redirecting to https, or HSTS, on a deployment that
# does not serve https would lock everyone out of it.
_proxy_ssl_header = env_str("SECURE_PROXY_SSL_HEADER")
if _proxy_ssl_header and not _proxy_ssl_header.replace("-", "").isalnum():
    raise ImproperlyConfigured(
        f"SECURE_PROXY_SSL_HEADER={_proxy_ssl_header!r}: give a header name, e.g. "
        "X-Forwarded-Proto."
    )
SECURE_PROXY_SSL_HEADER = (
    ("HTTP_" + _proxy_ssl_header.upper().replace("-", "_"), "https") if _proxy_ssl_header else None
)
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
# Cookies that carry a login travel over https only, unless DEBUG (runserver is http).
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", not DEBUG)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "publishing.apps.PublishingConfig",
    "blogpublish.apps.BlogpublishConfig",
    "api.apps.ApiConfig",
    # Label "clock": its tables and migrations keep the names they had in clock/.
    "work.apps.WorkConfig",
    "digest.apps.DigestConfig",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # A request id for the log lines of this request and of the tasks it sends.
    "publishing.middleware.RequestIdMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    # A form too large to read: a 413 that says so (before the next, which reads it).
    "config.middleware.FormTooLargeToRead",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "publishing.middleware.AdminQueryNulMiddleware",
    # A HEAD under /api/ answered as its GET, without the body (django-ninja: 405);
    # before the next, so that a HEAD's JSON 405 loses its body too.
    "api.middleware.HeadAsGet",
    # A 405 under /api/ in the API's JSON (django-ninja's is plain text).
    "api.middleware.JsonMethodNotAllowed",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
# Large enough that a body over the 1 MiB limit reaches validation and gets its message.
DATA_UPLOAD_MAX_MEMORY_SIZE = 8 * 2**20
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# SQLite is for one host; PostgreSQL for anything beyond. On SQLite, WAL lets readers
# run beside the one writer, IMMEDIATE transactions take the write lock at BEGIN (no
# "database is locked" when a read lock cannot be upgraded), and the busy timeout makes
# a worker wait for the lock instead of failing.
DATABASE_URL = env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'db.sqlite3'}")
try:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL)}
except ValueError as exc:
    # Not the URL itself: it may hold a password (a review's finding).
    raise ImproperlyConfigured(f"DATABASE_URL is not usable: {exc}") from None
# Checked, and a SQLite file made, once SITE_ROOT is known (the sanity section below).
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["OPTIONS"] = {
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
        "timeout": 30,
    }
elif DATABASES["default"]["ENGINE"] in (
    "django.db.backends.postgresql",
    "django.contrib.gis.db.backends.postgis",
):
    # A server that does not answer (a host gone, a firewall dropping packets) fails a
    # connection after this many seconds instead of holding a request, /healthz or a
    # task until the kernel gives up; `?connect_timeout=` in the URL wins, if it is one
    # (libpq reads 0 as no limit).
    _options = DATABASES["default"].setdefault("OPTIONS", {})
    _given = str(_options.get("connect_timeout", "")).strip()
    if _given and not (_given.isascii() and _given.isdigit() and int(_given) >= 1):
        raise ImproperlyConfigured(
            f"DATABASE_URL's connect_timeout={_given!r}: a whole number of seconds, at least 1."
        )
    _options.setdefault("connect_timeout", env_int("DB_CONNECT_TIMEOUT", 5, minimum=1))
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
# Connections live across requests and tasks (a new PostgreSQL connection costs
# milliseconds, more than a whole attempt's statements); checked before reuse, and
# dropped after an error or past this age (config/celery.py does for tasks what Django
# does for requests). Whole seconds, as Django documents CONN_MAX_AGE.
DATABASES["default"]["CONN_MAX_AGE"] = env_int("DB_CONN_MAX_AGE", 300, minimum=0)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Migrations never stop the blog (docs/operations.md, "Upgrades"): on PostgreSQL each
# statement of `manage.py migrate` waits at most this many seconds for its lock (the
# saves and claims queued behind a waiting ALTER wait as long), and a migration that
# timed out is rolled back and tried again, up to MIGRATION_LOCK_RETRIES times
# (work/management/commands/migrate.py).
# PostgreSQL's lock_timeout is a 32-bit count of milliseconds: past that, migrate failed
# with "exceeds integer range" (a review's finding).
MIGRATION_LOCK_TIMEOUT = env_number(
    "MIGRATION_LOCK_TIMEOUT", 2, minimum=0.001, maximum=(2**31 - 1) // 1000
)
MIGRATION_LOCK_RETRIES = env_int("MIGRATION_LOCK_RETRIES", 20, minimum=0)

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
# The zone of DIGEST_SCHEDULE and of the digest's days (Celery's too: CELERY_TIMEZONE).
TIME_ZONE = env_str("TIME_ZONE") or "UTC"
try:
    zoneinfo.ZoneInfo(TIME_ZONE)
except (zoneinfo.ZoneInfoNotFoundError, ValueError):
    raise ImproperlyConfigured(
        f"TIME_ZONE={TIME_ZONE!r} is not a time zone name (e.g. UTC, Europe/Berlin)."
    ) from None
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
# A relative path is the project's folder's (as the default is), whichever folder a
# process starts in: collectstatic and WhiteNoise then agree (a review's; the previous
# release's .env.example had `var/static`, which refusing would have stopped).
STATIC_ROOT = BASE_DIR / env_str("STATIC_ROOT", str(VAR_DIR / "static"))
# WhiteNoise serves the admin's files when DEBUG is off; from the apps too, so a
# deployment that skipped collectstatic still has a working admin.
WHITENOISE_USE_FINDERS = True

ADMINS = [("Admin", a.strip()) for a in env_str("ADMINS").split(",") if a.strip()]
# Alerts are mailed from Beat and the workers: a mail server that accepts and never
# answers must not hold them (Django's SMTP backend waits forever by default).
EMAIL_TIMEOUT = 10
EMAIL_BACKEND = (
    "django.core.mail.backends.console.EmailBackend"
    if DEBUG
    else "django.core.mail.backends.smtp.EmailBackend"
)
# The mail server of alerts and the digest (Django's own settings, read from the env).
EMAIL_HOST = env_str("EMAIL_HOST") or "localhost"
EMAIL_PORT = env_int("EMAIL_PORT", 25, minimum=1, maximum=65535)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", False)
if EMAIL_USE_TLS and EMAIL_USE_SSL:
    raise ImproperlyConfigured("EMAIL_USE_TLS and EMAIL_USE_SSL: set one of them, not both.")
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL") or "blogpublish@localhost"
SERVER_EMAIL = env_str("SERVER_EMAIL") or DEFAULT_FROM_EMAIL

# --- Publishing ---------------------------------------------------------------------

# Where the site is written: a local folder (an absolute path; the default) or
# S3-compatible object storage, s3://BUCKET/PREFIX (docs/site.md, "Where the site lives").
# Anything else stops start-up (work/site_root.py). A path stays a Path here; a URL a str.
_site_root = env_str("SITE_ROOT") or str(VAR_DIR / "site")
_site_root_problems = site_root_problems(_site_root)
SITE_ROOT: Path | str = _site_root
if not _site_root_problems and not parse_site_root(_site_root).is_s3:
    try:
        SITE_ROOT = Path(_site_root).resolve()
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop (Python < 3.13)
        _site_root_problems = [f"SITE_ROOT={_site_root!r} cannot be resolved: {exc}."]
    else:
        _site_root_problems = site_folder_problems(SITE_ROOT)
# Object storage (SITE_ROOT=s3://…) through django-storages' S3 backend (boto3), with the
# standard AWS variables, so AWS S3, MinIO, Cloudflare R2 and the like all work. Unset
# keys leave boto3 its own chain (an instance role, ~/.aws); AWS_ENDPOINT_URL is needed
# for anything but AWS itself.
AWS_ENDPOINT_URL = env_str("AWS_ENDPOINT_URL") or None
AWS_ACCESS_KEY_ID = env_str("AWS_ACCESS_KEY_ID") or None
AWS_SECRET_ACCESS_KEY = env_str("AWS_SECRET_ACCESS_KEY") or None
AWS_DEFAULT_REGION = env_str("AWS_DEFAULT_REGION") or None
# "path" (bucket in the path: MinIO, R2, an IP address) or "virtual" (bucket in the
# host name); empty: path with AWS_ENDPOINT_URL, else botocore's choice (AWS).
AWS_S3_ADDRESSING_STYLE = env_str("AWS_S3_ADDRESSING_STYLE") or (
    "path" if AWS_ENDPOINT_URL else None
)
if AWS_S3_ADDRESSING_STYLE not in {None, "path", "virtual", "auto"}:
    raise ImproperlyConfigured(
        f"AWS_S3_ADDRESSING_STYLE={AWS_S3_ADDRESSING_STYLE!r}: use path, virtual or auto, or "
        "leave it empty."
    )
# Cache-Control of every object (front page, archive, feed, sitemap, article pages): a
# CDN or browser may keep a document this long, so an edit shows within it.
SITE_CACHE_CONTROL = env_str("SITE_CACHE_CONTROL", "public, max-age=60")
# The address under which SITE_ROOT is served; used for links in the feed and webhook.
# Where `make run` serves the site: SITE_URL when nothing sets it (check --deploy warns).
SITE_URL_DEFAULT = "http://127.0.0.1:8000"
SITE_URL = (env_str("SITE_URL") or SITE_URL_DEFAULT).rstrip("/")  # empty: the default
SITE_TITLE = env_str("SITE_TITLE", "blogpublish")
# The re-render of the whole site in a new look (issue 20, blogpublish.site.rerender)
# writes this many pages under one page guard and one checkpoint commit: larger is
# faster; smaller holds each article's guard for less time and loses less to a kill.
SITE_RERENDER_CHUNK = env_int("SITE_RERENDER_CHUNK", 100, minimum=1)

# The language of an article that names none (`lang` of its page, the feeds'): a BCP 47
# tag, e.g. en, fr, pt-BR.
SITE_LANGUAGE = env_str("SITE_LANGUAGE", "en")
# 1: every feed entry carries the whole article (Atom <content>, JSON Feed content_html),
# as Ghost and WordPress give it; 0: a summary only (the description or the excerpt).
FEED_FULL_CONTENT = env_bool("FEED_FULL_CONTENT", True)
# The Content-Security-Policy of the site's pages (blogpublish.csp) allows images from
# the site and over https; 1: from the site only (no hot-linked images, no tracking pixels).
SITE_IMAGES_SELF_ONLY = env_bool("SITE_IMAGES_SELF_ONLY", False)
# An uploaded image (SITE_ROOT/media/) that no article uses is removed by the full check
# once this long has passed since it was uploaded or last seen in use (a day: a writer
# who uploads and saves later, or undoes a removal, keeps it).
IMAGE_GRACE_SECONDS = env_number("IMAGE_GRACE_SECONDS", 86400, minimum=0)
# The article form's preview cannot tie up the web (blogpublish.desk.limits): per writer
# at most PREVIEW_RATE_PER_MINUTE previews in bursts of PREVIEW_BURST; at most
# PREVIEW_MAX_CONCURRENT rendering at once across every web process (each may use a CPU
# core); a render stopped once it used PREVIEW_TIME_LIMIT seconds of CPU (docs/operations.md).
PREVIEW_RATE_PER_MINUTE = env_number("PREVIEW_RATE_PER_MINUTE", 60, minimum=0)
PREVIEW_BURST = env_int("PREVIEW_BURST", 10, minimum=0)
PREVIEW_MAX_CONCURRENT = env_int("PREVIEW_MAX_CONCURRENT", 1, minimum=0)
PREVIEW_TIME_LIMIT = env_number("PREVIEW_TIME_LIMIT", 1.0, minimum=0)
# Drafts (issue 22, docs/writing.md): a shared preview link (/preview/<token>/) works
# this long; a deleted story stays in the trash this many days; a story's revisions
# older than STORY_REVISIONS_KEEP_DAYS are pruned by the catch-up, its newest
# STORY_REVISIONS_KEEP_COUNT always kept.
STORY_PREVIEW_SECONDS = env_number("STORY_PREVIEW_SECONDS", 7 * 86400, minimum=60)
# Days: at most a thousand years (a date as far back as more is not one a date holds).
STORY_TRASH_DAYS = env_number("STORY_TRASH_DAYS", 30, minimum=0, maximum=365_000)
STORY_REVISIONS_KEEP_DAYS = env_number("STORY_REVISIONS_KEEP_DAYS", 90, minimum=0, maximum=365_000)
STORY_REVISIONS_KEEP_COUNT = env_int("STORY_REVISIONS_KEEP_COUNT", 50, minimum=1)

PUBLISH_MAX_ATTEMPTS = env_int("PUBLISH_MAX_ATTEMPTS", 5, minimum=1)
# How long one claimed attempt may run before any executor may take the row over.
PUBLISH_LEASE_SECONDS = env_number("PUBLISH_LEASE_SECONDS", 120, minimum=2)
# The task's limits stay inside the lease, so a task is stopped before its lease can be
# taken over (DESIGN.md, "The paths", 2).
PUBLISH_TIME_LIMIT = PUBLISH_LEASE_SECONDS * 0.9
PUBLISH_SOFT_TIME_LIMIT = PUBLISH_LEASE_SECONDS * 0.8
# Each request to the object storage (SITE_ROOT=s3://…) is bounded and retried once
# (botocore's "standard" retries: throttling, 5xx, broken connections), so an unreachable
# endpoint costs a write well under the soft time limit and ends as a retry of the
# attempt with the error named, never as a hung worker. botocore's own defaults (60 s
# per read, several retries) could outlive the lease.
SITE_STORAGE_CONNECT_TIMEOUT = min(3.0, PUBLISH_SOFT_TIME_LIMIT / 8)
SITE_STORAGE_READ_TIMEOUT = min(10.0, PUBLISH_SOFT_TIME_LIMIT / 4)
SITE_STORAGE_MAX_ATTEMPTS = 2  # the first request counted (botocore's total_max_attempts)
# How long after a client gave up a PUT may still land: every attempt's connect and read
# timeouts, botocore's standard backoff between them (20 s at most) and a margin for a
# request held on the way (a proxy, a slow endpoint). A folder removed for a delete or a
# withdraw is removed again by the first pass after it: a page PUT in flight when its
# attempt gave up, retried by botocore past the removal, put the page back for good (a
# review's finding; blogpublish.site.state.ChecksDue.again).
SITE_STORAGE_LATE_WRITE_SECONDS = (
    SITE_STORAGE_MAX_ATTEMPTS * (SITE_STORAGE_CONNECT_TIMEOUT + SITE_STORAGE_READ_TIMEOUT) + 20 + 60
)
# Upper bound of the retry backoff (Celery's retry_backoff_max); stays far below the
# broker's visibility timeout (see CELERY_BROKER_TRANSPORT_OPTIONS).
PUBLISH_RETRY_BACKOFF_MAX = env_int("PUBLISH_RETRY_BACKOFF_MAX", 600, minimum=1)
# The catch-up (Celery Beat) runs this often; see CELERY_BEAT_SCHEDULE.
# At least a second: 0.01 had Beat send over a hundred catch-ups a second (a review's
# finding); the safety net needs no more.
PUBLISH_CATCHUP_INTERVAL = env_number("PUBLISH_CATCHUP_INTERVAL", 120, minimum=1)
# Due pending rows untouched (and unsent) this long are sent again by the catch-up.
PUBLISH_STALE_AFTER = env_number("PUBLISH_STALE_AFTER", 60, minimum=0)
# At most this many rows are sent, and as many armed, per catch-up run.
PUBLISH_CATCHUP_BATCH = 500
# Backlogs (an import, a large catch-up) are published by batch tasks
# (publishing.tasks.publish_batch, docs/import.md): each claims up to PUBLISH_BATCH_SIZE
# due rows in one statement; PUBLISH_BATCH_TASKS of them go out at once (at least the
# worker processes that should share the backlog, on every host), and the catch-up
# uses them instead of one message per row when more than PUBLISH_BATCH_THRESHOLD rows
# are stale. A batch publishes its rows one after another inside their lease, so the
# size times the slowest target's time must stay well under PUBLISH_LEASE_SECONDS; a
# batch stops taking new rows halfway through the lease and lets the rest go.
PUBLISH_BATCH_SIZE = env_int("PUBLISH_BATCH_SIZE", 100, minimum=1)
PUBLISH_BATCH_TASKS = env_int("PUBLISH_BATCH_TASKS", 4, minimum=1)
PUBLISH_BATCH_THRESHOLD = env_int("PUBLISH_BATCH_THRESHOLD", 100, minimum=0)
PUBLISH_STUCK_AFTER = env_number("PUBLISH_STUCK_AFTER", 900, minimum=1)
# Saves, admin actions and the catch-up hand their messages to the broker on a pool of
# connections kept per process with short timeouts (publishing/dispatch.py,
# work/brokers.py `dispatch_transport_options`, for the broker in use): with one retry,
# a broker that is down, or accepts and never answers, costs a send about a second (two
# for one whose open connection never confirms: RabbitMQ on a memory alarm).
# redis-py and py-amqp wait forever by default.
# After a send failed, a process skips the broker for this many seconds (its rows stay
# pending for the catch-up), so a burst of saves or a bulk action during an outage costs
# one timeout, not one per row; then it tries again. 0 turns the breaker off.
PUBLISH_DISPATCH_BREAKER_SECONDS = env_number("PUBLISH_DISPATCH_BREAKER_SECONDS", 5, minimum=0)

# The shared views (front page, archive, feed, sitemap) are refreshed by one pass at a
# time, at most one pass per interval: a burst's requests fold into a few passes, and
# the burst is listed about an interval after its last publish
# (publishing/services/refresh.py). A deferred pass is a message with a countdown, so
# both intervals stay far inside the broker's visibility timeout (below): Redis would
# hand a longer countdown to a second worker (docs/operations.md, "Settings").
PUBLISH_REFRESH_INTERVAL = env_number("PUBLISH_REFRESH_INTERVAL", 0.25, minimum=0, maximum=600)
# While a backlog drains by batches (a batch that was full: more is due), its refresh
# requests ask for at most one pass per this interval: every pass re-renders the feed,
# the front page and, for an import of older articles, the archive, which would take
# the workers' time from the backlog. The batch that drains the backlog asks with the
# usual interval, so the shared views list everything about an interval after the
# backlog's last publish; meanwhile they lag the backlog by at most about this long
# (docs/import.md, docs/performance.md). Never below PUBLISH_REFRESH_INTERVAL.
PUBLISH_REFRESH_BACKLOG_INTERVAL = max(
    PUBLISH_REFRESH_INTERVAL,
    env_number("PUBLISH_REFRESH_BACKLOG_INTERVAL", 5, minimum=0, maximum=600),
)
# A pass's lease: a refresher that dies lets go after this; a pass stays inside it.
PUBLISH_REFRESH_LEASE_SECONDS = PUBLISH_LEASE_SECONDS
# The catch-up task's hard time limit, and the lease of its full check's run (which
# may read for minutes on a large site, beside the passes: it holds no lease of theirs).
PUBLISH_CATCHUP_TIME_LIMIT = 330
# A deferred pass not begun this long after its time is taken for lost and sent again.
PUBLISH_REFRESH_LOST_AFTER = 5 + 2 * PUBLISH_REFRESH_INTERVAL
# The catch-up runs the full check of the site (scan SITE_ROOT, rebuild every view) this
# often; the other runs refresh from what changed, whose cost does not grow with the site.
PUBLISH_RECONCILE_EVERY = env_number("PUBLISH_RECONCILE_EVERY", 3600, minimum=0)

# Each webhook request is signed with its secret (at least 32 characters, required with
# the URL, DEBUG or not): docs/site.md, "The webhook".
PUBLISH_WEBHOOK_URL = env_str("PUBLISH_WEBHOOK_URL")
PUBLISH_WEBHOOK_SECRET = env_str("PUBLISH_WEBHOOK_SECRET")
# Seconds to wait for the receiver's answer (connecting takes at most ~3 s more); the
# whole call stays inside the task's soft time limit, so a slow receiver is a retry.
PUBLISH_WEBHOOK_TIMEOUT = env_number("PUBLISH_WEBHOOK_TIMEOUT", 10, minimum=0.1)
# Each webhook event is a delivery of its own (an outbox row, publishing.models.
# WebhookDelivery), sent by the deliver_webhook task after the publish, never inside it:
# a try holds its delivery this long (the task's limits stay inside it, and the POST
# inside them), and a delivery is given up on (dead, one alert) after this many tries,
# backing off 1, 2, 4 … s up to PUBLISH_RETRY_BACKOFF_MAX between them (about 1.5 h
# with the defaults). The article's status never depends on it.
PUBLISH_WEBHOOK_LEASE_SECONDS = env_number("PUBLISH_WEBHOOK_LEASE_SECONDS", 60, minimum=2)
PUBLISH_WEBHOOK_MAX_ATTEMPTS = env_int("PUBLISH_WEBHOOK_MAX_ATTEMPTS", 12, minimum=1)
# Alerts as JSON, signed the same way with their own secret (docs/operations.md).
ALERT_WEBHOOK_URL = env_str("ALERT_WEBHOOK_URL")
ALERT_WEBHOOK_SECRET = env_str("ALERT_WEBHOOK_SECRET")

# The publishing targets, in order; each is called through publishing.publishers. The
# site first: a receiver told by the webhook finds the page already there.
PUBLISH_PUBLISHERS = ["blogpublish.site.StaticSitePublisher"]
if PUBLISH_WEBHOOK_URL:
    PUBLISH_PUBLISHERS.append("blogpublish.webhooks.WebhookPublisher")

# Flower reads FLOWER_BASIC_AUTH itself; read here too, so the Flower process (and only
# it: web, worker and beat do not need it) refuses to start without strong credentials
# (config/flower.py).
FLOWER_BASIC_AUTH = env_str("FLOWER_BASIC_AUTH")
# The scrape token of GET /metrics (`Authorization: Bearer …`). Without one, /metrics
# answers only from loopback unless DEBUG (publishing/views.py).
METRICS_TOKEN = env_str("METRICS_TOKEN")

# --- The clock's jobs: the daily digest (digest/), and what each run cost (work/) ------

# When Beat sends the digest of the previous day: a crontab expression in TIME_ZONE.
DIGEST_SCHEDULE = env_str("DIGEST_SCHEDULE") or "0 7 * * *"
try:
    DIGEST_CRONTAB = parse_crontab(DIGEST_SCHEDULE)
except ValueError as exc:
    raise ImproperlyConfigured(str(exc)) from None
# Who gets it by mail (comma-separated addresses), and where it is posted (signed with
# DIGEST_WEBHOOK_SECRET, at least 32 characters). Neither set: no digest.
DIGEST_RECIPIENTS = [a.strip() for a in env_str("DIGEST_RECIPIENTS").split(",") if a.strip()]
DIGEST_WEBHOOK_URL = env_str("DIGEST_WEBHOOK_URL")
DIGEST_WEBHOOK_SECRET = env_str("DIGEST_WEBHOOK_SECRET")
# After downtime, the missed days sent (oldest first); older missed days are skipped.
DIGEST_CATCHUP_DAYS = env_int("DIGEST_CATCHUP_DAYS", 3, minimum=1)
# One try of one day's digest may hold it this long; then another run takes it over.
DIGEST_LEASE_SECONDS = env_number("DIGEST_LEASE_SECONDS", 120, minimum=2)
DIGEST_MAX_ATTEMPTS = env_int("DIGEST_MAX_ATTEMPTS", 5, minimum=1)
# A catch-up that finds more stale rows than this is a heavy job: it takes the heavy
# lease (the reconcile's), or sends only this many while the reconcile runs.
PUBLISH_CATCHUP_HEAVY_BATCH = 100

# --- Celery -------------------------------------------------------------------------
# Read by config/celery.py through config_from_object(namespace="CELERY").

CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "redis://127.0.0.1:6379/0")
# Redis or RabbitMQ (work/brokers.py says what differs; docs/operations.md, "Brokers").
try:
    BROKER_KIND = brokers.broker_kind(CELERY_BROKER_URL)
except brokers.BrokerUrlError as exc:
    raise ImproperlyConfigured(str(exc)) from None
# Redis redelivers a message that was not acked within the visibility timeout, even
# while it is still running (kombu#337, celery#5935). It must exceed every lease,
# retry countdown and ETA the system uses; the DB lease is the real guard.
BROKER_VISIBILITY_TIMEOUT = 3600
# RabbitMQ closes the channel of a consumer that holds one delivery longer than its
# consumer_timeout (30 min unless the server's rabbitmq.conf says otherwise: give its
# value here, in seconds). The same rule as the visibility timeout: every hold stays
# below it.
RABBITMQ_CONSUMER_TIMEOUT = env_number(
    "RABBITMQ_CONSUMER_TIMEOUT", brokers.RABBITMQ_DEFAULT_CONSUMER_TIMEOUT, minimum=1
)
# classic (default) or quorum (RabbitMQ only): replicated queues, and ETAs held by
# RabbitMQ's delayed-delivery exchanges instead of the workers (config/queues.py).
BROKER_QUEUE_TYPE = env_str("BROKER_QUEUE_TYPE", "classic").lower() or "classic"
CELERY_BROKER_TRANSPORT_OPTIONS = brokers.worker_transport_options(
    BROKER_KIND, visibility_timeout=BROKER_VISIBILITY_TIMEOUT
)
# One retry, quickly: a broker that is down costs a save about a second; the row stays
# pending and the catch-up sends it later.
CELERY_TASK_PUBLISH_RETRY = True
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 1,
    "interval_start": 0,
    "interval_step": 0.1,
    "interval_max": 0.1,
}
# The producer pool blocks forever by default when every connection is in use.
CELERY_BROKER_POOL_ACQUIRE_TIMEOUT = 5
# Workers keep retrying a lost broker, at start-up too (to be said since Celery 5.3),
# and for as long as it takes: the default gives up after 100 tries (~45 minutes) and
# the worker exits.
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
# Ack after the task ran, and requeue at once when a pool child dies mid-task; the DB
# attempt counter (not Celery) stops a message that kills its worker every time.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
# With acks_late, a worker holds at most `concurrency` messages it has not started.
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# After a broker reconnect the unacked messages are redelivered. The running copies are
# not cancelled (said here: Celery 6's default will be to cancel them). A cancel
# SIGTERMs the pool child mid-task, and every row of its group spent an attempt of its
# budget on the broker's outage ("never finished"; a broker flapping during a backlog
# dead-lettered them).
# The database's lease, not the message, keeps a row from being published twice: the
# redelivered copy finds its row held or published and ends after one statement, and
# the finished copy's ack on the dead channel is logged and dropped.
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
# Events let Flower see tasks: -E on the worker, and "sent" from the producer.
CELERY_WORKER_SEND_TASK_EVENTS = True
CELERY_TASK_SEND_SENT_EVENT = True
# The database records every outcome (PublishAttempt); no result backend to run.
CELERY_TASK_IGNORE_RESULT = True
CELERY_RESULT_BACKEND = None
CELERY_TASK_DEFAULT_QUEUE = "blogpublish"
# The catch-up has a queue of its own, so a backlog of publish messages cannot starve
# the safety net; a worker started without -Q consumes both.
CELERY_TASK_ROUTES, CELERY_TASK_QUEUES = celery_queues(CELERY_TASK_DEFAULT_QUEUE, BROKER_QUEUE_TYPE)
# Quorum queues: the queue type of queues Celery makes itself, and of the delayed-delivery
# queues behind native delayed delivery (Celery ≥ 5.5).
CELERY_TASK_DEFAULT_QUEUE_TYPE = BROKER_QUEUE_TYPE
# Celery Beat is the alarm clock, not the main path: every PUBLISH_CATCHUP_INTERVAL it
# sends the catch-up (publishing/beat.py). `expires` makes a
# worker drop a run that waited past the next one (Redis has no message TTL, so they are
# not deleted, just never run twice).
CELERY_BEAT_SCHEDULE = {
    "publish-catch-up": {
        "task": "publishing.tasks.publish_catch_up",
        "schedule": PUBLISH_CATCHUP_INTERVAL,
        "options": {"expires": PUBLISH_CATCHUP_INTERVAL * 0.9},
    },
    # The digest of the previous day (and missed days: digest/days.py). No
    # `expires`: a message that waited for a worker is still the day's digest, and any
    # number of them sends it once.
    "digest": {"task": "clock.tasks.digest_daily", "schedule": DIGEST_CRONTAB},
    # Finishes a day whose try failed or whose worker died; one query when there is none.
    "digest-resume": {
        "task": "clock.tasks.digest_resume",
        "schedule": PUBLISH_CATCHUP_INTERVAL,
        "options": {"expires": PUBLISH_CATCHUP_INTERVAL * 0.9},
    },
}
# Beat also checks for stuck work itself: that alarm must sound when no worker runs.
CELERY_BEAT_SCHEDULER = "publishing.beat:Scheduler"
CELERY_TIMEZONE = TIME_ZONE
CELERY_ENABLE_UTC = True
# Celery's Django fixup closes every database connection before and after each task
# unless this is set; config/celery.py closes them when Django would instead (unusable
# after an error, or older than CONN_MAX_AGE).
CELERY_DB_REUSE_MAX = 2**31
# Keep Django's LOGGING for the worker too.
CELERY_WORKER_HIJACK_ROOT_LOGGER = False

# --- Logging ------------------------------------------------------------------------

LOG_FORMAT = env_str("LOG_FORMAT", "text")
if LOG_FORMAT not in {"text", "json"}:
    raise ImproperlyConfigured(f"LOG_FORMAT={LOG_FORMAT!r}: use text or json.")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # article_id, attempt, task_id and request_id on every line of the pipeline: keys
    # of the JSON object, or `[article_id=… attempt=… task_id=…]` after a text line
    # (publishing/logcontext.py).
    "filters": {"context": {"()": "publishing.logcontext.ContextFilter"}},
    "formatters": {
        "text": {
            "()": "publishing.logcontext.TextFormatter",
            "format": "%(asctime)s %(levelname)s %(processName)s %(name)s: %(message)s",
        },
        "json": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "format": "%(asctime)s %(levelname)s %(processName)s %(name)s %(message)s",
        },
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": LOG_FORMAT,
            "filters": ["context"],
        }
    },
    "root": {"handlers": ["console"], "level": "INFO"},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
    },
}

# --- Sanity: settings that make no sense together stop start-up ----------------------

_broker_hold_limit = brokers.broker_hold_limit(
    BROKER_KIND,
    visibility_timeout=BROKER_VISIBILITY_TIMEOUT,
    consumer_timeout=RABBITMQ_CONSUMER_TIMEOUT,
)
_problems = publishing_settings_problems(
    lease=PUBLISH_LEASE_SECONDS,
    time_limit=PUBLISH_TIME_LIMIT,
    soft_time_limit=PUBLISH_SOFT_TIME_LIMIT,
    retry_backoff_max=PUBLISH_RETRY_BACKOFF_MAX,
    catchup_interval=PUBLISH_CATCHUP_INTERVAL,
    eta_horizon=2 * PUBLISH_CATCHUP_INTERVAL,  # as publishing.dispatch.eta_horizon()
    stale_after=PUBLISH_STALE_AFTER,
    stuck_after=PUBLISH_STUCK_AFTER,
    broker_hold_limit=_broker_hold_limit,
    delayed_by_broker=BROKER_QUEUE_TYPE == "quorum",
)
if PUBLISH_WEBHOOK_URL:
    _problems += webhook_delivery_problems(
        lease=PUBLISH_WEBHOOK_LEASE_SECONDS,
        webhook_timeout=PUBLISH_WEBHOOK_TIMEOUT,
        broker_hold_limit=_broker_hold_limit,
    )
_problems += digest_lease_problems(lease=DIGEST_LEASE_SECONDS, broker_hold_limit=_broker_hold_limit)
_problems += brokers.queue_type_problems(kind=BROKER_KIND, queue_type=BROKER_QUEUE_TYPE)
_problems += preview_settings_problems(
    rate_per_minute=PREVIEW_RATE_PER_MINUTE,
    burst=PREVIEW_BURST,
    max_concurrent=PREVIEW_MAX_CONCURRENT,
    time_limit=PREVIEW_TIME_LIMIT,
)
_problems += secret_key_problems(secret_key=SECRET_KEY, debug=DEBUG)
_database_problems = database_problems(
    engine=DATABASES["default"]["ENGINE"],
    name=str(DATABASES["default"]["NAME"] or ""),
    service=bool((DATABASES["default"].get("OPTIONS") or {}).get("service")),
    debug=DEBUG,
    site_root=SITE_ROOT if isinstance(SITE_ROOT, Path) else None,
)
if not _database_problems and DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    _database_problems = _create_private_sqlite_file(str(DATABASES["default"]["NAME"]))
_problems += _database_problems
_problems += allowed_hosts_problems(hosts=ALLOWED_HOSTS, debug=DEBUG)
_problems += _site_root_problems
_problems += webhook_secret_problems(
    url_name="PUBLISH_WEBHOOK_URL",
    url=PUBLISH_WEBHOOK_URL,
    secret_name="PUBLISH_WEBHOOK_SECRET",
    secret=PUBLISH_WEBHOOK_SECRET,
)
_problems += webhook_secret_problems(
    url_name="DIGEST_WEBHOOK_URL",
    url=DIGEST_WEBHOOK_URL,
    secret_name="DIGEST_WEBHOOK_SECRET",
    secret=DIGEST_WEBHOOK_SECRET,
)
_problems += mail_address_problems(name="DIGEST_RECIPIENTS", addresses=DIGEST_RECIPIENTS)
_problems += mail_address_problems(name="ADMINS", addresses=[a for _, a in ADMINS])
_problems += metrics_token_problems(METRICS_TOKEN)
# ("Blog <noreply@example.com>" is a sender too: its address is checked.)
_problems += mail_address_problems(
    name="DEFAULT_FROM_EMAIL", addresses=[DEFAULT_FROM_EMAIL], named=True
)
_problems += mail_address_problems(name="SERVER_EMAIL", addresses=[SERVER_EMAIL], named=True)
_problems += site_language_problems(SITE_LANGUAGE)
_problems += site_title_problems(SITE_TITLE)
_problems += url_problems(name="SITE_URL", url=SITE_URL)
_problems += endpoint_problems(AWS_ENDPOINT_URL)
for _name, _url in (
    ("PUBLISH_WEBHOOK_URL", PUBLISH_WEBHOOK_URL),
    ("ALERT_WEBHOOK_URL", ALERT_WEBHOOK_URL),
    ("DIGEST_WEBHOOK_URL", DIGEST_WEBHOOK_URL),
):
    _problems += url_problems(name=_name, url=_url, webhook=True)
_problems += webhook_secret_problems(
    url_name="ALERT_WEBHOOK_URL",
    url=ALERT_WEBHOOK_URL,
    secret_name="ALERT_WEBHOOK_SECRET",
    secret=ALERT_WEBHOOK_SECRET,
)
if _problems:
    raise ImproperlyConfigured(
        "blogpublish does not start; these settings are unusable or do not fit together:"
        "\n  - " + "\n  - ".join(_problems)
    )
