"""Settings that make no sense together stop start-up with a message naming them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from config.checks import (
    allowed_hosts_problems,
    database_problems,
    endpoint_problems,
    flower_basic_auth_problems,
    flower_command_line_problems,
    metrics_token_problems,
    preview_settings_problems,
    publishing_settings_problems,
    secret_key_problems,
    site_language_problems,
    site_title_problems,
    url_problems,
    webhook_delivery_problems,
    webhook_secret_problems,
)
from tests.support.processes import ROOT

STRONG_KEY = "k3y-" + "0123456789abcdefghijklmnopqrstuvwxyz-ABCDEFGHIJKLMN"

GOOD = dict(
    lease=120,
    time_limit=108,
    soft_time_limit=96,
    retry_backoff_max=600,
    catchup_interval=120,
    eta_horizon=240,
    stale_after=60,
    stuck_after=900,
    broker_hold_limit=("the broker's visibility timeout", 3600),
)


def test_the_defaults_fit_together():
    assert publishing_settings_problems(**GOOD) == []


def test_a_process_with_the_default_settings_starts():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PUBLISH_", "CELERY_"))}
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env={**env, "DJANGO_SETTINGS_MODULE": "config.settings"},
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode == 0, result.stderr


WEBHOOK_GOOD = dict(
    lease=60, webhook_timeout=10, broker_hold_limit=("the broker's visibility timeout", 3600)
)


def test_the_webhook_delivery_defaults_fit_together():
    assert webhook_delivery_problems(**WEBHOOK_GOOD) == []


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        # a webhook call that the delivery's soft time limit would cut short
        ({"webhook_timeout": 45}, "PUBLISH_WEBHOOK_TIMEOUT (45)"),
        ({"lease": 10}, "PUBLISH_WEBHOOK_TIMEOUT (10)"),
        # a lease the broker would redeliver before it ends
        ({"lease": 4000}, "PUBLISH_WEBHOOK_LEASE_SECONDS = 4000"),
    ],
)
def test_each_bad_webhook_delivery_setting_is_named(changes, named):
    problems = webhook_delivery_problems(**(WEBHOOK_GOOD | changes))

    assert any(named in p for p in problems), problems


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        # the task may outlive its lease
        ({"time_limit": 130}, "PUBLISH_LEASE_SECONDS (120)"),
        # waits the broker would redeliver before they end
        ({"retry_backoff_max": 3600}, "PUBLISH_RETRY_BACKOFF_MAX"),
        ({"eta_horizon": 4000}, "ETA horizon"),
        ({"lease": 4000, "time_limit": 3000, "soft_time_limit": 2000}, "PUBLISH_LEASE_SECONDS"),
        # a safety net that never runs, or runs on everything at once
        ({"catchup_interval": 0}, "PUBLISH_CATCHUP_INTERVAL must be positive"),
        ({"stale_after": 0}, "PUBLISH_STALE_AFTER must be positive"),
        # an alarm that sounds before the catch-up had its chance
        ({"stuck_after": 100}, "PUBLISH_STUCK_AFTER (100)"),
    ],
)
def test_each_bad_combination_is_named(changes, named):
    problems = publishing_settings_problems(**(GOOD | changes))

    assert any(named in p for p in problems), problems


@pytest.mark.parametrize(
    ("env", "named"),
    [
        # DEBUG is off unless set, so a start without a strong key is refused
        ({"DEBUG": "", "SECRET_KEY": ""}, "SECRET_KEY must be at least 50 characters"),
        ({"DEBUG": "", "SECRET_KEY": "short"}, "SECRET_KEY must be at least 50 characters"),
        ({"DEBUG": "0", "SECRET_KEY": "x" * 60}, "repeats too few characters"),
        # a webhook needs a secret of 32 characters, DEBUG or not
        (
            {"DEBUG": "1", "PUBLISH_WEBHOOK_URL": "https://hooks.example.com/blog"},
            "PUBLISH_WEBHOOK_SECRET must be at least 32",
        ),
        (
            {"ALERT_WEBHOOK_URL": "https://hooks.example.com/a", "ALERT_WEBHOOK_SECRET": "s" * 31},
            "ALERT_WEBHOOK_SECRET must be at least 32 characters (it has 31)",
        ),
        ({"SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto: https"}, "SECURE_PROXY_SSL_HEADER"),
        ({"PUBLISH_CATCHUP_INTERVAL": "2000"}, "ETA horizon"),
        ({"PUBLISH_STUCK_AFTER": "30"}, "PUBLISH_STUCK_AFTER"),
        ({"PUBLISH_MAX_ATTEMPTS": "many"}, "PUBLISH_MAX_ATTEMPTS='many' is not a number"),
        # "keep forever" as inf, or nan: refused at start, not by every catch-up after
        ({"STORY_TRASH_DAYS": "inf"}, "STORY_TRASH_DAYS='inf' is not a finite number"),
        ({"PUBLISH_STUCK_AFTER": "nan"}, "PUBLISH_STUCK_AFTER='nan' is not a finite number"),
        ({"STORY_TRASH_DAYS": "1e9"}, "STORY_TRASH_DAYS=1e9 is above its maximum of 365,000"),
        ({"STORY_REVISIONS_KEEP_DAYS": "800000"}, "KEEP_DAYS=800000 is above its maximum of"),
        ({"EMAIL_PORT": "99999"}, "EMAIL_PORT=99999 is above its maximum of 65,535"),
        # a deferred pass's countdown past the visibility timeout: sent twice (a review's)
        ({"PUBLISH_REFRESH_INTERVAL": "7200"}, "INTERVAL=7200 is above its maximum of 600"),
        ({"PUBLISH_REFRESH_BACKLOG_INTERVAL": "4000"}, "INTERVAL=4000 is above its maximum"),
        ({"METRICS_TOKEN": "x"}, "METRICS_TOKEN must be at least 32 characters (it has 1)"),
        # started, then refused every scrape: the header is read as latin-1 (a review's)
        ({"METRICS_TOKEN": "pässword-" + "t" * 32}, "METRICS_TOKEN must be printable ASCII"),
        # where mail goes and comes from (a review's finding: accepted, failing later)
        ({"ADMINS": "ops@example.com, not-an-address"}, "ADMINS: 'not-an-address' is not"),
        ({"DEFAULT_FROM_EMAIL": "nope"}, "DEFAULT_FROM_EMAIL: 'nope' is not a mail address"),
        # a folder that cannot be one: refused at start, not by every publish after
        ({"SITE_ROOT": "/proc/blogpublish-site"}, "SITE_ROOT='/proc/blogpublish-site' cannot be"),
        ({"SITE_ROOT": "/etc/passwd"}, "SITE_ROOT='/etc/passwd' is a file, not a folder"),
        ({"LOG_FORMAT": "xml"}, "LOG_FORMAT"),
        ({"AWS_S3_ADDRESSING_STYLE": "bucket"}, "AWS_S3_ADDRESSING_STYLE='bucket'"),
        # no feed could carry it: every article left out of it (a review's finding)
        ({"SITE_TITLE": "My\x01Blog"}, "SITE_TITLE='My\\x01Blog' must be one line"),
        ({"SITE_URL": "https://u:secret@blog.example.com"}, "SITE_URL has a user or password"),
        # every request refused, silently
        ({"DEBUG": "0", "ALLOWED_HOSTS": ","}, "ALLOWED_HOSTS names no host"),
        ({"DEBUG": "0", "ALLOWED_HOSTS": " , "}, "ALLOWED_HOSTS names no host"),
        # a database that cannot be used: a traceback in every command, a failed
        # migrate, or a database per process or per working directory (a review's)
        (
            {"DATABASE_URL": "sqlite:////proc/nope/db.sqlite3"},
            "SQLite file '/proc/nope/db.sqlite3' cannot be made",
        ),
        (
            {"DATABASE_URL": "sqlite:////etc/passwd/db.sqlite3"},
            "SQLite file '/etc/passwd/db.sqlite3' cannot be made",
        ),
        ({"DATABASE_URL": "sqlite:////tmp"}, "SQLite file '/tmp' is a folder, not a file"),
        ({"DATABASE_URL": "mysql://u@h/db"}, "DATABASE_URL names a database blogpublish does"),
        ({"DATABASE_URL": "sqlite://"}, "DATABASE_URL is an in-memory SQLite database"),
        ({"DATABASE_URL": "sqlite://:memory:"}, "DATABASE_URL is an in-memory SQLite database"),
        ({"DATABASE_URL": "postgres://u@127.0.0.1:5432/"}, "DATABASE_URL names no database"),
        # without a scheme every publish failed until dead, the view a 500; a user and
        # password went into every error (a review's finding)
        ({"AWS_ENDPOINT_URL": "minio:9000"}, "AWS_ENDPOINT_URL must be an absolute"),
        ({"AWS_ENDPOINT_URL": "http://k:hunter2@minio:9000"}, "AWS_ENDPOINT_URL must be"),
        # the URL not repeated: it may hold a password (a review's finding)
        ({"DATABASE_URL": "postgres://u:hunter2@h:99999/d"}, "DATABASE_URL is not usable: "),
        ({"DATABASE_URL": "sqlite:///blog.db"}, "SQLite file 'blog.db' is a relative path"),
    ],
)
def test_a_process_with_bad_settings_does_not_start(env, named):
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env={**env_without("DEBUG", "SECRET_KEY"), "DJANGO_SETTINGS_MODULE": "config.settings"}
        | {"SECRET_KEY": STRONG_KEY}
        | env,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode != 0
    assert named in result.stderr
    assert "hunter2" not in result.stderr


def env_without(*names: str) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in names}


def printed_settings(names: str, *, cwd: Path = ROOT, **env: str) -> subprocess.CompletedProcess:
    """A process that imports the production settings (DEBUG unset, a strong key, `env`)
    and prints the settings `names` (comma-separated)."""
    shown = ", ".join(f"settings.{name}" for name in names.split(","))
    code = f"from django.conf import settings; print({shown})"
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env={
            **env_without("DEBUG"),
            "PYTHONPATH": str(ROOT),
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "SECRET_KEY": STRONG_KEY,
            **env,
        },
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_debug_is_off_unless_set():
    result = printed_settings("DEBUG,SESSION_COOKIE_SECURE")

    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "True"]


def test_a_relative_static_root_is_the_project_folders_whatever_the_working_folder(tmp_path):
    """collectstatic and the web process (WhiteNoise) must use one folder: a relative
    STATIC_ROOT was each process's working folder's (a review's finding), and the
    previous release's .env.example gave one, `var/static`."""
    result = printed_settings("STATIC_ROOT", cwd=tmp_path, STATIC_ROOT="var/static")

    assert result.stdout.strip() == str(ROOT / "var" / "static"), result.stderr[-2000:]


def test_allowed_hosts__spaces_around_a_name_and_empty_entries_are_dropped():
    # " testserver" matched no request's host: a 400 for it (a review's finding)
    result = printed_settings("ALLOWED_HOSTS", ALLOWED_HOSTS="example.com, testserver,, ")

    assert result.stdout.strip() == "['example.com', 'testserver']", result.stderr[-2000:]


def test_allowed_hosts__may_be_empty_in_debug():
    # Django lets localhost in with an empty list in DEBUG
    assert allowed_hosts_problems(hosts=[], debug=True) == []
    assert allowed_hosts_problems(hosts=["blog.example.com"], debug=False) == []


def test_a_sqlite_file_inside_site_root_stops_start_up_and_is_not_made(tmp_path):
    # served as the site: a reviewer downloaded /db.sqlite3, password hashes and all
    site = tmp_path / "site"
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env={
            **env_without("DEBUG"),
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "SECRET_KEY": STRONG_KEY,
            "SITE_ROOT": str(site),
            "DATABASE_URL": f"sqlite:///{site / 'sub' / 'db.sqlite3'}",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode != 0
    assert "db.sqlite3' is inside SITE_ROOT" in result.stderr, result.stderr[-2000:]
    assert not (site / "sub").exists()


def test_an_in_memory_database_starts_in_debug_for_tools():
    # make typecheck reads the settings with DEBUG=1 DATABASE_URL=sqlite://:memory:
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env={
            **env_without("SECRET_KEY"),
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DEBUG": "1",
            "DATABASE_URL": "sqlite://:memory:",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode == 0, result.stderr[-2000:]


@pytest.mark.parametrize("url", [None, "", "http://minio:9000", "https://r2.example.com/"])
def test_an_object_storage_endpoint_that_is_an_address_is_accepted(url):
    assert endpoint_problems(url) == []


@pytest.mark.parametrize("url", ["http://[::1", "http://minio:9000?x=1", "http://mi nio:9000"])
def test_an_object_storage_endpoint_that_is_no_address_is_refused(url):
    [problem] = endpoint_problems(url)
    assert problem.startswith("AWS_ENDPOINT_URL must be an absolute")


def test_a_postgresql_service_may_name_the_database():
    """`?service=` names a pg_service.conf entry, which may give the database: Django
    connects without NAME then; it was refused as "names no database" (a review's)."""
    assert (
        database_problems(
            engine="django.db.backends.postgresql",
            name="",
            debug=False,
            site_root=None,
            service=True,
        )
        == []
    )
    assert database_problems(
        engine="django.db.backends.postgresql", name="", debug=False, site_root=None
    ) == ["DATABASE_URL names no database: postgres://user:password@host:5432/NAME."]


def test_debug_on_starts_without_a_secret_key():
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env={
            **env_without("SECRET_KEY"),
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DEBUG": "1",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(
    ("secret_key", "debug", "problem"),
    [
        ("", True, None),  # local: config/settings.py supplies an insecure local key
        ("short", True, None),
        ("", False, "it is not set"),
        (STRONG_KEY[:49], False, "it has 49"),
        (STRONG_KEY[:50], False, None),
        ("django-insecure-" + STRONG_KEY, False, "django-insecure"),
        ("abcd" * 13, False, "repeats too few"),  # 4 distinct characters
        (STRONG_KEY, False, None),
    ],
)
def test_secret_key_problems(secret_key, debug, problem):
    problems = secret_key_problems(secret_key=secret_key, debug=debug)

    if problem is None:
        assert problems == []
    else:
        assert len(problems) == 1 and problem in problems[0], problems


@pytest.mark.parametrize(
    ("url", "secret", "problem"),
    [
        ("", "", None),  # no webhook, no secret needed
        ("https://hooks.example.com/blog", "", "it is not set"),
        ("https://hooks.example.com/blog", "s" * 31, "it has 31"),
        ("https://hooks.example.com/blog", "s" * 32, None),
    ],
)
def test_webhook_secret_problems(url, secret, problem):
    problems = webhook_secret_problems(
        url_name="PUBLISH_WEBHOOK_URL", url=url, secret_name="PUBLISH_WEBHOOK_SECRET", secret=secret
    )

    if problem is None:
        assert problems == []
    else:
        assert len(problems) == 1 and "PUBLISH_WEBHOOK_SECRET" in problems[0]
        assert problem in problems[0]


@pytest.mark.parametrize(
    ("token", "problem"),
    [
        ("", None),  # unset: /metrics answers loopback only
        ("t" * 31, "at least 32 characters (it has 31)"),
        ("t" * 32, None),
        ("!#$%&'()*+,-./:;<=>?@[]^_`{|}~" + "t" * 2, None),  # any printable ASCII
        # the scraper's header is read as latin-1: never equal (a review's finding)
        ("pässword-" + "t" * 32, "printable ASCII, with no space at either end (it has a non-"),
        ("\u00a0" + "t" * 32, "it has a non-ASCII character"),  # a no-break space
        # A passphrase's inner spaces are sent and matched (the first mend refused them).
        ("correct horse battery staple orbit", None),
        ("t" * 32 + " ", "it has a space at its start or end"),  # dropped from a header
        ("t" * 32 + "\n", "it has a control character"),
        ("\tt" + "t" * 32, "it has a control character"),
    ],
)
def test_metrics_token_problems(token, problem):
    problems = metrics_token_problems(token)

    if problem is None:
        assert problems == []
    else:
        assert len(problems) == 1 and "METRICS_TOKEN" in problems[0], problems
        assert problem in problems[0]
        assert token.strip() not in problems[0]


@pytest.mark.parametrize(
    ("basic_auth", "problem"),
    [
        # what .env.example and compose passed: Flower let `Authorization: Basic =` in
        ("", "FLOWER_BASIC_AUTH is not set"),
        (":", "entry 1 must be user:password"),
        ("flower", "entry 1 must be user:password"),
        ("flower:", "entry 1 must be user:password"),
        (":twelve-chars", "entry 1 must be user:password"),
        ("flower:eleven-char", "at least 12 characters (it has 11)"),
        ("flower:" + " " * 12, "at least 12 characters (it has 0)"),  # spaces are no password
        ("flower:12-characters,other:", "entry 2 must be user:password"),
        ("flower:12-characters", None),
        ("flower:pass:with:colons", None),  # Flower compares the whole "user:password"
        ("one:12-characters,two:also-12-chars", None),
    ],
)
def test_flower_basic_auth_problems(basic_auth, problem):
    problems = flower_basic_auth_problems(basic_auth)

    if problem is None:
        assert problems == []
    else:
        assert any(problem in p for p in problems), problems


def test_flower_command_line_problems__names_the_spellings_found():
    # config.flower finds them by parsing as Flower does (tests/security/test_flower_auth.py)
    assert flower_command_line_problems([]) == []
    (problem,) = flower_command_line_problems(["-basic_auth=", "--basic-auth=a:b"])
    assert "-basic_auth=, --basic-auth=a:b on the command line is not accepted" in problem


@pytest.mark.parametrize(
    ("values", "problem"),
    [
        ({}, None),  # the defaults
        ({"rate_per_minute": 0}, "PREVIEW_RATE_PER_MINUTE must be positive"),
        ({"burst": 0}, "PREVIEW_BURST must be positive"),
        ({"max_concurrent": 0}, "PREVIEW_MAX_CONCURRENT must be positive"),
        ({"time_limit": 0}, "PREVIEW_TIME_LIMIT must be above 0"),
        ({"time_limit": 30}, "at most 10 seconds"),  # gunicorn would kill the worker first
    ],
)
def test_preview_settings_problems(values, problem):
    settings = {"rate_per_minute": 60, "burst": 10, "max_concurrent": 1, "time_limit": 1.0}
    problems = preview_settings_problems(**(settings | values))

    if problem is None:
        assert problems == []
    else:
        assert len(problems) == 1 and problem in problems[0], problems


@pytest.mark.parametrize("language", ["en", "pt-BR", "zh-Hans"])
def test_site_language__a_tag_is_accepted(language):
    assert site_language_problems(language) == []


@pytest.mark.parametrize("language", ["", "English (UK)", "en_GB"])
def test_site_language__other_text_stops_start_up(language):
    [problem] = site_language_problems(language)
    assert "SITE_LANGUAGE must be a language tag" in problem


@pytest.mark.parametrize(
    "title",
    [
        "blogpublish",
        "Le blog d’Anaïs — notes",
        "博客",
        "می\u200cنویسم",  # ZWNJ: Persian (refused with the other invisibles at first)
        "👩\u200d💻 Notes",  # ZWJ: one emoji
    ],
)
def test_site_title__text_is_accepted(title):
    assert site_title_problems(title) == []


@pytest.mark.parametrize(
    "title",
    [
        "My\x01Blog",  # the feed left every article out (a review's finding)
        "My\nBlog",
        "My\tBlog",
        "My\x7fBlog",  # DEL
        "My\x85Blog",  # NEL, a C1 control
        "My\u202eBlog",  # reverses what follows
        "My\udcffBlog",  # a byte not UTF-8 in the environment
    ],
)
def test_site_title__a_control_character_stops_start_up(title):
    [problem] = site_title_problems(title)
    assert problem.startswith("SITE_TITLE=")
    assert "control character" in problem, problem


@pytest.mark.parametrize(
    "url", ["https://blog.example.com", "http://127.0.0.1:8000", "https://example.com/blog"]
)
def test_site_url__an_absolute_address_is_accepted(url):
    assert url_problems(name="SITE_URL", url=url) == []


@pytest.mark.parametrize(
    "url",
    [
        "blog.example.com",  # relative links, "://blog.example.com/sitemap.xml" (a review's)
        "https://exa mple.com",
        "ftp://blog.example.com",
        "https://",
        "https://blog.example.com/?utm=1",
        "https://blog.example.com/#top",
        "http://[::1",
        "http://blog.example.com:99999",
        "",
    ],
)
def test_site_url__anything_else_stops_start_up(url):
    [problem] = url_problems(name="SITE_URL", url=url)
    assert problem.startswith("SITE_URL=") and "absolute http(s) address" in problem


@pytest.mark.parametrize(
    "url",
    [
        "https://user:secret@blog.example.com",  # published in every feed (a review's)
        "https://user@blog.example.com/blog",
        "https://:secret@blog.example.com",
    ],
)
def test_site_url__a_user_or_password_stops_start_up_without_repeating_it(url):
    [problem] = url_problems(name="SITE_URL", url=url)
    assert problem.startswith("SITE_URL has a user or password") and "secret" not in problem


def test_webhook_url__may_carry_basic_auth():
    # a POST target's credentials, sent as basic auth and never published
    url = "https://hook:secret@hooks.example.com/in"
    assert url_problems(name="ALERT_WEBHOOK_URL", url=url, webhook=True) == []


@pytest.mark.parametrize(
    "url",
    [
        "https://x//evil.example",  # links "//evil.example/…": another host (a review's)
        "https://example.com/blog//x",
        "https://example.com/./blog",
        "https://example.com/blog/..",
        "https://example.com/blog/%2e%2E",  # browsers read it as ".."
        "https://example.com/%2E/blog",
        "https://example.com/a%2F%2Fevil.example",  # an encoded "/"
        "https://example.com/a%5Cb",  # "\\", which browsers read as "/"
        "https://example.com/admin",  # the site hidden behind the app's own addresses
        "https://example.com/API/blog",
        "https://example.com/preview",
        "https://example.com/healthz",
    ],
)
def test_site_url__a_path_that_names_another_address_stops_start_up(url):
    [problem] = url_problems(name="SITE_URL", url=url)
    assert problem.startswith("SITE_URL's path")


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/%FF",  # not UTF-8: the view and the links disagreed (a review's)
        "https://example.com/a%0Ab",  # no request's path matches a newline
        "https://example.com/a%00b",
        "https://example.com/a%7Fb",
        "https://example.com/a%C2%85b",  # NEL, a C1 control (a review's)
        "https://example.com/a%E2%80%AEb",  # U+202E, which reverses what follows
    ],
)
def test_site_url__a_path_not_utf8_or_with_a_control_character_stops_start_up(url):
    [problem] = url_problems(name="SITE_URL", url=url)
    assert problem.startswith("SITE_URL's path")


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/",
        "https://example.com/blog/",
        "https://example.com/a/b",
        "https://example.com/blög",
        "https://example.com/%E5%8D%9A%E5%AE%A2",  # 博客, percent-encoded
        "https://example.com/a%20b",
    ],
)
def test_site_url__a_path_of_its_own_is_accepted(url):
    assert url_problems(name="SITE_URL", url=url) == []


def test_webhook_url__may_be_empty_or_carry_a_query_never_lack_a_host():
    assert url_problems(name="PUBLISH_WEBHOOK_URL", url="", webhook=True) == []
    ok = "https://hooks.example.com/in?token=abc"
    assert url_problems(name="PUBLISH_WEBHOOK_URL", url=ok, webhook=True) == []
    [problem] = url_problems(name="PUBLISH_WEBHOOK_URL", url="hooks.example.com/in", webhook=True)
    assert problem.startswith("PUBLISH_WEBHOOK_URL=")


def test_a_sender_with_a_display_name_is_a_mail_address():
    from config.checks import mail_address_problems

    assert (
        mail_address_problems(
            name="DEFAULT_FROM_EMAIL", addresses=["Blog <noreply@example.com>"], named=True
        )
        == []
    )
    assert mail_address_problems(name="ADMINS", addresses=["Blog <noreply@example.com>"])


def test_a_postgresql_server_that_never_answers_fails_the_connection_in_time():
    """A listening socket that never accepts stands for a server that does not answer
    (a host gone, packets dropped): the connection fails after DB_CONNECT_TIMEOUT
    instead of waiting as long as the kernel does (libpq's default is no limit)."""
    import socket

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        port = silent.getsockname()[1]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PUBLISH_", "DB_"))}
        code = (
            "from django.db import connection\n"
            "try:\n    connection.ensure_connection()\n"
            "except Exception as exc:\n    print(type(exc).__name__, exc)\n"
        )
        result = subprocess.run(
            [sys.executable, "manage.py", "shell", "-c", code],
            cwd=ROOT,
            env={
                **env,
                "DJANGO_SETTINGS_MODULE": "config.settings",
                "DATABASE_URL": f"postgres://nobody@127.0.0.1:{port}/none",
                "DB_CONNECT_TIMEOUT": "2",
            },
            capture_output=True,
            text=True,
            timeout=60,  # the deadline: without the setting it never ends
        )

    assert "OperationalError" in result.stdout and "timeout" in result.stdout, result


def test_a_connect_timeout_in_the_url_wins():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PUBLISH_", "DB_"))}
    code = "from django.conf import settings; print(settings.DATABASES['default']['OPTIONS'])"
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=ROOT,
        env={
            **env,
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DATABASE_URL": "postgres://nobody@127.0.0.1:1/none?connect_timeout=9",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert "'connect_timeout': 9" in result.stdout or "'connect_timeout': '9'" in result.stdout, (
        result
    )


@pytest.mark.parametrize("given", ["0", "abc", "-1"])
def test_a_connect_timeout_in_the_url_that_is_no_limit_stops_start_up(given):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PUBLISH_", "DB_"))}
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env={
            **env,
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DATABASE_URL": f"postgres://nobody@127.0.0.1:1/none?connect_timeout={given}",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode != 0
    assert f"connect_timeout={given!r}" in result.stderr, result.stderr[-2000:]


@pytest.mark.parametrize(
    ("program", "status"),
    [
        (["manage.py", "check"], 1),
        (["-m", "celery", "-A", "config", "worker", "--concurrency", "1"], 1),
        (["-m", "celery", "-A", "config", "beat"], 1),
        # gunicorn's "worker failed to boot": it halts; on another status it started the
        # worker again for ever (a review's finding).
        (["-c", "import config.wsgi"], 3),
    ],
)
def test_a_bad_setting_stops_each_program_with_its_message_not_a_traceback(program, status):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PUBLISH_", "CELERY_"))}
    result = subprocess.run(
        [sys.executable, *program],
        cwd=ROOT,
        env={**env, "DJANGO_SETTINGS_MODULE": "config.settings", "PUBLISH_LEASE_SECONDS": "abc"},
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode == status
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert result.stderr.strip().endswith("PUBLISH_LEASE_SECONDS='abc' is not a number.")


def test_gunicorn_with_a_bad_setting_stops_saying_which():
    import signal

    env = {k: v for k, v in os.environ.items() if not k.startswith(("PUBLISH_", "CELERY_"))}
    command = ["gunicorn", "config.wsgi", "--workers", "2", "--bind", "127.0.0.1:0"]
    gunicorn = subprocess.Popen(
        [sys.executable, "-m", *command],
        cwd=ROOT,
        env={**env, "DJANGO_SETTINGS_MODULE": "config.settings", "PUBLISH_LEASE_SECONDS": "abc"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its workers too are stopped below, whatever happens
    )
    try:
        _out, err = gunicorn.communicate(timeout=60)  # the deadline: it booted for ever
    finally:
        if gunicorn.poll() is None:
            os.killpg(gunicorn.pid, signal.SIGKILL)
            gunicorn.communicate()

    assert gunicorn.returncode != 0
    assert "web: PUBLISH_LEASE_SECONDS='abc' is not a number." in err
    assert "Worker failed to boot" in err


def test_manage_py_loads_the_settings_its_options_name(tmp_path):
    (tmp_path / "altsettings.py").write_text('from config.settings import *\nMARKER = "alt"\n')
    code = "from django.conf import settings; print(settings.SETTINGS_MODULE, settings.MARKER)"
    options = ["--pythonpath", str(tmp_path), "--settings", "altsettings"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PUBLISH_", "CELERY_"))}
    result = subprocess.run(
        [*(sys.executable, "manage.py", "shell", "-c", code), *options],
        cwd=ROOT,
        env={**env, "DJANGO_SETTINGS_MODULE": "config.settings", "DEBUG": "1"},
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert "altsettings alt" in result.stdout, result.stderr[-3000:]
