"""docker-compose.yml's structure (no Docker engine runs here, so the file is read, not
run): one site for any number of workers, and the object-storage and RabbitMQ profiles."""

from __future__ import annotations

import re

import pytest
import yaml

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
        assert env["DATABASE_URL"].startswith("postgres://"), (
            f"{name}: several hosts need PostgreSQL"
        )
        assert "site:/app/var/site" in service["volumes"], name
        assert set(service["depends_on"]) == {"postgres", "redis"}, name
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
    assert default == {*APP_SERVICES, "redis", "postgres"}


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
