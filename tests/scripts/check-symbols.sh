#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The export gate: the shared library's dynamic symbols, the version script and
# the SBX_API declarations in the public headers must be the same set, and every
# one of them must start with sbx_. Also: the SONAME, and no libarchive link.
#   check-symbols.sh SRCDIR LIBRARY
set -u
[ $# -eq 2 ] || { echo "usage: $0 SRCDIR LIBRARY" >&2; exit 2; }
src=$1 lib=$2
fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# Defined dynamic symbols, without @@VERSION. GNU ld (not lld) also emits each
# version node as an absolute symbol ("A SBXRUN_1.0"): that is a version
# definition, not an export, and is checked against the map instead.
nm -D --defined-only "$lib" | awk '$2 != "A" {sub(/@.*/, "", $3); print $3}' | sort -u >"$tmp/exported"
nm -D --defined-only "$lib" | awk '$2 == "A" {print $3}' | sort -u >"$tmp/nodes"

# Globals listed in the map (between "global:" and "local:").
sed -e 's#/\*.*\*/##' "$src/lib/libsbxrun.map" | tr -d '\r' | awk '
  /global:/ {g=1; next} /local:/ {g=0; next}
  g { gsub(/[ \t;]/, ""); if ($0 != "") print }' | sort -u >"$tmp/map"
grep -oE '^[A-Z0-9_]+ *\{' "$src/lib/libsbxrun.map" | tr -d ' {' | sort -u >"$tmp/mapnodes"

# Functions declared SBX_API in the public headers.
cat "$src"/include/sbxrun/*.h | grep -v '^[[:space:]]*#' | tr '\n' ' ' | grep -oE 'SBX_API[^;(]*\(' |
  sed -E 's/\($//; s/.*[^A-Za-z0-9_]([A-Za-z0-9_]+)$/\1/' | sort -u >"$tmp/headers"

if grep -v '^sbx_' "$tmp/exported"; then
  echo "FAIL: the library exports symbols not starting with sbx_ (above)"; fail=1
fi
if ! diff -u "$tmp/map" "$tmp/exported" >"$tmp/d1"; then
  echo "FAIL: lib/libsbxrun.map and the exported symbols differ:"; cat "$tmp/d1"; fail=1
fi
if ! diff -u "$tmp/headers" "$tmp/exported" >"$tmp/d2"; then
  echo "FAIL: SBX_API declarations in include/sbxrun and the exported symbols differ:"; cat "$tmp/d2"; fail=1
fi
if [ -s "$tmp/nodes" ] && ! diff -u "$tmp/mapnodes" "$tmp/nodes" >"$tmp/d3"; then
  echo "FAIL: version nodes in the library differ from the map:"; cat "$tmp/d3"; fail=1
fi
if ! readelf -d "$lib" | grep -q 'Library soname: \[libsbxrun.so.1\]'; then
  echo "FAIL: SONAME is not libsbxrun.so.1:"; readelf -d "$lib" | grep SONAME; fail=1
fi
# libarchive is loaded on first use (lib/client/archive_dl.h), never linked: linking
# it would put libxml2, ICU and libstdc++ into every client process.
if readelf -d "$lib" | grep -q 'NEEDED.*libarchive'; then
  echo "FAIL: the library links libarchive; it must load it with dlopen (lib/client/archive_dl.c)"; fail=1
fi
[ $fail = 0 ] && echo "OK: $(wc -l <"$tmp/exported") exported symbols, all sbx_, matching map and headers; SONAME libsbxrun.so.1"
exit $fail
