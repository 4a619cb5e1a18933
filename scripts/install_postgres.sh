#!/usr/bin/env bash
# Install Debian's PostgreSQL server binaries for the PostgreSQL tests, if missing and we can.
# The tests start their own server (initdb + pg_ctl in a temporary folder, on a free port);
# the package's own cluster service is not used. Without it those tests skip with a reason.
set -u
if command -v initdb >/dev/null 2>&1 || compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null; then exit 0; fi
if [ "$(id -u)" != "0" ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "note: PostgreSQL is missing and apt-get as root is not available; PostgreSQL tests will be skipped" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq && apt-get install -y -qq postgresql >/dev/null \
  || echo "note: could not install postgresql; PostgreSQL tests will be skipped" >&2
exit 0
