#!/usr/bin/env bash
# The suite, once on SQLite and once on PostgreSQL, against this machine's Redis.
# Each run makes its own database and picks its own Redis db number and queue
# (tests/settings.py), so runs never see each other's data.
#   scripts/test.sh [sqlite|postgres|all] [pytest args…]
set -euo pipefail
cd "$(dirname "$0")/.."
which="${1:-all}"; [[ $# -gt 0 ]] && shift
export TEST_REDIS_URL="${TEST_REDIS_URL:-redis://127.0.0.1:6379}"
export TEST_POSTGRES_URL="${TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
status=0
if [[ "$which" == all || "$which" == sqlite ]]; then
    echo "=== SQLite ==="
    env -u DATABASE_URL BLOGPUBLISH_TEST_DB=sqlite .venv/bin/pytest "$@" || status=$?
fi
if [[ "$which" == all || "$which" == postgres ]]; then
    echo "=== PostgreSQL ==="
    env -u DATABASE_URL BLOGPUBLISH_TEST_DB=postgres .venv/bin/pytest "$@" || status=$?
fi
exit $status
