#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The examples as a downstream project builds them: `meson install --destdir`,
# then pkg-config and nothing else, each as C11 and as C++17 with -Wall
# -Wextra -Werror; then run against a real sbxd. And the installed sbxrun
# runs from its prefix without LD_LIBRARY_PATH (its install rpath).
#   check-examples.sh SRCDIR BUILDDIR SBXD
set -u
[ $# -eq 3 ] || { echo "usage: $0 SRCDIR BUILDDIR SBXD" >&2; exit 2; }
src=$1 build=$2 sbxd_exe=$3
CC=${CC:-cc} CXX=${CXX:-c++}
dest=$(mktemp -d)
chmod 711 "$dest" # sandboxes pass through it to sbxd's state directory
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$dest"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; [ -f "$dest/sbxd.log" ] && tail -20 "$dest/sbxd.log"; exit 1; }

meson install -C "$build" --destdir "$dest/root" --no-rebuild --quiet >"$dest/install.log" 2>&1 ||
  { cat "$dest/install.log"; fail "meson install --destdir"; }
pc=$(find "$dest/root" -name libsbxrun.pc | head -n1)
[ -n "$pc" ] || fail "libsbxrun.pc was not installed"
export PKG_CONFIG_PATH=$(dirname "$pc") PKG_CONFIG_SYSROOT_DIR=$dest/root
flags=$(pkg-config --cflags --libs libsbxrun) || fail "pkg-config libsbxrun"
libdir=$(dirname "$(find "$dest/root" -name libsbxrun.so.1 | head -n1)")

for ex in command verify epoll; do
  $CC -std=c11 -Wall -Wextra -Werror "$src/examples/$ex.c" -o "$dest/$ex-c" $flags ||
    fail "examples/$ex.c did not build as C11 against the installed library"
  $CXX -std=c++17 -Wall -Wextra -Werror -x c++ "$src/examples/$ex.c" -x none -o "$dest/$ex-cxx" $flags ||
    fail "examples/$ex.c did not build as C++17 against the installed library"
done
# doc/c.md's 30-line program, as a reader would copy it.
awk '/^## The 30-line program/ {p = 1} p && /^```c$/ {on = 1; next} on && /^```$/ {exit} on' \
  "$src/doc/c.md" >"$dest/doc30.c"
[ -s "$dest/doc30.c" ] || fail "doc/c.md has no 30-line program"
$CC -std=c11 -Wall -Wextra -Werror "$dest/doc30.c" -o "$dest/doc30-c" $flags ||
  fail "doc/c.md's program did not build as C11 against the installed library"
$CXX -std=c++17 -Wall -Wextra -Werror -x c++ "$dest/doc30.c" -x none -o "$dest/doc30-cxx" $flags ||
  fail "doc/c.md's program did not build as C++17 against the installed library"
echo "built: command, verify, epoll and doc/c.md's program as C11 and C++17"

# The installed sbxrun, run from its prefix as installed: its rpath finds
# the installed library (never the build tree's).
sbxrun=$(find "$dest/root" -path '*/bin/sbxrun' | head -n1)
if [ -n "$sbxrun" ]; then
  out=$(env -u LD_LIBRARY_PATH "$sbxrun" --version 2>&1) || fail "the installed sbxrun did not run: $out"
  env -u LD_LIBRARY_PATH ldd "$sbxrun" | grep -q "libsbxrun.so.1 => $dest/root" ||
    fail "the installed sbxrun did not load the installed libsbxrun.so.1: $(ldd "$sbxrun" | grep sbxrun)"
  echo "installed sbxrun: $out"
fi

# sbxd, with its token beside the socket, where the client looks for it.
mkdir -p "$dest/state"
"$sbxd_exe" --listen "unix:$dest/state/sock" --state-dir "$dest/state" >"$dest/sbxd.out" 2>"$dest/sbxd.log" &
pid=$!
for _ in $(seq 100); do grep -q "listening" "$dest/sbxd.out" 2>/dev/null && break; sleep 0.1; done
grep -q "listening" "$dest/sbxd.out" || fail "sbxd did not start"
export SBXRUN_ENDPOINT=unix:$dest/state/sock LD_LIBRARY_PATH=$libdir

out=$("$dest/doc30-c") || fail "doc/c.md's program exited $?: $out"
[ "$out" = "hello from Linux" ] || fail "doc/c.md's program printed '$out'"
out=$("$dest/doc30-cxx") || fail "doc/c.md's program (C++) exited $?: $out"
out=$("$dest/command-c" sh -c 'echo hello from the sandbox') || fail "command (C) exited $?: $out"
[ "$out" = "hello from the sandbox" ] || fail "command printed '$out'"
"$dest/command-cxx" sh -c 'exit 7'
[ $? -eq 7 ] || fail "command (C++) did not exit with the command's status 7"
out=$("$dest/epoll-cxx" 8) || fail "epoll exited $?: $out"
echo "$out" | grep -q "epoll: 8 of 8 jobs passed" || fail "epoll printed: $out"
out=$("$dest/verify-c" "$src/examples/demo-project" "$dest/run.jsonl") || fail "verify exited $?: $out"
echo "$out" | grep -q "verify: passed (lint passed, test passed)" || fail "verify printed: $out"
echo "$out" | grep -q "transcript .* holds" || fail "verify did not check its transcript: $out"
echo "ran: doc/c.md's program (C and C++), command (C and C++), epoll (8 jobs, one thread), verify (the demo project, its transcript)"
echo "OK: the examples build downstream as C11 and C++17 and run; the installed sbxrun needs no LD_LIBRARY_PATH"
