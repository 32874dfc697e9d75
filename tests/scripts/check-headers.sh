#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every public header must compile on its own as C99 -pedantic and as C++11
# -pedantic with warnings as errors, and include nothing but <stddef.h>,
# <stdint.h> and other <sbxrun/...> headers.
#   check-headers.sh SRCDIR BUILD_INCLUDE_DIR
set -u
[ $# -eq 2 ] || { echo "usage: $0 SRCDIR BUILD_INCLUDE_DIR" >&2; exit 2; }
src=$1 gen=$2
CC=${CC:-cc} CXX=${CXX:-c++}
fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
flags="-I$src/include -I$gen -Wall -Wextra -Werror -pedantic -fsyntax-only"
command -v "$CXX" >/dev/null || { echo "FAIL: no C++ compiler ($CXX): apt-get install -y g++"; exit 1; }

for h in "$src"/include/sbxrun/*.h "$gen"/sbxrun/version.h; do
  name=$(basename "$h")
  bad=$(grep -E '^[[:space:]]*#[[:space:]]*include' "$h" | grep -vE '<(stddef\.h|stdint\.h|sbxrun/[a-z_]+\.h)>')
  if [ -n "$bad" ]; then echo "FAIL: $name includes more than the allowed headers: $bad"; fail=1; fi
  printf '#include <sbxrun/%s>\n#include <sbxrun/%s>\nint sbx_header_test_%s;\n' "$name" "$name" "${name%.h}" >"$tmp/t.c"
  cp "$tmp/t.c" "$tmp/t.cpp"
  $CC -std=c99 $flags -Wstrict-prototypes "$tmp/t.c" || { echo "FAIL: $name as C99"; fail=1; }
  $CC -std=c11 $flags "$tmp/t.c" || { echo "FAIL: $name as C11"; fail=1; }
  $CXX -std=c++11 $flags "$tmp/t.cpp" || { echo "FAIL: $name as C++11"; fail=1; }
done
# doc/api-conventions.md, "Types": no unsigned, long, short, bool, off_t,
# structs by value or varargs in a public function's signature (counts are
# size_t, booleans int). Each SBX_API declaration is read up to its ';'.
bad=$(awk '/SBX_API/ { d = ""; on = 1 } on { d = d " " $0 } on && /;/ { print FILENAME ": " d; on = 0 }' \
        "$src"/include/sbxrun/*.h |
      grep -E '\<(unsigned|long|short|bool|_Bool|off_t)\>|\.\.\.|[(,][[:space:]]*(const[[:space:]]+)?struct[[:space:]]+[a-z_]+[[:space:]]+[a-z_]+[[:space:]]*[,)]' |
      sed -E 's/[[:space:]]+/ /g')
if [ -n "$bad" ]; then echo "FAIL: a type doc/api-conventions.md rules out in a public function:"; echo "$bad"; fail=1; fi
[ $fail = 0 ] && echo "OK: every public header compiles alone as C99, C11 and C++11 (-pedantic -Werror)"
exit $fail
