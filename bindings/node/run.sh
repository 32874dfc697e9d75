#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs the Node package's tests (TAP on stdout), installing its pinned
# dependency (koffi, as package-lock.json pins it) first when it is missing.
# npm is retried with pauses: a CI machine's path to the registry is not
# always healthy, and npm keeps what it fetched in its cache.
set -euo pipefail
cd -- "$(dirname -- "${BASH_SOURCE[0]}")"
if [ ! -e node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  for i in 1 2 3; do
    if timeout --kill-after=10 240 npm ci --no-audit --no-fund --ignore-scripts \
         --fetch-retries=2 --fetch-timeout=120000 >&2; then
      break
    fi
    [ "$i" = 3 ] && { echo "run.sh: npm ci failed 3 times" >&2; exit 1; }
    sleep $((i * 10))
  done
fi
exec node --expose-gc --test --test-reporter=tap test/
