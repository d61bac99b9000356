"""docker-compose.yml's structure (no Docker engine runs here, so the file is read, not
run): one site for any number of workers, and the object-storage and RabbitMQ profiles."""

from __future__ import annotations

import re

import pytest
import yaml

from tests.support.processes import ROOT

APP_SERVICES = ("web", "worker", "beat", "flower")


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
