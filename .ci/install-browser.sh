#!/usr/bin/env bash
# What the viewer's browser tests (tests/test_viewer_browser.py) need on a fresh machine:
# Debian's Chromium (/usr/bin/chromium) and Playwright for Python, which drives that system
# browser through executable_path. No browser is ever downloaded: 'playwright install' is not run.
# Run it with the Python environment the tests use active (.ci/run activates its venv first).
# If Chromium cannot be installed the script says so and exits 0: the browser tests then skip,
# and pytest's summary names the reason.
set -uo pipefail

if [ "$(id -u)" -eq 0 ]; then
    SUDO=()
elif command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo -n)
else
    SUDO=()
fi

if ! command -v chromium >/dev/null 2>&1 && [ ! -x /usr/bin/chromium ]; then
    ok=0
    for attempt in 1 2; do
        if "${SUDO[@]}" apt-get update -qq \
            && DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -qq chromium >/dev/null; then
            ok=1
            break
        fi
        echo "install-browser: apt-get failed (attempt $attempt)" >&2
        sleep 5
    done
    if [ "$ok" -ne 1 ]; then
        echo "install-browser: could not install Debian's chromium; the browser tests will be skipped" >&2
        exit 0
    fi
fi

if ! python -c "import playwright.sync_api" >/dev/null 2>&1; then
    python -m pip install --quiet "playwright>=1.40" || {
        echo "install-browser: could not install playwright; the browser tests will fail" >&2
        exit 1
    }
fi

chromium --version 2>/dev/null || /usr/bin/chromium --version 2>/dev/null || true
