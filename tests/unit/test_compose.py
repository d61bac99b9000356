"""docker-compose.yml's structure (no Docker engine runs here, so the file is read, not
run): one site for any number of workers, the migrations before every process, .env's
settings not shadowed, signals reaching the processes, and the object-storage and
RabbitMQ profiles."""

from __future__ import annotations

import re

import pytest
import yaml

from tests.support.dockerfile import read_image
from tests.support.processes import ROOT

APP_SERVICES = ("web", "worker", "webhooks", "beat", "flower")


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_the_worker_scales(compose):
    """`docker compose up --scale worker=3` refuses a service with a container_name
    (names must be unique) and a fixed host port (only one container can bind it)."""
    worker = compose["services"]["worker"]
    assert "container_name" not in worker
    assert "ports" not in worker
    assert worker["command"].startswith("celery -A config worker")
    # Celery's default node name is celery@<hostname>: each container's is its own.
    assert " -n " not in worker["command"] and "--hostname" not in worker["command"]
    assert worker.get("restart") == "unless-stopped"


def test_every_app_process_runs_the_same_image_on_the_same_site(compose):
    services = compose["services"]
    for name in APP_SERVICES:
        service = services[name]
        assert service["image"] == "blogpublish", name
        assert "container_name" not in service, name
        env = service["environment"]
        assert env["SITE_ROOT"] == "${DOCKER_SITE_ROOT:-/app/var/site}", name
        assert env["DATABASE_URL"].startswith("${DOCKER_DATABASE_URL:-postgres://"), (
            f"{name}: several hosts need PostgreSQL"
        )
        assert "site:/app/var/site" in service["volumes"], name
        assert set(service["depends_on"]) == {"postgres", "redis", "migrate"}, name
    assert set(compose["volumes"]) >= {"site", "pgdata"}


def test_object_storage_is_a_profile_with_minio_and_its_bucket(compose):
    services = compose["services"]
    minio, init = services["minio"], services["minio-init"]
    assert minio["profiles"] == ["s3"] and init["profiles"] == ["s3"]
    assert minio["command"].startswith("server /data")
    assert init["depends_on"] == {"minio": {"condition": "service_healthy"}}
    assert "mc mb --ignore-existing" in init["entrypoint"]
    # The S3 API is not published on the host: the app reaches it as http://minio:9000.
    assert all(not re.search(r":9000$", port) for port in minio.get("ports", []))
    assert "miniodata" in compose["volumes"]


def test_rabbitmq_is_a_profile(compose):
    rabbitmq = compose["services"]["rabbitmq"]
    assert rabbitmq["profiles"] == ["rabbitmq"]
    assert "healthcheck" in rabbitmq
    broker = compose["services"]["worker"]["environment"]["CELERY_BROKER_URL"]
    assert broker == "${DOCKER_BROKER_URL:-redis://redis:6379/0}"


def test_services_outside_a_profile_are_the_default_set(compose):
    default = {n for n, s in compose["services"].items() if "profiles" not in s}
    assert default == {*APP_SERVICES, "migrate", "redis", "postgres"}


def test_the_migrations_run_once_before_every_process(compose):
    """A one-shot `migrate` that web, the workers, Beat and Flower wait for: with the
    migrations in web's start, the workers and Beat ran before them (Beat logged
    `relation "publishing_article" does not exist` on a first `up`; on an upgrade the new
    workers ran on the old schema: a review's finding)."""
    services = compose["services"]
    migrate = services["migrate"]
    assert migrate["command"] == "python manage.py migrate --noinput"
    assert migrate["restart"] == "no"  # unless-stopped would run it again, for ever
    assert "migrate" not in migrate["depends_on"]
    for name in APP_SERVICES:
        assert services[name]["depends_on"]["migrate"] == {
            "condition": "service_completed_successfully"
        }, name
        assert "migrate" not in services[name]["command"], name


def test_no_environment_key_shadows_what_env_sets(compose):
    """`environment:` wins over `env_file: .env`: a literal value there for a variable
    .env.example documents silently overrode the operator's (ALLOWED_HOSTS once: every
    request of a deploy answered 400; a review's finding). Such a key is an
    interpolation, which compose fills from .env or the shell, with a default."""
    documented = {
        line.split("=", 1)[0]
        for line in (ROOT / ".env.example").read_text().splitlines()
        if re.match(r"^[A-Z_]+=", line)
    }
    for name in (*APP_SERVICES, "migrate"):
        service = compose["services"][name]
        assert service["env_file"] == ".env", name
        for key, value in service["environment"].items():
            if key in documented:
                assert re.fullmatch(r"\$\{[A-Z_]+:-[^}]*\}", str(value)), (name, key, value)


def test_pid_1_of_every_app_container_is_the_process(compose):
    """A `sh -c` command stays PID 1 unless it ends in `exec`: sh passes no SIGTERM on,
    so `docker compose stop` killed gunicorn after the grace period (a review's
    finding)."""
    for name in (*APP_SERVICES, "migrate"):
        command = compose["services"][name]["command"]
        if command.startswith("sh -c"):
            assert command.split("&&")[-1].strip().startswith("exec "), (name, command)


def _seconds(duration: str) -> float:
    """A compose duration (`2m`, `130s`, `1m30s`) in seconds."""
    units = {"h": 3600, "m": 60, "s": 1}
    parts = re.findall(r"(\d+(?:\.\d+)?)(h|ms|m|s)", duration)
    assert parts and "".join(n + u for n, u in parts) == duration, duration
    return sum(float(n) * (units[u] if u != "ms" else 0.001) for n, u in parts)


def test_a_worker_stopped_finishes_its_running_publish(compose):
    """Docker kills a container 10 s after its SIGTERM unless stop_grace_period says
    otherwise: a publish in its warm shutdown may run to its hard time limit (a review's
    finding)."""
    from django.conf import settings

    for name in ("worker", "webhooks"):
        grace = compose["services"][name].get("stop_grace_period", "10s")
        assert _seconds(grace) > settings.PUBLISH_TIME_LIMIT + 5, (name, grace)


def _consumed(command: str, queues: list[str]) -> set[str]:
    """The queues a `celery … worker` command line consumes (-Q: those; -X: all but
    those; neither: all)."""
    words = command.split()
    if "-Q" in words:
        return set(words[words.index("-Q") + 1].split(","))
    if "-X" in words:
        return set(queues) - set(words[words.index("-X") + 1].split(","))
    return set(queues)


@pytest.mark.parametrize("source", ["Procfile", "docker-compose.yml"])
def test_every_queue_has_a_worker_and_no_delivery_holds_a_publishers_process(source):
    """A slow webhook receiver holds each try's process for PUBLISH_WEBHOOK_TIMEOUT: the
    deliveries' queue has its own worker, and the worker that publishes does not take
    it (config/queues.py; a review's finding)."""
    from config.queues import celery_queues, webhooks_queue

    _, declared = celery_queues("blogpublish")
    queues = [q.name for q in declared]
    if source == "Procfile":
        lines = (ROOT / "Procfile").read_text().splitlines()
        commands = [line.split(":", 1)[1] for line in lines if " worker " in line]
    else:
        services = yaml.safe_load((ROOT / source).read_text())["services"]
        commands = [s["command"] for s in services.values() if " worker " in str(s.get("command"))]
    consumed = [_consumed(command, queues) for command in commands]
    assert set().union(*consumed) == set(queues)
    for taken in consumed:
        assert not ("blogpublish" in taken and webhooks_queue("blogpublish") in taken), taken


def test_web_and_the_workers_have_healthchecks(compose):
    """docker compose ps says whether web answers /healthz as the deployment's settings
    let it (config/healthcheck.py, tests/unit/test_healthcheck.py) and whether each
    worker's own node answers a ping (a review's finding)."""
    services = compose["services"]
    assert services["web"]["healthcheck"]["test"] == ["CMD", "python", "config/healthcheck.py"]
    assert ("config", "config") in [(s, d) for sources, d in read_image().copies for s in sources]
    for name in ("worker", "webhooks"):
        test = services[name]["healthcheck"]["test"]
        assert test[0] == "CMD-SHELL", name
        # $$: compose leaves $HOSTNAME to the container's shell, Celery's %h there.
        assert "inspect ping -d celery@$$HOSTNAME " in test[1], name
        assert " -n " not in services[name]["command"], name  # else another node name
