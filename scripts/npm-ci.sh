#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `npm ci` in the current directory, made to survive a CI machine's path to
# the registry: retried with growing pauses (npm keeps what it already
# fetched in its cache, so each attempt only fetches what is missing), each
# attempt cut off when it stalls, and, behind an intercepting proxy whose CA
# this machine does not trust, retried without TLS verification (every
# package is still checked against package-lock.json's sha512). No install
# scripts. All output goes to stderr. Used by tests/compat/install.sh and
# bindings/node/run.sh.
#   SBX_NPM_ATTEMPTS (3), SBX_NPM_ATTEMPT_SECONDS (240)
set -uo pipefail
exec 1>&2
attempts=${SBX_NPM_ATTEMPTS:-3}
per_attempt=${SBX_NPM_ATTEMPT_SECONDS:-240}
# npm's own retries cover refused and reset connections; the loop covers the
# rest (idle timeouts, truncated bodies).
args=(ci --no-audit --no-fund --ignore-scripts
      --fetch-retries=2 --fetch-retry-mintimeout=2000 --fetch-retry-maxtimeout=20000
      --fetch-timeout=120000)
for ((i = 1; i <= attempts; i++)); do
  if out=$(timeout --kill-after=10 "$per_attempt" npm "${args[@]}" 2>&1); then
    printf '%s\n' "$out"
    exit 0
  fi
  printf '%s\n' "$out"
  [ -n "$out" ] || echo "npm-ci.sh: npm ci gave no output within ${per_attempt}s"
  if grep -qiE 'SELF_SIGNED_CERT_IN_CHAIN|self-signed certificate|UNABLE_TO_GET_ISSUER_CERT|unable to get local issuer' <<<"$out" &&
     [[ " ${args[*]} " != *" --strict-ssl=false "* ]]; then
    echo "npm-ci.sh: the npm registry's TLS certificate is not trusted here; retrying without" \
         "TLS verification (every package is still verified against package-lock.json's sha512)"
    args+=(--strict-ssl=false)
    ((i--)) || true
    continue
  fi
  if ((i < attempts)); then
    pause=$((i * 10))
    echo "npm-ci.sh: npm ci failed (attempt $i of $attempts); retrying in ${pause}s"
    sleep "$pause"
  fi
done
echo "npm-ci.sh: npm ci failed $attempts times in $(pwd)"
exit 1
