#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/verify-host.sh on examples/demo-project: the verdicts (base and
# add-feature pass, break-test fails with 1, a patch that does not apply is 2),
# the lines it prints, and that it leaves nothing behind. No registry: the demo
# has no lock file, so nothing is installed.
#   check-verify-host.sh SRCDIR
set -u
[ $# -eq 1 ] || { echo "usage: $0 SRCDIR" >&2; exit 2; }
src=$(cd "$1" && pwd) || exit 1
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "FAIL: node and npm are needed (scripts/dev deps, or apt-get install -y nodejs npm)"
  exit 1
fi
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export TMPDIR=$tmp HOME=$tmp npm_config_userconfig=/dev/null GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
demo=$src/examples/demo-project
vh=$src/bench/verify-host.sh

# expect NAME EXIT REGEX... -- ARGS...: exit status and a line matching each REGEX.
expect() {
  local name=$1 want=$2; shift 2
  local res=()
  while [ "$1" != -- ]; do res+=("$1"); shift; done
  shift
  bash "$vh" "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  if [ $rc -ne "$want" ]; then
    echo "FAIL: $name: exit $rc, expected $want"; sed 's/^/    /' "$tmp/out" "$tmp/err" | tail -n 30; fail=1; return
  fi
  for re in "${res[@]}"; do
    grep -qE "$re" "$tmp/out" || { echo "FAIL: $name: no line matching '$re' in:"; sed 's/^/    /' "$tmp/out"; fail=1; return; }
  done
  echo "ok: $name -> $rc"
}

# In a git work tree the files tracked at HEAD; in an export of the sources
# (git archive, as CI's fresh machine has) a plain copy.
if git -C "$demo" rev-parse --git-dir >/dev/null 2>&1; then
  from='git HEAD:examples/demo-project/'
else
  from='copy'
fi
expect base 0 "^prepare +[0-9]+ ms ok \\($from, patches: 0\\)\$" \
  '^lint +[0-9]+ ms ok$' '^test +[0-9]+ ms ok$' '^total +[0-9]+ ms pass$' -- "$demo"
grep -qE '^(install|typecheck|build) ' "$tmp/out" && { echo "FAIL: base: steps the demo does not have:"; cat "$tmp/out"; fail=1; }
expect break-test 1 '^lint +[0-9]+ ms ok$' '^test +[0-9]+ ms FAIL \(exit 1\)$' '^total +[0-9]+ ms fail$' -- \
  "$demo" "$demo/patches/break-test.patch"
expect add-feature 0 'patches: 1\)$' '^test +[0-9]+ ms ok$' '^total +[0-9]+ ms pass$' -- \
  "$demo" "$demo/patches/add-feature.patch"
expect "patch applied twice" 2 '^prepare +[0-9]+ ms FAIL \(patch\)$' -- \
  "$demo" "$demo/patches/add-feature.patch" "$demo/patches/add-feature.patch"
# A lint failure stops the run: later steps are skipped.
mkdir "$tmp/proj" && cp -R "$demo/." "$tmp/proj/" && printf 'console.log(1);\n' >"$tmp/proj/src/bad.js"
expect "not a git tree, lint fails" 1 '^prepare +[0-9]+ ms ok \(copy, patches: 0\)$' '^lint +[0-9]+ ms FAIL' \
  '^test +0 ms skipped$' -- "$tmp/proj"
expect "usage" 2 -- 
leftover=$(find "$tmp" -maxdepth 1 -name 'verify-host.*')
[ -z "$leftover" ] || { echo "FAIL: left behind: $leftover"; fail=1; }

[ $fail -eq 0 ] && echo "PASS: bench/verify-host.sh" || echo "FAIL: bench/verify-host.sh"
exit $fail
