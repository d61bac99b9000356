#!/usr/bin/env bash
# System tools the tests need, from Debian's packages, installed only when missing:
#   promtool          (package prometheus)  `promtool test rules` of deploy/prometheus/
#   /usr/bin/chromium (package chromium)    the browser tests (Playwright drives it;
#                                           Playwright downloads no browser of its own)
#   exiftool          (package libimage-exiftool-perl) reads every metadata block of the
#                                           uploaded images' tests (tests/security/)
#   hugo              (package hugo)        tests/unit/test_hugo_parity.py: imported posts
#                                           render as Hugo (Goldmark) renders them
#   java, npm         (default-jre-headless, npm) the Nu HTML Checker (vnu.jar) and
#                                           axe-core, from the npm registry into
#                                           tools/checkers/node_modules (package-lock.json):
#                                           tests/browser/test_reader_pages.py
#   aws               (package awscli)      the backup drill of a site in a bucket
#                                           (tests/system/test_backup_restore.py)
# Called by `make install` and `make test`; quick when everything is there. Add a tool
# as one more "command package" pair below.
#   scripts/install-tools.sh [--check]    --check: only say what is missing (exit 1)
set -euo pipefail

tools=(
    "promtool prometheus"
    "/usr/bin/chromium chromium"
    "exiftool libimage-exiftool-perl"
    "hugo hugo"
    "java default-jre-headless"
    "npm npm"
    "aws awscli"
)

missing=()
for pair in "${tools[@]}"; do
    read -r command package <<<"$pair"
    if ! command -v "$command" >/dev/null 2>&1; then
        missing+=("$package")
    fi
done

checkers() {
    # The page checkers, from the lock file, when missing (quick when they are there).
    local dir
    dir="$(dirname "$0")/../tools/checkers"
    if [[ ! -f "$dir/node_modules/vnu-jar/build/dist/vnu.jar" || ! -f "$dir/node_modules/axe-core/axe.min.js" ]]; then
        if [[ "${1:-}" == "--check" ]]; then
            echo "missing: the page checkers (scripts/install-tools.sh installs them)" >&2
            return 1
        fi
        echo "Installing the page checkers (vnu-jar, axe-core) from the npm registry"
        (cd "$dir" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
    fi
}

if [[ ${#missing[@]} -eq 0 ]]; then
    checkers "${1:-}"
    exit $?
fi
if [[ "${1:-}" == "--check" ]]; then
    echo "missing Debian packages: ${missing[*]} (scripts/install-tools.sh installs them)" >&2
    exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "Install these packages with your system's package manager: ${missing[*]}" >&2
    exit 1
fi
sudo=""
if [[ "$(id -u)" -ne 0 ]]; then
    if command -v sudo >/dev/null 2>&1; then
        sudo="sudo"
    else
        echo "Not root and no sudo: run as root: apt-get install -y ${missing[*]}" >&2
        exit 1
    fi
fi
apt_get() {
    # apt-get, waiting while another apt-get (a second `make install`, the system's own
    # updates) holds apt's lock: apt-get update does not wait for it by itself.
    local tries=0 err
    err="$(mktemp)"
    until $sudo env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 "$@" 2>"$err"; do
        if ! grep -q "Could not get lock" "$err" || ((++tries >= 120)); then
            cat "$err" >&2
            rm -f "$err"
            return 1
        fi
        ((tries > 1)) || echo "Waiting for apt's lock (another apt-get is running)"
        sleep 5
    done
    cat "$err" >&2
    rm -f "$err"
}
echo "Installing Debian packages: ${missing[*]}"
apt_get update -qq
# The prometheus package starts a Prometheus server on install where a service manager
# runs; the tests need only its promtool.
apt_get install -y -qq --no-install-recommends "${missing[@]}"
checkers
