#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The host baseline for `sbxrun verify`: the same steps, run directly on this
# machine, each timed.
#
#   bench/verify-host.sh [--keep] [--scripts] [--keep-going] DIR [PATCH...]
#
# 1. prepare: DIR's files into a temporary directory: the files tracked at git
#    HEAD when DIR is in a git work tree (what verify uploads; uncommitted
#    changes are left out), else a plain copy; then each PATCH applied in
#    order with `git apply` from the project root (paths relative to DIR).
# 2. install, when there is a lock file, with the package manager it names:
#    package-lock.json or npm-shrinkwrap.json: npm ci; yarn.lock: yarn install
#    --frozen-lockfile; pnpm-lock.yaml: pnpm install --frozen-lockfile. Install
#    scripts are off (--ignore-scripts) unless --scripts. No lock file: no
#    install step (nothing is installed) and the scripts run with npm run.
# 3. lint, typecheck, test, build: each package.json script of that name that
#    exists, in that order, with `<manager> run <name>`.
#
# One line per step on stdout: `<step> <ms> ms <ok|FAIL (exit N)|skipped>`,
# then `total <ms> ms <pass|fail>`. A step's own output goes to a log in the
# temporary directory, whose last lines are shown on stderr when it fails.
# The first failure ends the run (later steps print `skipped`) unless
# --keep-going. Exit status: 0 every step passed, 1 a step failed, 2 usage or
# preparation error (a patch that does not apply). The temporary directory is
# removed unless --keep. The environment passes through (npm_config_registry
# and the like).
set -uo pipefail

usage() { sed -n '5p' "$0" | sed 's/^# *//' >&2; exit 2; }
keep=0 scripts=0 keep_going=0
while [ $# -gt 0 ]; do
  case "$1" in
    --keep) keep=1 ;;
    --scripts) scripts=1 ;;
    --keep-going) keep_going=1 ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed -n 's/^# \{0,1\}//p' >&2; exit 0 ;;
    --) shift; break ;;
    -*) echo "verify-host.sh: unknown option $1" >&2; usage ;;
    *) break ;;
  esac
  shift
done
[ $# -ge 1 ] || usage
src=$1; shift
[ -d "$src" ] || { echo "verify-host.sh: $src is not a directory" >&2; exit 2; }
patches=()
for p in "$@"; do
  [ -f "$p" ] || { echo "verify-host.sh: no patch $p" >&2; exit 2; }
  patches+=("$(cd "$(dirname "$p")" && pwd)/$(basename "$p")")
done
command -v git >/dev/null || { echo "verify-host.sh: git is needed" >&2; exit 2; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/verify-host.XXXXXX")
work=$tmp/project
logs=$tmp/logs
mkdir -p "$work" "$logs"
cleanup() { if [ $keep = 1 ]; then echo "# kept $tmp" >&2; else rm -rf "$tmp"; fi; }
trap cleanup EXIT

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
failed=0

# report STEP MS STATUS
report() { printf '%-10s %6d ms %s\n' "$1" "$2" "$3"; }

# ---- prepare ----
t_all=$(now_ms)
t0=$t_all
if top=$(git -C "$src" rev-parse --show-toplevel 2>/dev/null) && git -C "$src" rev-parse -q --verify HEAD >/dev/null; then
  prefix=$(git -C "$src" rev-parse --show-prefix)
  how="git HEAD:${prefix:-.}"
  if ! git -C "$top" archive --format=tar "HEAD:$prefix" | tar -x -C "$work"; then
    echo "verify-host.sh: cannot read $src at HEAD" >&2; exit 2
  fi
else
  how="copy"
  cp -R "$src/." "$work/" || { echo "verify-host.sh: cannot copy $src" >&2; exit 2; }
fi
for p in "${patches[@]}"; do
  # GIT_CEILING_DIRECTORIES: git apply must not take an enclosing repository
  # (TMPDIR inside a work tree) as the root the paths are relative to.
  if ! (cd "$work" && GIT_CEILING_DIRECTORIES=$tmp git apply --check "$p" && GIT_CEILING_DIRECTORIES=$tmp git apply "$p") \
       >"$logs/prepare.log" 2>&1; then
    cat "$logs/prepare.log" >&2
    echo "verify-host.sh: $(basename "$p") does not apply to $src ($how)" >&2
    report prepare $(( $(now_ms) - t0 )) "FAIL (patch)"
    exit 2
  fi
done
report prepare $(( $(now_ms) - t0 )) "ok ($how, patches: ${#patches[@]})"

# ---- the package manager and the steps ----
if [ ! -f "$work/package.json" ]; then
  echo "verify-host.sh: no package.json in $src: nothing to run" >&2
  exit 2
fi
pm=npm install=()
if [ -f "$work/package-lock.json" ] || [ -f "$work/npm-shrinkwrap.json" ]; then
  install=(npm ci --no-audit --no-fund)
elif [ -f "$work/pnpm-lock.yaml" ]; then
  pm=pnpm install=(pnpm install --frozen-lockfile)
elif [ -f "$work/yarn.lock" ]; then
  pm=yarn install=(yarn install --frozen-lockfile)
fi
[ $scripts = 1 ] || [ ${#install[@]} -eq 0 ] || install+=(--ignore-scripts)
command -v "$pm" >/dev/null || { echo "verify-host.sh: $pm is needed for $src" >&2; exit 2; }

# The steps' scripts that package.json defines, read once (untimed, as verify
# reads them before it starts a sandbox).
steps=$(node -e 'const s = require(process.argv[1]).scripts || {};
  console.log(["lint", "typecheck", "test", "build"].filter((n) => typeof s[n] === "string").join(" "))' \
  "$work/package.json") || { echo "verify-host.sh: cannot read $src/package.json" >&2; exit 2; }

# run STEP CMD...: time CMD in the project; report it.
run() {
  local step=$1 t0 rc; shift
  if [ $failed = 1 ] && [ $keep_going = 0 ]; then
    report "$step" 0 skipped
    return
  fi
  t0=$(now_ms)
  (cd "$work" && "$@") >"$logs/$step.log" 2>&1 </dev/null
  rc=$?
  if [ $rc -eq 0 ]; then
    report "$step" $(( $(now_ms) - t0 )) ok
  else
    report "$step" $(( $(now_ms) - t0 )) "FAIL (exit $rc)"
    echo "# $step: $* exited $rc; its last lines:" >&2
    tail -n 30 "$logs/$step.log" | sed 's/^/#   /' >&2
    failed=1
  fi
}

if [ ${#install[@]} -gt 0 ]; then
  run install "${install[@]}"
fi
for s in $steps; do
  run "$s" "$pm" run "$s"
done
report total $(( $(now_ms) - t_all )) "$([ $failed = 0 ] && echo pass || echo fail)"
exit $failed
