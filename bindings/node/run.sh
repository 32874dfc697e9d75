#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs the Node package's tests (TAP on stdout), installing its pinned
# dependency (koffi, as package-lock.json pins it) first when it is missing
# (scripts/npm-ci.sh: retried, and past an intercepting proxy).
set -euo pipefail
cd -- "$(dirname -- "${BASH_SOURCE[0]}")"
if [ ! -e node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  bash ../../scripts/npm-ci.sh || { echo "run.sh: the Node package's tests need koffi from the npm registry once" >&2; exit 1; }
fi
exec node --expose-gc --test --test-reporter=tap test/
