#!/usr/bin/env bash
# The suite, once on SQLite and once on PostgreSQL, against this machine's Redis, and
# the broker-dependent tests (integration, and the RabbitMQ system tests) once more on
# this machine's RabbitMQ, with PostgreSQL; `all` (make test) runs them side by side.
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
# Whether pytest's arguments name paths (options alone do not), and whether they select
# tests by keyword or marker (-k, -m: a part may then select none, pytest's exit 5).
has_paths() {
    local skip=0 arg
    for arg in "$@"; do
        if [[ $skip -eq 1 ]]; then skip=0
        elif [[ "$arg" =~ ^-[kmpo]$ ]]; then skip=1  # an option whose value follows
        elif [[ "$arg" != -* ]]; then return 0
        fi
    done
    return 1
}
selects() {
    local arg
    for arg in "$@"; do [[ "$arg" =~ ^-[km] ]] && return 0; done
    return 1
}
run_rabbitmq() {
    echo "=== RabbitMQ (PostgreSQL) ==="
    local vhost="bp-test-$(date +%s)-$$" status=0
    rabbitmqctl -q add_vhost "$vhost" >/dev/null
    rabbitmqctl -q set_permissions -p "$vhost" guest ".*" ".*" ".*" >/dev/null
    # The broker-dependent tests, unless paths were given (options alone keep them).
    local args=("$@")
    has_paths "$@" || args=(tests/integration tests/system/test_rabbitmq.py "$@")
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
        # Three parts side by side: SQLite; the PostgreSQL run's system tests (processes
        # waiting on kills, leases and outages); the rest of the PostgreSQL run. As each
        # is over, the next of the RabbitMQ run's two halves starts in its place (its
        # integration tests, then its system tests): three at a time keep the two cores
        # busy, where two runs side by side left them idle half the time. Paths given:
        # the three runs side by side, each whole. The parts share nothing
        # (tests/settings.py: a database, queues and run folder each, from a run id of
        # their own; a vhost each), and their waits overlap instead of adding up. Each
        # part's output is kept in var/ and printed as soon as the part is over.
        # Each Redis part gets a db number of its own, so that no part's workers hear
        # another's broadcasts (remote control, events).
        unset BLOGPUBLISH_TEST_RUN
        mkdir -p var
        db=$((RANDOM % 15 + 1))
        broker() { echo "${TEST_REDIS_URL%/}/$(( (db + $1 - 1) % 15 + 1 ))"; }
        # A part that selects no test under -k or -m (pytest's exit 5) has not failed.
        counts() { [[ $1 -ne 0 ]] && ! { [[ $1 -eq 5 ]] && selects "${@:2}"; }; }
        # First, alone: the test that compares rendering times (n against 8n, CPU time)
        # is skewed by the other runs' load on the shared caches of two cores.
        growth=tests/security/test_render_growth.py
        if ! has_paths "$@"; then
            code=0
            BLOGPUBLISH_TEST_BROKER="$(broker 0)" run_sqlite "$growth" "$@" || code=$?
            if counts $code "$@"; then status=$code; fi
        fi
        # Each part in a process group of its own (job control), so that an interrupt
        # reaches it: a background job of a script otherwise ignores SIGINT.
        set -m
        declare -A name_of=()
        start() {  # start NAME COMMAND…: a part in the background, its output in var/
            "${@:2}" >"var/test-$1-$$.log" 2>&1 &
            name_of[$!]=$1
        }
        queued=()  # NAME:PATH, started one at a time as places are free
        # Interrupted (Ctrl-C, CI's timeout): each part told, nothing more started, and
        # the parts' output still printed as each stops.
        interrupted() {  # (its own variable: the loop below reads `pid` after a wait)
            local part
            status=130 queued=()
            for part in "${!name_of[@]}"; do kill -INT -- "-$part" 2>/dev/null || true; done
        }
        trap interrupted INT TERM
        if has_paths "$@"; then
            start sqlite env BLOGPUBLISH_TEST_BROKER="$(broker 1)" "$self" sqlite "$@"
            start postgres env BLOGPUBLISH_TEST_BROKER="$(broker 2)" "$self" postgres "$@"
            start rabbitmq env -u BLOGPUBLISH_TEST_BROKER "$self" rabbitmq "$@"
        else
            start sqlite env BLOGPUBLISH_TEST_BROKER="$(broker 1)" \
                "$self" sqlite --ignore="$growth" "$@"
            start postgres-system env BLOGPUBLISH_TEST_BROKER="$(broker 2)" \
                "$self" postgres tests/system "$@"
            start postgres-rest env BLOGPUBLISH_TEST_BROKER="$(broker 3)" \
                "$self" postgres --ignore=tests/system "$@"
            # The RabbitMQ run's two halves, the longer first.
            queued=(integration:tests/integration system:tests/system/test_rabbitmq.py)
        fi
        while [[ ${#name_of[@]} -gt 0 ]]; do
            code=0
            wait -n -p pid "${!name_of[@]}" || code=$?
            [[ -n "${pid:-}" ]] || continue  # the wait was interrupted
            if counts $code "$@"; then status=$code; fi
            name=${name_of[$pid]}
            unset "name_of[$pid]"
            echo "### The $name part is over; its output:"
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
