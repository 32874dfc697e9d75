#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Compare the built libsbxrun.so against the ABI baseline in abi/ with abidiff.
#   check-abi.sh SRCDIR LIBRARY            check (exit 0 = compatible, 77 = skipped)
#   check-abi.sh --update SRCDIR LIBRARY   rewrite the baseline (see doc/abi.md)
# Added functions and appended enum values are compatible; anything else that
# abidiff reports (a removed or changed function, a changed type) fails.
set -u
update=0
if [ "${1:-}" = "--update" ]; then update=1; shift; fi
[ $# -eq 2 ] || { echo "usage: $0 [--update] SRCDIR LIBRARY" >&2; exit 2; }
src=$1 lib=$2
baseline="$src/abi/libsbxrun.abi"
# Types defined outside the public headers (the structs behind the opaque
# handles) are private: their layout may change freely.
hdrs="$src/include/sbxrun"

if ! command -v abidiff >/dev/null || ! command -v abidw >/dev/null; then
  echo "SKIP: abidiff/abidw not found (apt-get install -y abigail-tools)"
  exit 77
fi
if ! readelf -S "$lib" | grep -q '\.debug_info'; then
  echo "SKIP: $lib has no debug info; the ABI check needs a -g build (buildtype debug or debugoptimized)"
  exit 77
fi

if [ "$update" = 1 ]; then
  tmp=$(mktemp "$baseline.XXXXXX") || exit 1
  if abidw --no-corpus-path --headers-dir "$hdrs" --drop-private-types \
       --no-comp-dir-path --short-locs --no-elf-needed --out-file "$tmp" "$lib"; then
    chmod 644 "$tmp" && mv "$tmp" "$baseline" && echo "wrote $baseline"
  else
    rm -f "$tmp"; echo "abidw failed" >&2; exit 1
  fi
  exit 0
fi

[ -f "$baseline" ] || { echo "FAIL: no baseline at $baseline (see doc/abi.md)"; exit 1; }
out=$(abidiff --no-added-syms --headers-dir2 "$hdrs" --drop-private-types \
  "$baseline" "$lib" 2>&1)
rc=$?
echo "$out"
if [ $rc -ne 0 ]; then
  echo "FAIL: abidiff exit $rc: the library's ABI is not compatible with abi/libsbxrun.abi."
  echo "If the change is intended and compatible, update the baseline as doc/abi.md says."
  exit 1
fi
echo "ABI compatible with $baseline"
