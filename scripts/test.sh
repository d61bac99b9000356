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
self="$PWD/scripts/test.sh"
which="${1:-all}"; [[ $# -gt 0 ]] && shift
export TEST_REDIS_URL="${TEST_REDIS_URL:-redis://127.0.0.1:6379}"
export TEST_POSTGRES_URL="${TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
RABBITMQ_HOST="${TEST_RABBITMQ_HOST:-127.0.0.1:5672}"
run_sqlite() {
    echo "=== SQLite ==="
    env -u DATABASE_URL BLOGPUBLISH_TEST_DB=sqlite .venv/bin/pytest "$@"
}
run_postgres() {
    echo "=== PostgreSQL ==="
    env -u DATABASE_URL BLOGPUBLISH_TEST_DB=postgres .venv/bin/pytest "$@"
}
run_rabbitmq() {
    echo "=== RabbitMQ (PostgreSQL) ==="
    local vhost="bp-test-$(date +%s)-$$" status=0
    rabbitmqctl -q add_vhost "$vhost" >/dev/null
    rabbitmqctl -q set_permissions -p "$vhost" guest ".*" ".*" ".*" >/dev/null
    # The broker-dependent tests, unless paths were given (options alone keep them).
    local args=("$@") paths=0 skip=0 arg
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
    rabbitmqctl -q delete_vhost "$vhost" >/dev/null || true
    return $status
}

status=0
case "$which" in
    sqlite) run_sqlite "$@" || status=$? ;;
    postgres) run_postgres "$@" || status=$? ;;
    rabbitmq) run_rabbitmq "$@" || status=$? ;;
    all)
        # Three runs side by side: SQLite; the PostgreSQL run's system tests (processes
        # waiting on kills, leases and outages); the rest of the PostgreSQL run. As each
        # is over, the next of the RabbitMQ run's two halves starts in its place (its
        # integration tests, then its system tests): three at a time keep the two cores
        # busy, where two runs side by side left them idle half the time. The runs share
        # nothing (tests/settings.py: a database, queues and run folder each; a vhost
        # each), and their waits overlap instead of adding up. Each run's output is kept
        # in var/ and printed as soon as the run is over.
        # Each Redis run gets a db number of its own, so that no run's workers hear
        # another's broadcasts (remote control, events).
        mkdir -p var
        db=$((RANDOM % 15 + 1))
        broker() { echo "${TEST_REDIS_URL%/}/$(( (db + $1 - 1) % 15 + 1 ))"; }
        # First, alone: the test that compares rendering times (n against 8n, CPU time)
        # is skewed by the other runs' load on the shared caches of two cores.
        growth=tests/security/test_render_growth.py
        BLOGPUBLISH_TEST_BROKER="$(broker 0)" run_sqlite "$growth" "$@" || status=$?
        declare -A name_of=()
        start() {  # start NAME COMMAND…: a run in the background, its output in var/
            "${@:2}" >"var/test-$1-$$.log" 2>&1 &
            name_of[$!]=$1
        }
        start sqlite env BLOGPUBLISH_TEST_BROKER="$(broker 1)" \
            "$self" sqlite --ignore="$growth" "$@"
        start postgres-system env BLOGPUBLISH_TEST_BROKER="$(broker 2)" \
            "$self" postgres tests/system "$@"
        start postgres-rest env BLOGPUBLISH_TEST_BROKER="$(broker 3)" \
            "$self" postgres --ignore=tests/system "$@"
        trap 'kill -INT "${!name_of[@]}" 2>/dev/null || true' INT TERM
        # The RabbitMQ run's two halves, the longer first.
        queued=(integration:tests/integration system:tests/system/test_rabbitmq.py)
        while [[ ${#name_of[@]} -gt 0 ]]; do
            pid=""
            wait -n -p pid "${!name_of[@]}" || status=$?
            [[ -n "$pid" ]] || continue
            name=${name_of[$pid]}
            unset "name_of[$pid]"
            echo "### The $name run is over; its output:"
            cat "var/test-$name-$$.log"
            rm -f "var/test-$name-$$.log"
            if [[ ${#queued[@]} -gt 0 ]]; then
                start "rabbitmq-${queued[0]%%:*}" env -u BLOGPUBLISH_TEST_BROKER \
                    "$self" rabbitmq "${queued[0]#*:}" "$@"
                queued=("${queued[@]:1}")
            fi
        done
        ;;
    *) echo "usage: scripts/test.sh [sqlite|postgres|rabbitmq|all] [pytest args…]" >&2; exit 2 ;;
esac
exit $status
