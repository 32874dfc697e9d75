#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The sbxrun command's dispatch and exit codes (doc/man/sbxrun.1).
#   check-cli.sh SBXRUN
set -u
[ $# -eq 1 ] || { echo "usage: $0 SBXRUN" >&2; exit 2; }
sbxrun=$1
fail=0
expect() { # exit-code, stdout-substring, args...
  local want=$1 text=$2; shift 2
  out=$("$sbxrun" "$@" 2>&1); rc=$?
  if [ $rc -ne "$want" ]; then echo "FAIL: sbxrun $* exited $rc, expected $want: $out"; fail=1; return; fi
  case "$out" in *"$text"*) echo "ok: sbxrun $* -> $rc" ;;
    *) echo "FAIL: sbxrun $* printed '$out', expected '$text'"; fail=1 ;; esac
}
expect 0 "libsbxrun " version
expect 0 "sbxrun " --version
expect 0 "commands:" --help
expect 0 "commands:" help
expect 0 "usage: sbxrun version" help version
expect 0 "usage: sbxrun version" version --help
expect 2 "usage:"
expect 2 "unknown command 'frobnicate'" frobnicate
expect 2 "unknown command 'nope'" help nope
expect 2 "unexpected argument 'extra'" version extra
exit $fail
