#!/bin/sh
# SPDX-License-Identifier: MIT
# Run by `meson install` (not with --destdir): refresh the dynamic linker's
# cache, as a distribution package's postinst does, so that programs and the
# Python and Node packages (which load libsbxrun.so.1 by name) find the
# library just installed. Without root, or when the linker does not search
# the library's directory, say what to do instead.
#   ldconfig-after-install.sh LIBDIR   (relative to the prefix, or absolute)
libdir=$1
case "$libdir" in /*) dir=$libdir ;; *) dir=${MESON_INSTALL_PREFIX:-/usr/local}/$libdir ;; esac
PATH=$PATH:/sbin:/usr/sbin
if [ "$(id -u)" != 0 ] || ! command -v ldconfig >/dev/null 2>&1; then
  echo "libsbxrun: run 'ldconfig' as root (or set LD_LIBRARY_PATH=$dir) for programs to find libsbxrun.so.1"
  exit 0
fi
ldconfig || exit 0
if ! ldconfig -p | grep -qF "=> $dir/libsbxrun.so.1"; then
  echo "libsbxrun: the dynamic linker does not search $dir: add it to a file in /etc/ld.so.conf.d/ and run"
  echo "           ldconfig, or set LD_LIBRARY_PATH=$dir, for programs to find libsbxrun.so.1"
fi
exit 0
