"""Settings that make no sense together, or leave a door open, stop start-up.

Pure functions, so they are tested without starting anything (but `site_folder_problems`,
which makes the site's folder). config/settings.py calls
those that concern every process and raises ImproperlyConfigured with every problem,
each naming its settings; config/flower.py calls Flower's in the Flower process.
"""

from __future__ import annotations

from pathlib import Path


def publishing_settings_problems(
    *,
    lease: float,
    time_limit: float,
    soft_time_limit: float,
    retry_backoff_max: float,
    catchup_interval: float,
    eta_horizon: float,
    stale_after: float,
    stuck_after: float,
    broker_hold_limit: tuple[str, float],
    delayed_by_broker: bool = False,
) -> list[str]:
    """`broker_hold_limit`: (its name, seconds), how long a worker may hold a message
    unacked before the broker redelivers it (Redis' visibility timeout) or drops the
    worker's channel (RabbitMQ's consumer_timeout); work/brokers.py. With
    `delayed_by_broker` (RabbitMQ quorum queues) ETAs and retry countdowns wait in the
    broker, so only the lease must stay below it."""
    problems = []
    limit_name, limit = broker_hold_limit
    if catchup_interval <= 0:
        problems.append(f"PUBLISH_CATCHUP_INTERVAL must be positive (it is {catchup_interval}).")
    if stale_after <= 0:
        problems.append(f"PUBLISH_STALE_AFTER must be positive (it is {stale_after}).")
    if not soft_time_limit < time_limit < lease:
        problems.append(
            f"PUBLISH_LEASE_SECONDS ({lease}) must exceed the task's hard time limit "
            f"({time_limit}), which must exceed its soft limit ({soft_time_limit}): a task "
            "must be stopped before another executor may take its row over."
        )
    why = "longer waits are redelivered while still waiting (kombu#337, celery#5935)"
    holds = [("PUBLISH_LEASE_SECONDS", lease)]
    if not delayed_by_broker:
        holds += [
            ("PUBLISH_RETRY_BACKOFF_MAX (the longest retry countdown)", retry_backoff_max),
            ("The ETA horizon (2 × PUBLISH_CATCHUP_INTERVAL)", eta_horizon),
        ]
    for name, value in holds:
        if value >= limit:
            problems.append(f"{name} = {value}s must stay below {limit_name} ({limit}s): {why}.")
    if catchup_interval > 0 and stale_after > 0 and stuck_after <= stale_after + catchup_interval:
        problems.append(
            f"PUBLISH_STUCK_AFTER ({stuck_after}) must exceed PUBLISH_STALE_AFTER + "
            f"PUBLISH_CATCHUP_INTERVAL ({stale_after + catchup_interval}): the catch-up needs "
            "that long to resend lost work before the pipeline counts as stuck."
        )
    return problems


def webhook_delivery_problems(
    *, lease: float, webhook_timeout: float, broker_hold_limit: tuple[str, float]
) -> list[str]:
    """A webhook delivery's try (publishing.tasks.deliver_webhook) runs under time limits
    of 80 % and 90 % of its lease, PUBLISH_WEBHOOK_LEASE_SECONDS; its POST connects for up
    to 3.05 s, then waits PUBLISH_WEBHOOK_TIMEOUT, and must end inside the soft limit."""
    problems = []
    soft_time_limit = lease * 0.8
    if webhook_timeout + 3.05 >= soft_time_limit:
        problems.append(
            f"PUBLISH_WEBHOOK_TIMEOUT ({webhook_timeout}) plus 3 s to connect must fit in the "
            f"delivery's soft time limit ({soft_time_limit:.1f}s, 80 % of "
            "PUBLISH_WEBHOOK_LEASE_SECONDS): a slow receiver must end as a retry, not as a "
            "killed task."
        )
    limit_name, limit = broker_hold_limit
    if lease >= limit:
        problems.append(
            f"PUBLISH_WEBHOOK_LEASE_SECONDS = {lease}s must stay below {limit_name} "
            f"({limit}s): longer waits are redelivered while still waiting (kombu#337)."
        )
    return problems


# --- The preview's guards ----------------------------------------------------------------

# A request's bound, well under a client's patience and gunicorn's 30 s --timeout (which
# kills a sync worker busy that long; a threaded one, as the Dockerfile runs, only when
# its main loop stalls: a render holding the GIL could).
PREVIEW_TIME_LIMIT_MAX = 10.0


def preview_settings_problems(
    *, rate_per_minute: float, burst: int, max_concurrent: int, time_limit: float
) -> list[str]:
    """The preview's guards (blogpublish.desk.limits) must let some previews through, and
    stop a render well before a web worker would be killed for it."""
    problems = []
    for name, value in (
        ("PREVIEW_RATE_PER_MINUTE", rate_per_minute),
        ("PREVIEW_BURST", burst),
        ("PREVIEW_MAX_CONCURRENT", max_concurrent),
    ):
        if value <= 0:
            problems.append(f"{name} must be positive (it is {value:g}): no preview would run.")
    if not 0 < time_limit <= PREVIEW_TIME_LIMIT_MAX:
        problems.append(
            f"PREVIEW_TIME_LIMIT must be above 0 and at most {PREVIEW_TIME_LIMIT_MAX:g} "
            f"seconds (it is {time_limit:g}): a render holds a web worker that long."
        )
    return problems


# --- Secrets that must be strong: refused, never merely warned about ------------------

SECRET_KEY_MIN_LENGTH = 50  # what `manage.py check --deploy` asks for (security.W009)
WEBHOOK_SECRET_MIN_LENGTH = 32
FLOWER_PASSWORD_MIN_LENGTH = 12


def secret_key_problems(*, secret_key: str, debug: bool) -> list[str]:
    """Outside DEBUG, SECRET_KEY signs sessions and password resets: a short or missing
    one is refused. In DEBUG a local key may be anything."""
    if debug:
        return []
    generate = "python -c 'import secrets; print(secrets.token_urlsafe(50))'"
    if len(secret_key) < SECRET_KEY_MIN_LENGTH:
        has = f"it has {len(secret_key)}" if secret_key else "it is not set"
        why = f"must be at least {SECRET_KEY_MIN_LENGTH} characters when DEBUG is off ({has})"
    elif secret_key.startswith("django-insecure-") or len(set(secret_key)) < 5:
        why = "looks generated for local use (django-insecure-…) or repeats too few characters"
    else:
        return []
    return [f"SECRET_KEY {why}. Generate one: {generate}"]


def webhook_secret_problems(*, url_name: str, url: str, secret_name: str, secret: str) -> list[str]:
    """A webhook URL needs a secret to sign with; a guessable one would let anyone forge
    our requests. Required with the URL, in DEBUG too: a local run signs like production."""
    if not url or len(secret) >= WEBHOOK_SECRET_MIN_LENGTH:
        return []
    has = f"it has {len(secret)}" if secret else "it is not set"
    return [
        f"{url_name} is set, so {secret_name} must be at least {WEBHOOK_SECRET_MIN_LENGTH} "
        f"characters ({has}): it signs every request (docs/site.md, “The webhook”)."
    ]


def metrics_token_problems(token: str) -> list[str]:
    """METRICS_TOKEN, when set, as long as the other secrets: a short one is guessed (a
    review's finding: `x` was taken). Unset, /metrics answers loopback only. And one
    that a scraper can send: printable ASCII, no space at either end (`header_token_problems`)."""
    if not token:
        return []
    problems = header_token_problems("METRICS_TOKEN", token)
    if len(token) < WEBHOOK_SECRET_MIN_LENGTH:
        problems.append(
            f"METRICS_TOKEN must be at least {WEBHOOK_SECRET_MIN_LENGTH} characters (it has "
            f"{len(token)}), or unset (then /metrics answers from loopback only)."
        )
    return problems


def header_token_problems(name: str, token: str) -> list[str]:
    """A secret sent in an HTTP header as it is (`Authorization: Bearer <token>`): one
    outside printable ASCII, or with a space at either end, never matches. The web
    server reads a header's bytes as latin-1 (PEP 3333), so a non-ASCII token started
    fine and refused every scrape (a review's finding); a control character is refused
    on the way, and the spaces around a header's value are dropped. A space inside is
    sent and matched (a passphrase: the review of the first mend found it refused).
    Which character is not said: it is part of a secret."""
    if all(" " <= char <= "~" for char in token) and token == token.strip():
        return []
    if not token.isascii():
        kind = "a non-ASCII character"
    elif any(not " " <= char <= "~" for char in token):
        kind = "a control character"
    else:
        kind = "a space at its start or end"
    return [
        f"{name} must be printable ASCII, with no space at either end (it has {kind}): "
        "it is sent in an HTTP header, where no other value would ever match."
    ]


def flower_basic_auth_problems(basic_auth: str | list[str]) -> list[str]:
    """Flower's basic_auth as Flower runs with it: `user:password` entries (a list, as
    config/flower.py parses Flower's options, or FLOWER_BASIC_AUTH's comma-separated
    string). Flower compares the decoded `Authorization: Basic` value with each entry,
    so an empty entry lets `Basic =` in, and no entry at all leaves the UI and the task
    API open to anyone who reaches the port."""
    entries = basic_auth.split(",") if isinstance(basic_auth, str) else list(basic_auth)
    if not any(entries):
        return [
            "FLOWER_BASIC_AUTH is not set (nor basic_auth in Flower's config file): Flower "
            "would be open to anyone. Set it to user:password with a password of at least "
            f"{FLOWER_PASSWORD_MIN_LENGTH} characters."
        ]
    problems = []
    for number, entry in enumerate(entries, start=1):
        user, colon, password = entry.partition(":")
        where = f"FLOWER_BASIC_AUTH entry {number}"
        if not (colon and user.strip() and password):
            problems.append(f"{where} must be user:password, with both parts non-empty.")
        elif len(password.strip()) < FLOWER_PASSWORD_MIN_LENGTH:
            # Spaces count for nothing: twelve of them are no password (the issue 19 review).
            problems.append(
                f"{where}: the password of {user!r} must be at least "
                f"{FLOWER_PASSWORD_MIN_LENGTH} characters (it has {len(password.strip())}), "
                "not counting spaces at its ends."
            )
    return problems


def flower_command_line_problems(spellings: list[str]) -> list[str]:
    """`spellings`: the arguments that set basic_auth on Flower's command line, found by
    parsing it as Flower does (config/flower.py). Credentials there would be readable by
    every local user in `ps`; FLOWER_BASIC_AUTH (or a config file) is the place."""
    if not spellings:
        return []
    return [
        f"Flower's {', '.join(spellings)} on the command line is not accepted: set "
        "FLOWER_BASIC_AUTH in the environment, where start-up checks it."
    ]


def mail_address_problems(*, name: str, addresses: list[str], named: bool = False) -> list[str]:
    """Each of `addresses` must be a mail address (`named`: or one with a display name,
    `Blog <noreply@example.com>`, as a sender may be)."""
    from email.utils import parseaddr

    from django.core.exceptions import ValidationError
    from django.core.validators import validate_email

    problems = []
    for address in addresses:
        try:
            validate_email(parseaddr(address)[1] if named else address)
        except ValidationError:
            problems.append(f"{name}: {address!r} is not a mail address.")
    return problems


# --- The database -------------------------------------------------------------------------

SQLITE = "django.db.backends.sqlite3"
POSTGRESQL = ("django.db.backends.postgresql", "django.contrib.gis.db.backends.postgis")
DATABASE_EXAMPLES = "sqlite:////an/absolute/path.sqlite3 or postgres://user:password@host:5432/NAME"


def database_problems(
    *, engine: str, name: str, debug: bool, site_root: Path | None, service: bool = False
) -> list[str]:
    """DATABASE_URL (as dj_database_url parsed it) must name SQLite or PostgreSQL, and
    which database: each of these started, then failed in every command or request, or
    worked on a database of its own (a review's finding). The URL is not repeated: it
    may hold a password. `site_root`: a local SITE_ROOT, resolved."""
    if engine == SQLITE:
        return _sqlite_file_problems(name, debug=debug, site_root=site_root)
    if engine not in POSTGRESQL:
        return [
            f"DATABASE_URL names a database blogpublish does not run on: use {DATABASE_EXAMPLES}."
        ]
    if not name and not service:  # a pg_service.conf service (?service=) may name it
        return ["DATABASE_URL names no database: postgres://user:password@host:5432/NAME."]
    return []


def _sqlite_file_problems(name: str, *, debug: bool, site_root: Path | None) -> list[str]:
    """An in-memory database is every process's own, empty one: only for a tool that
    reads the settings in DEBUG (`make typecheck`). A relative path is a database per
    working directory (SITE_ROOT refuses one for the same reason); a file under a local
    SITE_ROOT is served to anyone, password hashes and all."""
    if name in ("", ":memory:"):
        if debug:
            return []
        return [
            "DATABASE_URL is an in-memory SQLite database: each process would have its own, "
            "empty one (allowed with DEBUG=1, for tools). Give a file, sqlite:////an/absolute/path.sqlite3."
        ]
    # A SQLite URI (file:/path?mode=ro) is a file too: Django opens NAME with uri=True.
    path = Path(name.removeprefix("file:").partition("?")[0])
    where = f"DATABASE_URL's SQLite file {str(path)!r}"
    if not path.is_absolute():
        return [
            f"{where} is a relative path: each working directory would have a database of "
            "its own. Give an absolute one, sqlite:////an/absolute/path.sqlite3 (four slashes)."
        ]
    try:
        is_dir = path.is_dir()
        resolved = path.resolve()
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop (Python < 3.13)
        return [f"{where} cannot be read: {getattr(exc, 'strerror', None) or exc}."]
    if is_dir:
        return [f"{where} is a folder, not a file."]
    if site_root is not None and resolved.is_relative_to(site_root):
        return [
            f"{where} is inside SITE_ROOT ({str(site_root)!r}), which is served as the site: "
            "anyone could download it, password hashes and all. Put it elsewhere."
        ]
    return []


# --- Where the site is written ---------------------------------------------------------


def site_root_problems(site_root: str) -> list[str]:
    """SITE_ROOT must be an absolute path or an s3://BUCKET/PREFIX URL (work/site_root.py)."""
    from work.site_root import parse_site_root

    try:
        parse_site_root(site_root)
    except ValueError as exc:
        return [str(exc)]
    return []


def site_folder_problems(path: Path) -> list[str]:
    """A local SITE_ROOT must be a folder: made now if it is missing (the site would
    make it at its first write), so that a path that cannot be one (`/proc/site`,
    `/etc/passwd`) stops every process at start, not each publish, every article dead
    after its attempts (a review's finding)."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        return [f"SITE_ROOT={str(path)!r} is a file, not a folder."]
    except OSError as exc:
        return [f"SITE_ROOT={str(path)!r} cannot be made: {exc.strerror or exc}."]
    # Not its write permission: a process that only reads it (the web process serving a
    # read-only mount, restore_check against a snapshot) is right to start.
    return []


# --- What readers see --------------------------------------------------------------------


def url_problems(*, name: str, url: str, webhook: bool = False) -> list[str]:
    """`url` must be an absolute http(s) address with a host and no spaces. SITE_URL is
    the start of every link in the feeds, the sitemap and robots.txt, and of each
    page's canonical address (`blog.example.com` alone made them relative,
    `://blog.example.com/sitemap.xml`), so it has no query or fragment either. A
    webhook's (`webhook`) is where its deliveries go, and may be empty (none). SITE_URL
    has no user or password either (every page would show it); a webhook's may."""
    from urllib.parse import urlsplit

    if webhook and not url:
        return []
    try:
        parts = urlsplit(url)
        good = parts.scheme in ("http", "https") and bool(parts.hostname)
        parts.port  # noqa: B018  (raises for a port out of range or not a number)
    except ValueError:  # an invalid IPv6 literal, a port out of range
        good = False
    good = good and not any(ch.isspace() for ch in url)
    if good and webhook:
        # A webhook's user:password is the receiver's basic auth, sent by requests and
        # never shown: the log and the alerts name the variable, not its URL.
        return []
    if good and "@" in parts.netloc:
        return [
            f"{name} has a user or password before its host: every feed, sitemap, page and "
            "robots.txt would publish it (e.g. https://blog.example.com)."
        ]
    if good and not (parts.query or parts.fragment):
        return _site_path_problems(name, parts.path)
    shape = "with a host and no spaces" if webhook else "with a host, no spaces, query or fragment"
    return [
        f"{name}={url!r} is not an absolute http(s) address {shape} (e.g. https://blog.example.com)."
    ]


def endpoint_problems(url: str | None) -> list[str]:
    """AWS_ENDPOINT_URL (MinIO, R2, …), when set: an absolute http(s) address with a
    host and nothing else. Without a scheme (`minio:9000`) every publish raised
    botocore's ValueError, retried until dead, and the site view answered 500; a user
    and password in it went into every error and alert (a review's finding). Not
    repeated here either: it may hold a password."""
    from urllib.parse import urlsplit

    if not url:
        return []
    try:
        parts = urlsplit(url)
        good = parts.scheme in ("http", "https") and bool(parts.hostname)
        parts.port  # noqa: B018  (raises for a port out of range or not a number)
    except ValueError:
        good = False
    spaced = any(ch.isspace() for ch in url) or not url.isprintable()
    if good and not ("@" in url or parts.query or parts.fragment or spaced):
        return []
    return [
        "AWS_ENDPOINT_URL must be an absolute http(s) address with a host, and no user, "
        "password, query or spaces (e.g. http://minio:9000); keys go in "
        "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY."
    ]


# The app's own addresses: where the app serves the site (make run), a SITE_URL path
# beginning with one of them would hide the site behind it, or it behind the site.
APP_PATHS = frozenset({"admin", "api", "preview", "healthz", "status.json", "metrics", "static"})


def _site_path_problems(name: str, path: str) -> list[str]:
    """SITE_URL's path, where the pages link to (root-relative): no empty segment (`//`
    would make every link `//host/…`, another host), no `.` or `..` (percent-encoded
    too: browsers read `%2e%2e` as `..`), no encoded `/` or any `\\` (read as `/`), not
    the app's, and UTF-8 text without control characters once decoded (`%FF`: the app's
    view and the pages' links would disagree on it; `%0A`: no address matches it)."""
    import unicodedata
    from urllib.parse import unquote

    try:
        decoded = unquote(path, errors="strict")
    except UnicodeDecodeError:
        decoded = None
    # Cc: C0, DEL and C1 (NEL); Cf: the invisible ones (U+202E reverses what follows).
    if decoded is None or any(unicodedata.category(c) in ("Cc", "Cf") for c in decoded):
        return [
            f"{name}'s path {path!r} is not UTF-8 text once decoded, or has a control or "
            "invisible formatting character; its pages could not be served there (e.g. https://example.com/blog)."
        ]
    segments = [unquote(s) for s in path.strip("/").split("/")] if path.strip("/") else []
    named = any(s.lower() in ("", ".", "..") or "/" in s for s in segments)
    if named or "//" in path or "\\" in decoded:
        return [
            f"{name}'s path {path!r} has an empty, '.' or '..' segment, or a '/' or '\\' "
            "in one; its pages' links would name another address (e.g. https://example.com/blog)."
        ]
    if segments and segments[0].lower() in APP_PATHS:
        return [
            f"{name}'s path {path!r} begins with {segments[0]!r}, an address of the app "
            f"itself ({', '.join(sorted(APP_PATHS))}); choose another (e.g. /blog)."
        ]
    return []


def allowed_hosts_problems(*, hosts: list[str], debug: bool) -> list[str]:
    """Outside DEBUG, Django answers 400 to every host not in ALLOWED_HOSTS: an empty
    list (`ALLOWED_HOSTS=,`) would refuse every request, silently. In DEBUG, Django
    lets localhost in with an empty list."""
    # A URL where a host name goes (https://blog.example.com, blog.example.com/) matches
    # no request's Host, and every request got 400 with nothing said (a review's finding).
    # A port too: Django matches the Host header without its port (an IPv6 address is
    # in brackets, [::1], and keeps its colons).
    urls = [
        host
        for host in hosts
        if "/" in host or "://" in host or (":" in host and not host.startswith("["))
    ]
    if urls:
        return [
            f"ALLOWED_HOSTS holds {', '.join(repr(u) for u in urls)}: host names only, without "
            "a scheme, a port or a path (e.g. blog.example.com); the site's address is SITE_URL."
        ]
    if hosts or debug:
        return []
    return [
        "ALLOWED_HOSTS names no host, so every request would be refused (400) while DEBUG "
        "is off: give the site's host names, comma-separated (e.g. blog.example.com)."
    ]


def digest_lease_problems(*, lease: float, broker_hold_limit: tuple[str, float]) -> list[str]:
    """The daily digest's task holds its message for up to its lease (its time limits are
    80 % and 90 % of it): that must stay below the broker's hold limit, as the publish and
    webhook leases do (it was not checked: a review's finding)."""
    limit_name, limit = broker_hold_limit
    if lease < limit:
        return []
    return [
        f"DIGEST_LEASE_SECONDS = {lease}s must stay below {limit_name} ({limit}s): longer "
        "waits are redelivered while still waiting (kombu#337)."
    ]


def site_title_problems(title: str) -> list[str]:
    """SITE_TITLE is in every page, and in the feeds' and the sitemap's XML, which cannot
    hold a control character: one (`My\\x01Blog`) left every article out of the feed and
    the shared documents unwritten (a review's finding). Refused as an article's title
    refuses them: one line, no character XML cannot carry (bytes not UTF-8 in the
    environment are lone surrogates), no control character or bidirectional override;
    ZWJ and ZWNJ (Persian, the Indic scripts, emoji) are text."""
    # The validators' own patterns: their messages need the apps, not ready here.
    from publishing.text_limits import DISPLAY_TRICK_RE, XML_ILLEGAL_RE

    if any(ord(c) < 32 or c in "\u2028\u2029" for c in title):
        why = "must be one line, without control characters"
    elif found := XML_ILLEGAL_RE.search(title) or DISPLAY_TRICK_RE.search(title):
        why = (
            f"has U+{ord(found[0][0]):04X}, a control character the feeds cannot carry "
            "or that changes how text is shown"
        )
    else:
        return []
    return [f"SITE_TITLE={title!r} {why}."]


def site_language_problems(language: str) -> list[str]:
    """SITE_LANGUAGE must be a language tag: it is every page's `lang` and the feeds'."""
    from publishing.reader_fields import LANGUAGE_RE

    if LANGUAGE_RE.fullmatch(language):
        return []
    return [f"SITE_LANGUAGE must be a language tag such as en, fr or pt-BR (it is {language!r})."]
