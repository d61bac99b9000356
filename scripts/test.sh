#!/usr/bin/env bash
# The suite, once on SQLite and once on PostgreSQL, against this machine's Redis; then
# the broker-dependent tests (integration, and the RabbitMQ system tests) once more on
# this machine's RabbitMQ, with PostgreSQL.
# Each run makes its own database and picks its own Redis db number and queue
# (tests/settings.py); the RabbitMQ run also gets a vhost of its own, made here with
# rabbitmqctl and deleted when the run ends, so runs never see each other's data.
#   scripts/test.sh [sqlite|postgres|rabbitmq|all] [pytest args…]
# `rabbitmq` without paths runs tests/integration and tests/system/test_rabbitmq.py.
# Each run leaves out the tests another run holds already (tests/support/runs.py): the
# PostgreSQL run those that use no database, the SQLite run the system tests, the
# RabbitMQ run the integration tests that do not depend on the broker.
set -euo pipefail
cd "$(dirname "$0")/.."
which="${1:-all}"; [[ $# -gt 0 ]] && shift
export TEST_REDIS_URL="${TEST_REDIS_URL:-redis://127.0.0.1:6379}"
export TEST_POSTGRES_URL="${TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
RABBITMQ_HOST="${TEST_RABBITMQ_HOST:-127.0.0.1:5672}"
status=0
if [[ "$which" == all || "$which" == sqlite ]]; then
    echo "=== SQLite ==="
    env -u DATABASE_URL BLOGPUBLISH_TEST_DB=sqlite .venv/bin/pytest "$@" || status=$?
fi
if [[ "$which" == all || "$which" == postgres ]]; then
    echo "=== PostgreSQL ==="
    env -u DATABASE_URL BLOGPUBLISH_TEST_DB=postgres .venv/bin/pytest "$@" || status=$?
fi
if [[ "$which" == all || "$which" == rabbitmq ]]; then
    echo "=== RabbitMQ (PostgreSQL) ==="
    vhost="bp-test-$(date +%s)-$$"
    rabbitmqctl -q add_vhost "$vhost" >/dev/null
    trap 'rabbitmqctl -q delete_vhost "$vhost" >/dev/null || true' EXIT
    rabbitmqctl -q set_permissions -p "$vhost" guest ".*" ".*" ".*" >/dev/null
    # The broker-dependent tests, unless paths were given (options alone keep them).
    args=("$@")
    paths=0 skip=0
    for arg in "$@"; do
        if [[ $skip -eq 1 ]]; then skip=0
        elif [[ "$arg" =~ ^-[kmpo]$ ]]; then skip=1  # an option whose value follows
        elif [[ "$arg" != -* ]]; then paths=1
        fi
    done
    [[ $paths -eq 0 ]] && args=(tests/integration tests/system/test_rabbitmq.py "$@")
    env -u DATABASE_URL BLOGPUBLISH_TEST_DB=postgres \
        TEST_AMQP_URL="amqp://guest:guest@${RABBITMQ_HOST}/${vhost}" \
        .venv/bin/pytest "${args[@]}" || status=$?
fi
exit $status
