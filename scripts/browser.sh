#!/usr/bin/env bash
# Install headless Chromium and its WebDriver (Debian's chromium and chromium-driver) when
# missing: the restoration page's browser test (tests/test_serve_browser.py) drives them.
# Idempotent and quiet: does nothing when both are there; needs root and apt-get otherwise.
set -euo pipefail
if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "browser: /usr/bin/chromium or /usr/bin/chromedriver missing; install Debian's chromium and chromium-driver as root" >&2
  exit 0  # the browser test says the same (a skip, or a failure under CI=true)
fi
echo "browser: installing chromium and chromium-driver (apt-get)"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null
