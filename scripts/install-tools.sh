#!/usr/bin/env bash
# Tools the test suite needs beyond Python packages: Debian's Chromium, for the browser
# test of the writer's desk (tests/browser/, Playwright drives /usr/bin/chromium; no
# browser is downloaded). Installed with apt-get only when missing; run as root or
# with sudo available.
set -euo pipefail
if [[ -x /usr/bin/chromium ]]; then
    exit 0
fi
echo "Installing Debian's chromium (for the browser test)…"
if [[ $(id -u) -eq 0 ]]; then
    sudo=()
elif command -v sudo >/dev/null; then
    sudo=(sudo)
else
    echo "chromium is missing and this is not root: run as root:" >&2
    echo "  apt-get install -y --no-install-recommends chromium" >&2
    exit 1
fi
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y --no-install-recommends chromium
