#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# examples/demo-project on the host, as `sbxrun verify` would judge it: at its
# base the lint and `node --test` pass; with patches/break-test.patch a test
# fails; with patches/add-feature.patch everything passes. Each case runs on
# a fresh copy in a temporary directory; the source tree is never written.
#   check-demo-project.sh SRCDIR
set -u
[ $# -eq 1 ] || { echo "usage: $0 SRCDIR" >&2; exit 2; }
demo=$(cd "$1/examples/demo-project" 2>/dev/null && pwd) || { echo "FAIL: no $1/examples/demo-project"; exit 1; }
[ -f "$demo/package.json" ] || { echo "FAIL: no $demo/package.json"; exit 1; }
# No silent skip: scripts/dev installs nodejs and npm.
if ! command -v node >/dev/null; then
  echo "FAIL: node is needed to check examples/demo-project (scripts/dev deps, or apt-get install -y nodejs npm)"
  exit 1
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 18 ]; then
  echo "FAIL: node $(node --version) is too old; the demo project needs Node 18 or newer"
  exit 1
fi
command -v git >/dev/null || { echo "FAIL: git is needed (git apply)"; exit 1; }
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export HOME="$tmp" GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null

# copy NAME [PATCH]: the path of a fresh copy of the project with PATCH
# applied; a failure is reported here, and the caller counts it.
copy() {
  local dir=$tmp/$1
  mkdir "$dir" && cp -R "$demo/." "$dir/" || { echo "FAIL: copying $demo"; exit 1; }
  if [ -n "${2:-}" ]; then
    # From the project root: the patches' paths are relative to it.
    if ! (cd "$dir" && git apply --check "$demo/patches/$2" && git apply "$demo/patches/$2") >&2; then
      echo "FAIL: patches/$2 does not apply to the demo project" >&2; return 1
    fi
  fi
  echo "$dir"
}

# step NAME DIR WANT-EXIT CMD...: run CMD in DIR, expect its exit status.
step() {
  local name=$1 dir=$2 want=$3; shift 3
  (cd "$dir" && "$@") >"$tmp/out" 2>&1; local rc=$?
  if { [ "$want" = 0 ] && [ $rc -ne 0 ]; } || { [ "$want" != 0 ] && [ $rc -eq 0 ]; }; then
    echo "FAIL: $name: '$*' exited $rc, expected $( [ "$want" = 0 ] && echo 0 || echo 'non-zero')"
    sed 's/^/    /' "$tmp/out" | tail -n 40
    fail=1
    return 1
  fi
  echo "ok: $name: '$*' -> $rc"
}

# expect_out NAME TEXT: the last step's output holds TEXT.
expect_out() {
  grep -qF -- "$2" "$tmp/out" || { echo "FAIL: $1: no '$2' in:"; sed 's/^/    /' "$tmp/out" | tail -n 40; fail=1; }
}

echo "# node $(node --version), git $(git --version | cut -d' ' -f3)"

# The base: lint and tests pass, 6 tests.
if ! base=$(copy base); then fail=1; else
  step "base lint" "$base" 0 node scripts/lint.js
  step "base test" "$base" 0 node --test && expect_out "base test" "# pass 6"
  # The lint fails on what it is meant to catch.
  printf 'exports.x = 1; \n' >"$base/src/bad.js"
  printf 'console.log(1);\n' >>"$base/src/bad.js"
  step "lint catches problems" "$base" 1 node scripts/lint.js &&
    expect_out "lint catches problems" "src/bad.js:1: trailing whitespace" &&
    expect_out "lint catches problems" "src/bad.js:2: console.log in library code"
fi

# break-test.patch: the lint passes, exactly one test fails.
if ! broken=$(copy broken break-test.patch); then fail=1; else
  step "break-test lint" "$broken" 0 node scripts/lint.js
  step "break-test test" "$broken" 1 node --test && expect_out "break-test test" "# fail 1"
fi

# add-feature.patch: a new function and its test; everything passes, 7 tests.
if ! feature=$(copy feature add-feature.patch); then fail=1; else
  step "add-feature lint" "$feature" 0 node scripts/lint.js
  step "add-feature test" "$feature" 0 node --test && expect_out "add-feature test" "# pass 7"
  grep -q 'titleCase' "$feature/src/text.js" || { echo "FAIL: add-feature.patch added no titleCase"; fail=1; }
fi

# The two patches are what git makes: paths relative to the project root.
for p in "$demo"/patches/*.patch; do
  if grep -qE '^(\+\+\+|---) [ab]/(src|test)/' "$p" && ! grep -qE '^(\+\+\+|---) [ab]/examples/' "$p"; then
    echo "ok: $(basename "$p"): paths relative to the project root"
  else
    echo "FAIL: $(basename "$p"): its paths are not a/src/..., b/test/..."; fail=1
  fi
done

[ $fail -eq 0 ] && echo "PASS: examples/demo-project" || echo "FAIL: examples/demo-project"
exit $fail
