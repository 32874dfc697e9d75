#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# sbxrun policy check: exit codes, the stderr line, --json, --policy, --cwd, --job.
#   check-cli-policy.sh SBXRUN SRCDIR
set -u
[ $# -eq 2 ] || { echo "usage: $0 SBXRUN SRCDIR" >&2; exit 2; }
sbxrun=$1 src=$2
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# expect EXIT STDOUT-SUBSTRING STDERR-SUBSTRING ARGS...
expect() {
  local want=$1 out_want=$2 err_want=$3; shift 3
  "$sbxrun" policy "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  local out err; out=$(cat "$tmp/out"); err=$(cat "$tmp/err")
  if [ $rc -ne "$want" ]; then
    echo "FAIL: sbxrun policy $* exited $rc, expected $want (stdout '$out', stderr '$err')"; fail=1; return
  fi
  case "$out" in *"$out_want"*) ;; *) echo "FAIL: sbxrun policy $*: stdout '$out' lacks '$out_want'"; fail=1; return ;; esac
  case "$err" in *"$err_want"*) ;; *) echo "FAIL: sbxrun policy $*: stderr '$err' lacks '$err_want'"; fail=1; return ;; esac
  echo "ok: sbxrun policy $* -> $rc"
}

expect 0 "" "" check -- git status
expect 0 "" "" check -- ls -la
expect 3 "" "denied: program_path: " check -- /usr/bin/git status
expect 3 "" "denied: program_not_allowed: " check -- python3 -c 1
expect 2 "" "no PROGRAM to check" check --
expect 2 "" "no PROGRAM to check" check
expect 3 "" "denied: path_outside: " check -- cat ../../etc/passwd
expect 3 "" '"../../etc/passwd"' check -- cat ../../etc/passwd
expect 3 "" "denied: config: " check -- git -c core.pager=sh log
expect 3 "" "denied: package_exec: " check -- npx cowsay
# The program's own options are not sbxrun's.
expect 0 "" "" check -- ls --json
expect 3 "" "denied: script: " check -- node --json -e 1

# --cwd
expect 0 "" "" check --cwd /vercel/sandbox/sub -- cat ../a
expect 3 "" "denied: path_outside: " check --cwd /vercel/sandbox/sub -- cat ../../a
expect 3 "" "denied: cwd_outside: " check --cwd /tmp -- ls

# --json: one object on stdout, the envelope (sbxrun(1), JSON OUTPUT) with
# the decision as its result; the exit code unchanged.
expect 0 '"result": {' "" check --json -- git status
expect 3 '"path_outside"' "denied: path_outside" check --json -- cat /etc/passwd
json_is() { # EXIT PYTHON-ASSERTION ARGS...: the envelope e, its result d
  local want=$1 test=$2; shift 2
  "$sbxrun" policy "$@" >"$tmp/out" 2>/dev/null; local rc=$?
  if [ $rc -eq "$want" ] && python3 -c '
import json, sys
e = json.load(sys.stdin)
assert e["sbxrun"] == "policy" and e["exitCode"] == int(sys.argv[1]) and e["ok"] == (sys.argv[1] == "0"), e
d = e.get("result")
assert '"$test"', e
' "$want" <"$tmp/out"; then echo "ok: sbxrun policy $* (JSON)"
  else echo "FAIL: sbxrun policy $*: exit $rc, JSON: $(cat "$tmp/out")"; fail=1; fi
}
json_is 0 'd == {"decision": "allow", "reason": "allow", "message": ""}' check --json -- git status
json_is 3 'd["decision"] == "deny" and d["reason"] == "option" and "--pre" in d["message"]' check --json -- rg --pre cat x
printf '{"version": 1, "alow": {}}' >"$tmp/bad.json"
json_is 2 'e["error"]["what"] == "usage" and "alow: unknown key" in e["error"]["message"]' check --json --policy "$tmp/bad.json" -- ls
json_is 2 'e["error"]["status"] == "SBX_E_INVALID_ARG" and "--nope" in e["error"]["message"]' check --nope --json -- ls

# --policy and --job
cat >"$tmp/p.json" <<'EOF'
{"version": 1,
 "allow": {"packages": ["eslint@9.1.0"]},
 "deny": {"programs": ["sed"]},
 "jobTypes": {"verify.build": {"allow": {"programs": ["make"]}}}}
EOF
expect 0 "" "" check --policy "$tmp/p.json" -- npx eslint@9.1.0 .
expect 3 "" "denied: package_exec" check --policy "$tmp/p.json" -- npx eslint@9.2.0 .
expect 3 "" "denied: program_not_allowed" check --policy "$tmp/p.json" -- sed p f
expect 0 "" "" check --policy "$tmp/p.json" --job verify.build -- make all
expect 3 "" "denied: program_not_allowed" check --policy "$tmp/p.json" --job verify.test -- make all
expect 0 "" "" check --policy "$src/examples/policy.json" --job verify.lint -- bunx eslint@9.14.0 src

# npm, pnpm and yarn: allowed by default for deps.install, verify.* and
# db.migrate, not without a job type nor for repo.*; a file can deny them.
expect 0 "" "" check --job deps.install -- npm ci --ignore-scripts
expect 0 "" "" check --job verify.test -- npm test -- --coverage
expect 0 "" "" check --job deps.install -- pnpm install --frozen-lockfile
expect 0 "" "" check --job verify.build -- yarn build
expect 3 "" "denied: program_not_allowed" check -- npm ci
expect 3 "" "denied: program_not_allowed" check --job repo.clone -- yarn install
expect 3 "" 'denied: subcommand: npm install "lodash" (argument 2)' check --job deps.install -- npm install lodash
expect 3 "" "denied: option: npm -g (argument 1)" check --job deps.install -- npm -g ci
expect 3 "" "denied: path_outside" check --job deps.install -- npm ci --prefix /tmp
expect 3 "" "denied: subcommand" check --job verify.test -- yarn sh -c id
expect 3 "" "denied: package_exec" check --job verify.lint -- pnpm dlx eslint
printf '{"version": 1, "jobTypes": {"verify.test": {"deny": {"programs": ["npm"]}}}}' >"$tmp/nonpm.json"
expect 3 "" "denied: program_not_allowed" check --policy "$tmp/nonpm.json" --job verify.test -- npm test
expect 0 "" "" check --policy "$tmp/nonpm.json" --job verify.lint -- npm run lint
# The jobs' git commands.
expect 0 "" "" check --job repo.clone -- git clone --depth 1 --branch main https://github.com/o/r.git /vercel/sandbox/repo
expect 0 "" "" check --job repo.applyPatch -- git -C /vercel/sandbox/repo apply --index --whitespace=nowarn \
  /vercel/sandbox/.sbx/patch-1.diff

# Usage errors: 2, with a message.
printf '{"version": 1, "alow": {}}' >"$tmp/bad.json"
expect 2 "" "alow: unknown key" check --policy "$tmp/bad.json" -- ls
expect 2 "" "cannot open the policy file" check --policy "$tmp/missing.json" -- ls
expect 2 "" "unknown job type" check --job verify.nope -- ls
expect 2 "" "(known: repo.clone, repo.applyPatch, deps.install, verify.lint, verify.typecheck, verify.test, verify.build, db.migrate)" check --job install -- ls
expect 2 "" "unknown option '--frobnicate'" check --frobnicate -- ls
expect 2 "" "did you mean '--policy'" check --polcy x -- ls
expect 2 "" "option '--policy' needs a value" check --policy
expect 0 "usage: sbxrun policy check" "" check -h
expect 2 "" "unknown subcommand 'lint'" lint -- ls
expect 2 "" "which subcommand? (check)"
expect 0 "usage: sbxrun policy check" "" --help
expect 0 "usage: sbxrun policy check" "" check --help
exit $fail
