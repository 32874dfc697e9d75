#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Install into a temporary --destdir, then build a one-file consumer against the
# installed copy through pkg-config, linked shared and static, and run both.
#   check-consumer.sh SRCDIR BUILDDIR
set -u
[ $# -eq 2 ] || { echo "usage: $0 SRCDIR BUILDDIR" >&2; exit 2; }
src=$1 build=$2
CC=${CC:-cc}
dest=$(mktemp -d); trap 'rm -rf "$dest"' EXIT

meson install -C "$build" --destdir "$dest" --no-rebuild --quiet >"$dest.log" 2>&1 ||
  { cat "$dest.log"; rm -f "$dest.log"; echo "FAIL: meson install --destdir"; exit 1; }
rm -f "$dest.log"
pc=$(find "$dest" -name libsbxrun.pc | head -n1)
[ -n "$pc" ] || { echo "FAIL: libsbxrun.pc was not installed"; exit 1; }
export PKG_CONFIG_PATH=$(dirname "$pc") PKG_CONFIG_SYSROOT_DIR=$dest
pkg-config --exists --print-errors libsbxrun || { echo "FAIL: pkg-config cannot use $pc"; exit 1; }
so=$(find "$dest" -name libsbxrun.so.1 | head -n1)
[ -n "$so" ] || { echo "FAIL: libsbxrun.so.1 was not installed"; exit 1; }
libdir=$(dirname "$so")
cflags=$(pkg-config --cflags libsbxrun) libs=$(pkg-config --libs libsbxrun)
echo "pkg-config: cflags=[$cflags] libs=[$libs]"
want=$(find "$dest" -name version.h -exec sed -n 's/^#define SBX_VERSION_STRING "\(.*\)"/\1/p' {} \;)

# Shared: the installed .so, found at run time through LD_LIBRARY_PATH.
$CC -std=c99 -Wall -Werror "$src/examples/consumer/main.c" -o "$dest/consumer" $cflags $libs ||
  { echo "FAIL: consumer did not build against the shared library"; exit 1; }
out=$(LD_LIBRARY_PATH="$libdir" "$dest/consumer") || { echo "FAIL: consumer (shared) exited $?: $out"; exit 1; }
echo "shared: $out"
LD_LIBRARY_PATH="$libdir" ldd "$dest/consumer" | grep -q "libsbxrun.so.1 => $dest" ||
  { echo "FAIL: consumer did not load the installed libsbxrun.so.1"; exit 1; }

# Static: libsbxrun.a, plus the dependencies named in Requires.private and
# Libs.private linked as shared libraries (Debian ships no static archives for
# all of libcurl's own dependencies, so a fully static link is not the test).
requires=$(pkg-config --print-requires-private libsbxrun | awk '{print $1}')
private=$(pkg-config --static --libs-only-other libsbxrun)
static_libs="$libdir/libsbxrun.a $(pkg-config --libs $requires) $private"
echo "static link: $static_libs"
$CC -std=c99 -Wall -Werror "$src/examples/consumer/main.c" -o "$dest/consumer-static" $cflags $static_libs ||
  { echo "FAIL: consumer did not build against the static library"; exit 1; }
ldd "$dest/consumer-static" | grep -q libsbxrun && { echo "FAIL: static consumer still needs libsbxrun.so"; exit 1; }
out=$("$dest/consumer-static") || { echo "FAIL: consumer (static) exited $?: $out"; exit 1; }
echo "static: $out"
case "$out" in *"$want"*) ;; *) echo "FAIL: consumer printed '$out', expected version $want"; exit 1 ;; esac

# Python: the package meson installed, from site-packages under the prefix,
# loading the installed library through the system's search (here
# LD_LIBRARY_PATH standing in for ldconfig).
init=$(find "$dest" -path '*/sbxrun/__init__.py' | head -n1)
[ -n "$init" ] || { echo "FAIL: the Python package sbxrun was not installed"; exit 1; }
[ -f "$(dirname "$init")/py.typed" ] || { echo "FAIL: sbxrun/py.typed was not installed"; exit 1; }
out=$(cd / && env -u SBXRUN_LIBRARY PYTHONPATH="$(dirname "$(dirname "$init")")" LD_LIBRARY_PATH="$libdir" \
  python3 -c 'import sbxrun; print(sbxrun.__file__, sbxrun.library_version())') ||
  { echo "FAIL: the installed sbxrun package did not import: $out"; exit 1; }
echo "python: $out"
case "$out" in "$dest"*" $want") ;; *) echo "FAIL: python printed '$out', expected the installed package and $want"; exit 1 ;; esac
# And without PYTHONPATH: where meson put it is a directory the interpreter
# searches, whenever it searches one under the prefix (Debian's python3 for
# /usr/local and /usr; a python3 of its own prefix searches none there).
prefix=$(meson introspect "$build" --buildoptions | python3 -c 'import json, sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"))')
pkgdir=$(dirname "$(dirname "$init")"); pkgdir=${pkgdir#"$dest"}
searched=$(python3 -c 'import site, sys; p = sys.argv[1].rstrip("/") + "/"; print("\n".join(d for d in site.getsitepackages() if d.startswith(p)))' "$prefix")
if [ -n "$searched" ]; then
  printf '%s\n' "$searched" | grep -qxF "$pkgdir" ||
    { echo "FAIL: the package went to $pkgdir, which python3 does not search (it searches $(echo $searched) under $prefix)"; exit 1; }
  echo "python: installed into $pkgdir, on python3's search path"
else
  echo "python: python3 ($(command -v python3)) searches nothing under $prefix; the package is in $pkgdir (PYTHONPATH)"
fi
echo "OK: installed, found by pkg-config, consumer built and ran (shared and static), the Python package imported"
