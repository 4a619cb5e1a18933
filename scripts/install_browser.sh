#!/usr/bin/env bash
# Install Debian's chromium for the Playwright browser tests, if it is missing and we can.
set -u
if [ -x /usr/bin/chromium ]; then exit 0; fi
if [ "$(id -u)" != "0" ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "note: /usr/bin/chromium is missing and apt-get as root is not available; browser tests will be skipped" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq && apt-get install -y -qq chromium >/dev/null \
  || echo "note: could not install chromium; browser tests will be skipped" >&2
exit 0
