#!/usr/bin/env bash
# Install a Debian package some tests need, if it is missing and we can (root + apt-get);
# otherwise say which tests will be skipped. Never fails the build: those tests skip with a reason.
#   scripts/install_debian.sh PACKAGE "SHELL TEST THAT IT IS PRESENT" "WHAT IS SKIPPED WITHOUT IT"
set -u
package=$1 present=$2 skipped=$3
if bash -c "$present" >/dev/null 2>&1; then exit 0; fi
if [ "$(id -u)" != "0" ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "note: $package is missing and apt-get as root is not available; $skipped will be skipped" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq && apt-get install -y -qq "$package" >/dev/null \
  || echo "note: could not install $package; $skipped will be skipped" >&2
exit 0
