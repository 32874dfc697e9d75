#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Proves the ABI gate itself: builds a throwaway library in versions that are
# compatible (a function added, a status code appended) and incompatible (a
# function removed, a parameter or return type changed) and runs
# check-abi.sh on each against the first version's baseline.
#   check-abi-gate.sh CHECK_ABI_SCRIPT
set -u
[ $# -eq 1 ] || { echo "usage: $0 CHECK_ABI_SCRIPT" >&2; exit 2; }
check=$1
CC=${CC:-cc}
command -v abidiff >/dev/null || { echo "SKIP: abidiff not found (apt-get install -y abigail-tools)"; exit 77; }
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
mkdir -p "$t/src/abi"
cat >"$t/map" <<'MAP'
SBXRUN_1.0 { global: sbx_*; local: *; };
MAP

build() { # name, C source
  printf '%s\n' "$2" >"$t/$1.c"
  $CC -g -O0 -shared -fPIC -fvisibility=hidden -Wl,--version-script="$t/map" \
    -Wl,-soname,libsbxrun.so.1 -o "$t/$1.so" "$t/$1.c" || { echo "FAIL: cannot build $1"; exit 1; }
}
api='#define A __attribute__((visibility("default")))
#include <stdint.h>'
build base "$api
typedef enum { S_OK = 0, S_BAD = 1 } st;
A st sbx_f(int x) { return x ? S_BAD : S_OK; }
A uint32_t sbx_g(void) { return 1; }"
build added "$api
typedef enum { S_OK = 0, S_BAD = 1, S_NEW = 2 } st;
A st sbx_f(int x) { return x ? S_BAD : S_OK; }
A uint32_t sbx_g(void) { return 1; }
A int sbx_h(void) { return S_NEW; }"
build removed "$api
typedef enum { S_OK = 0, S_BAD = 1 } st;
A st sbx_f(int x) { return x ? S_BAD : S_OK; }"
build param "$api
typedef enum { S_OK = 0, S_BAD = 1 } st;
A st sbx_f(int64_t x, int y) { return x + y ? S_BAD : S_OK; }
A uint32_t sbx_g(void) { return 1; }"
build ret "$api
typedef enum { S_OK = 0, S_BAD = 1 } st;
A st sbx_f(int x) { return x ? S_BAD : S_OK; }
A uint64_t sbx_g(void) { return 1; }"

bash "$check" --update "$t/src" "$t/base.so" >/dev/null || { echo "FAIL: could not write a baseline"; exit 1; }
fail=0
expect() { # ok|fail, variant
  bash "$check" "$t/src" "$t/$2.so" >"$t/$2.out" 2>&1
  rc=$?
  if { [ "$1" = ok ] && [ $rc -ne 0 ]; } || { [ "$1" = fail ] && [ $rc -ne 1 ]; }; then
    echo "FAIL: variant '$2' should be $1 but check-abi.sh exited $rc:"; cat "$t/$2.out"; fail=1
  else
    echo "ok: '$2' judged $1"
  fi
}
expect ok base
expect ok added
expect fail removed
expect fail param
expect fail ret
exit $fail
